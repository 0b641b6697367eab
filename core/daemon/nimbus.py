"""Nimbus (``squall nimbus``): accepts topologies, schedules them, watches them run.

Every nimbus registers ``/nimbuses/<host:port>`` and contends for ``/leader-lock``. Only the
leader accepts writes (submit, kill, activate, deactivate, rebalance) and schedules; a standby
answers reads and refuses writes with an error naming the leader (the client then goes there).
Packages live in ``storm.local.dir/nimbus/stormdist/<topology-id>/``; a standby downloads every
package it lacks from the leader, so it can take over. A restarted nimbus resumes from ZooKeeper
and its local directory.

Threads: gRPC handler threads call the public methods; one monitor thread runs the periodic
work (every ``nimbus.monitor.freq.secs`` and when a watch fires); one election thread waits for
leadership. Writes and scheduling are serialized by one lock.
"""
from __future__ import annotations

import getpass
import logging
import re
import shutil
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from squall import drivers
from squall.api.topology import Topology
from squall.daemon import packaging
from squall.daemon.nimbus_schedule import BeatTracker, rebalance_shortfall, schedule_pass
from squall.errors import (
    AlreadyAliveError,
    NotAliveError,
    SquallError,
    StateError,
    TopologyError,
)
from squall.state.cluster_state import NIMBUSES, ClusterState

log = logging.getLogger(__name__)
NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
#: conf keys a submitted topology may not set (they belong to the machines running it)
DAEMON_PREFIXES = ("storm.", "nimbus.", "supervisor.", "worker.", "ui.", "squall.state")
VALIDATE_TIMEOUT_SECS = 120


class NotLeaderError(SquallError):
    """This nimbus is a standby; ``leader`` is the leader's ``host:port`` ('' if unknown)."""

    def __init__(self, leader: str) -> None:
        self.leader = leader
        super().__init__(f"this nimbus is not the leader; the leader is {leader or 'unknown'}")


def topology_conf(submitted: dict[str, Any]) -> dict[str, Any]:
    """The part of a submitted conf a topology may set (daemon keys dropped)."""
    return {k: v for k, v in submitted.items() if not k.startswith(DAEMON_PREFIXES)}


class Nimbus:
    """The nimbus daemon (see the module docstring). ``start()`` then ``stop()``."""

    def __init__(self, conf: dict[str, Any]) -> None:
        self.conf = dict(conf)
        local = Path(str(conf.get("storm.local.dir") or "squall-local")).resolve()
        self.local_dir = local / "nimbus"
        self.stormdist = self.local_dir / "stormdist"
        self.beats = BeatTracker()
        self.lock = threading.RLock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        #: topologies rebalanced since the last scheduling pass -> their shape before
        self._fresh: dict[str, dict[str, Any]] = {}
        self._topologies: dict[str, tuple[dict[str, Any], Topology]] = {}
        self._threads: list[threading.Thread] = []
        self.server: Any = None
        self.store: Any = None
        self.port = 0
        self.address = ""
        self.start_time = time.time()

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self) -> None:
        """Connect to the state store, serve the API, register and contend for leadership.
        Raises StateError (store unreachable) or SquallError (port in use)."""
        self.stormdist.mkdir(parents=True, exist_ok=True)
        (self.local_dir / "inbox").mkdir(parents=True, exist_ok=True)
        self.store = drivers.driver("state", self.conf)
        self.store.start()
        self.state = ClusterState(self.store, self.conf)
        self.state.setup()
        self.scheduler = drivers.driver("scheduler", self.conf)
        self._start_server()
        self.store.delete(f"{NIMBUSES}/{self.address}")   # a node left by a previous life
        self.state.register_nimbus(self.address, {"host": self.address.rsplit(":", 1)[0],
                                                  "port": self.port,
                                                  "time_secs": int(self.start_time)})
        self.election = self.state.leader_election(self.address)
        self.store.add_reconnect_listener(self._wake.set)
        for target, name in ((self._election_loop, "election"), (self._monitor_loop, "monitor")):
            t = threading.Thread(target=target, name=f"squall-nimbus-{name}", daemon=True)
            t.start()
            self._threads.append(t)
        log.info("nimbus %s started (local dir %s)", self.address, self.local_dir)

    def _start_server(self) -> None:
        from concurrent import futures

        import grpc

        from squall.daemon._proto import nimbus_pb2_grpc
        from squall.daemon.nimbus_service import NimbusService
        host = str(self.conf.get("nimbus.host") or "127.0.0.1")
        wanted = int(self.conf.get("nimbus.port") or 0)
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=8,
                                                             thread_name_prefix="squall-nimbus-rpc"),
                                  options=[("grpc.so_reuseport", 0)])
        nimbus_pb2_grpc.add_NimbusServicer_to_server(NimbusService(self), self.server)
        try:
            self.port = self.server.add_insecure_port(f"{host}:{wanted}")
        except RuntimeError as exc:
            raise SquallError(f"nimbus cannot listen on {host}:{wanted}: {exc}") from exc
        if not self.port:
            raise SquallError(f"nimbus cannot listen on {host}:{wanted} (port in use?)")
        self.server.start()
        advertised = host
        if host in ("0.0.0.0", "::", ""):
            import socket
            advertised = str(self.conf.get("storm.local.hostname") or socket.gethostname())
        self.address = f"{advertised}:{self.port}"

    def stop(self) -> None:
        """Stop serving, give up leadership and disconnect. Idempotent."""
        self._stop.set()
        self._wake.set()
        if getattr(self, "election", None) is not None:
            self.election.cancel()
        if self.server is not None:
            self.server.stop(grace=1).wait(5)
        if self.store is not None:
            self.store.close()
        for t in self._threads:
            t.join(5)

    def wait(self) -> None:
        """Block until :meth:`request_stop` or :meth:`stop` (from another thread)."""
        while not self._stop.wait(1.0):
            pass

    def request_stop(self) -> None:
        """Make :meth:`wait` return and the loops end (safe from a signal handler); call
        :meth:`stop` after it to shut the server down and disconnect."""
        self._stop.set()

    # -- leadership ---------------------------------------------------------------------------
    def _election_loop(self) -> None:
        while not self._stop.is_set():
            try:
                if not self.election.run(self._lead):
                    return
            except StateError as exc:
                log.warning("leader election failed: %s; retrying", exc)
                self._stop.wait(1.0)

    def _lead(self) -> None:
        log.info("nimbus %s is the leader", self.address)
        self._wake.set()
        while not self._stop.is_set() and self.election.is_leader:
            self._stop.wait(0.2)
        log.info("nimbus %s is no longer the leader", self.address)

    @property
    def is_leader(self) -> bool:
        return bool(getattr(self, "election", None)) and self.election.is_leader

    def leader_address(self) -> str:
        try:
            found = self.election.contenders()
        except StateError:
            return ""
        return found[0] if found else ""

    def require_leader(self) -> None:
        if not self.is_leader:
            raise NotLeaderError(self.leader_address())

    # -- topologies on disk -------------------------------------------------------------------
    def topology_of(self, topology_id: str) -> tuple[dict[str, Any], Topology] | None:
        """``(merged conf, Topology without resolved classes)`` from the local package."""
        cached = self._topologies.get(topology_id)
        if cached is not None:
            return cached
        directory = self.stormdist / topology_id
        if not packaging.has_package(directory):
            log.error("no local package for topology %s in %s", topology_id, directory)
            return None
        tconf = packaging.read_json(directory / packaging.CONF_FILE)
        topology = Topology.from_json(packaging.read_json(directory / packaging.TOPOLOGY_FILE),
                                      resolve=False)
        loaded = self._topologies[topology_id] = ({**self.conf, **tconf}, topology)
        return loaded

    def _next_counter(self) -> int:
        path = self.local_dir / "counter"
        try:
            counter = int(path.read_text())
        except (OSError, ValueError):
            counter = 0
        for tid in self.state.topology_ids():
            parts = tid.rsplit("-", 2)
            if len(parts) == 3 and parts[1].isdigit():
                counter = max(counter, int(parts[1]))
        counter += 1
        path.write_text(str(counter))
        return counter

    # -- the API (gRPC handler threads) -------------------------------------------------------
    def submit(self, name: str, conf: dict[str, Any], topology_json: dict[str, Any],
               code: bytes) -> str:
        """Validate and store a topology; returns its id. AlreadyAliveError, TopologyError."""
        from squall import config
        from squall.runtime.system import add_system_components
        self.require_leader()
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise TopologyError(f"invalid topology name {name!r}: use letters, digits, "
                                "'_', '.' and '-'")
        tconf = {**topology_conf(conf), "topology.name": name}
        merged = {**self.conf, **tconf}
        config.validate(merged, warn=False)
        try:
            topology = Topology.from_json(topology_json, resolve=False)
        except (KeyError, TypeError, ValueError) as exc:
            raise TopologyError(f"malformed topology description: {exc!r}") from exc
        full = add_system_components(topology, merged)
        inbox = self.local_dir / "inbox" / uuid.uuid4().hex
        inbox.mkdir(parents=True)
        try:
            (inbox / packaging.CODE_FILE).write_bytes(code)
            packaging.write_json(inbox / packaging.CONF_FILE, tconf)
            packaging.write_json(inbox / packaging.TOPOLOGY_FILE, full.to_json())
            packaging.extract_code(inbox / packaging.CODE_FILE, inbox / packaging.CODE_DIR)
            self._validate(inbox)
            with self.lock:
                self.require_leader()
                if self.state.find_topology_id(name) is not None:
                    raise AlreadyAliveError(f"topology {name!r} is already running")
                tid = f"{name}-{self._next_counter()}-{int(time.time())}"
                shutil.rmtree(self.stormdist / tid, ignore_errors=True)
                inbox.rename(self.stormdist / tid)
                workers = int(merged.get("topology.workers") or 1)
                self.state.set_storm(tid, {
                    "name": name, "launch_time": int(time.time()), "status": "active",
                    "status_reason": "", "num_workers": workers, "owner": _owner(),
                    "component_executors": {c: s.parallelism
                                            for c, s in sorted(full.components.items())}})
        finally:
            shutil.rmtree(inbox, ignore_errors=True)
        from squall.plugin_manager import get_plugin_manager
        get_plugin_manager().hook.squall_topology_submitted(name=name, topology_id=tid,
                                                            conf=merged)
        log.info("submitted topology %s", tid)
        self._wake.set()
        return tid

    def _validate(self, directory: Path) -> None:
        """Load the package in a subprocess; TopologyError with its one-line complaint."""
        from squall.daemon.validate import PREFIX
        try:
            proc = subprocess.run([sys.executable, "-m", "squall.daemon.validate", str(directory)],
                                  cwd=str(directory), capture_output=True, text=True,
                                  timeout=VALIDATE_TIMEOUT_SECS, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            raise TopologyError(f"loading the topology took more than {VALIDATE_TIMEOUT_SECS} s"
                                ) from exc
        if proc.returncode != 0:
            lines = [ln for ln in proc.stderr.splitlines() if ln.startswith(PREFIX)]
            msg = lines[-1][len(PREFIX):] if lines else (proc.stderr.strip().splitlines() or
                                                        ["the topology could not be loaded"])[-1]
            raise TopologyError(msg)

    def _live(self, name: str) -> tuple[str, dict[str, Any]]:
        tid = self.state.find_topology_id(name)
        base = self.state.get_storm(tid) if tid else None
        if tid is None or base is None:
            running = sorted(b.get("name", "?") for b in self.state.storms().values()
                             if b.get("status") != "killed")
            raise NotAliveError(f"no topology named {name!r} is running; running: "
                                f"{', '.join(running) or 'none'}")
        return tid, base

    def kill(self, name: str, wait_secs: float | None = None) -> None:
        """Deactivate now; remove everything after ``wait_secs`` (default: the topology's
        ``topology.message.timeout.secs``)."""
        self.require_leader()
        with self.lock:
            tid, base = self._live(name)
            if wait_secs is None:
                loaded = self.topology_of(tid)
                conf = loaded[0] if loaded else self.conf
                wait_secs = float(conf.get("topology.message.timeout.secs") or 30)
            self.state.update_storm(tid, status="killed",
                                    kill_time=time.time() + max(0.0, float(wait_secs)))
        log.info("killing topology %s in %.0f s", tid, wait_secs)
        self._wake.set()

    def set_active(self, name: str, active: bool) -> None:
        self.require_leader()
        with self.lock:
            tid, base = self._live(name)
            if base.get("status") == "rebalancing":
                raise TopologyError(f"topology {name!r} is rebalancing; try again after it")
            status = "active" if active else "inactive"
            if base.get("status") == "pending" and active:
                return
            self.state.update_storm(tid, status=status)

    def rebalance(self, name: str, wait_secs: float | None = None, num_workers: int | None = None,
                  executors: dict[str, int] | None = None) -> None:
        """Deactivate, wait, re-place with new parallelism / workers, restore the status.

        The scheduler keeps the surviving placement and moves as few executors as it can. A
        rebalance of a running topology that would not fit on the cluster as it is now is
        refused with a TopologyError naming the shortfall (the topology keeps running)."""
        self.require_leader()
        with self.lock:
            tid, base = self._live(name)
            if base.get("status") == "rebalancing":
                raise TopologyError(f"topology {name!r} is already rebalancing")
            loaded = self.topology_of(tid)
            if loaded is None:
                raise TopologyError(f"nimbus has no package for topology {tid}")
            conf, topology = loaded
            current = topology.with_parallelism(base.get("component_executors") or {})
            changed = current.with_parallelism(dict(executors or {}))   # validates the names
            if num_workers is not None and int(num_workers) < 1:
                raise TopologyError("rebalance: workers must be >= 1")
            if wait_secs is None:
                wait_secs = float(conf.get("topology.message.timeout.secs") or 30)
            previous = "inactive" if base.get("status") == "inactive" else "active"
            shape = {"status": previous,
                     "num_workers": int(num_workers or base.get("num_workers") or 1),
                     "component_executors": {c: s.parallelism
                                             for c, s in sorted(changed.components.items())}}
            short = rebalance_shortfall(self, tid, shape)
            if short is not None:    # refuse rather than stop a running topology
                raise TopologyError(f"rebalance of {name!r} does not fit: {short}; the topology "
                                    "keeps running as it is")
            self.state.update_storm(tid, status="rebalancing", rebalance={
                "due": time.time() + max(0.0, float(wait_secs)),
                "previous": previous, "num_workers": shape["num_workers"],
                "component_executors": shape["component_executors"]})
        self._wake.set()

    # -- periodic work (monitor thread) -------------------------------------------------------
    def _monitor_loop(self) -> None:
        freq = float(self.conf.get("nimbus.monitor.freq.secs") or 10)
        while not self._stop.is_set():
            self._wake.wait(freq)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self.state.supervisor_ids(watch=lambda _p: self._wake.set())
                self.state.topology_ids(watch=lambda _p: self._wake.set())
                if self.is_leader:
                    with self.lock:
                        self._finish_transitions()
                        schedule_pass(self, self._fresh)
                        self._clean_orphans()
                else:
                    self._sync_packages()
                self._clean_local()
            except SquallError as exc:
                log.warning("nimbus monitor pass failed: %s", exc)
            except Exception:  # keep monitoring whatever happened
                log.exception("nimbus monitor pass failed")

    def _finish_transitions(self) -> None:
        now = time.time()
        for tid, base in self.state.storms().items():
            if base.get("status") == "killed" and float(base.get("kill_time") or 0) <= now:
                self.state.remove_topology(tid)
                self.beats.forget(tid)
                self._topologies.pop(tid, None)
                shutil.rmtree(self.stormdist / tid, ignore_errors=True)
                from squall.plugin_manager import get_plugin_manager
                get_plugin_manager().hook.squall_topology_killed(name=base.get("name", ""),
                                                                 topology_id=tid)
                log.info("topology %s killed", tid)
            plan = base.get("rebalance")
            if base.get("status") == "rebalancing" and plan and float(plan["due"]) <= now:
                self.state.update_storm(tid, status=plan["previous"], rebalance=None,
                                        num_workers=plan["num_workers"],
                                        component_executors=plan["component_executors"])
                self._fresh[tid] = {"num_workers": base.get("num_workers"),
                                    "component_executors": base.get("component_executors")}
                log.info("rebalancing topology %s", tid)

    def _clean_orphans(self) -> None:
        live = set(self.state.topology_ids())
        for tid in self.state.assignment_ids():
            if tid not in live:
                self.state.remove_assignment(tid)
        for tid in self.state.beat_topology_ids():
            if tid not in live:
                self.state.remove_worker_beats(tid)
        for tid in self.state.error_topology_ids():
            if tid not in live:
                self.state.remove_errors(tid)

    def _clean_local(self) -> None:
        live = set(self.state.topology_ids())
        for path in self.stormdist.iterdir():
            if path.name not in live and not path.name.endswith(".tmp"):
                shutil.rmtree(path, ignore_errors=True)
                self._topologies.pop(path.name, None)

    def _sync_packages(self) -> None:
        """Standby: download the packages this nimbus lacks from the leader."""
        leader = self.leader_address()
        if not leader or leader == self.address:
            return
        from squall.daemon.nimbus_client import NimbusClient
        client = None
        try:
            for tid in self.state.topology_ids():
                directory = self.stormdist / tid
                if packaging.has_package(directory):
                    continue
                client = client or NimbusClient(self.conf, addresses=[leader], timeout=60)
                tmp = self.stormdist / f"{tid}.tmp"
                shutil.rmtree(tmp, ignore_errors=True)
                tmp.mkdir()
                for file in packaging.PACKAGE_FILES:
                    (tmp / file).write_bytes(client.download(tid, file))
                shutil.rmtree(directory, ignore_errors=True)
                tmp.rename(directory)
                log.info("downloaded the package of %s from the leader %s", tid, leader)
        finally:
            if client is not None:
                client.close()

    # -- reads (any nimbus) -------------------------------------------------------------------
    def package_file(self, topology_id: str, file: str) -> Path:
        if file not in packaging.PACKAGE_FILES or "/" in topology_id:
            raise TopologyError(f"no package file {file!r}")
        path = self.stormdist / topology_id / file
        if not path.is_file():
            if not self.is_leader:
                raise NotLeaderError(self.leader_address())
            raise NotAliveError(f"nimbus has no package for topology {topology_id!r}")
        return path

    def topology_summaries(self) -> list[dict[str, Any]]:
        out = []
        now = time.time()
        assignments = self.state.assignments()
        for tid, base in sorted(self.state.storms().items()):
            enp = (assignments.get(tid) or {}).get("executor_node_port") or {}
            loaded = self.topology_of(tid)
            out.append({"name": base.get("name", ""), "id": tid, "status": base.get("status", ""),
                        "status_reason": base.get("status_reason") or "",
                        "num_workers": len({tuple(v) for v in enp.values()}),
                        "num_executors": len(enp),
                        "num_tasks": len(loaded[1].all_tasks()) if loaded else 0,
                        "uptime_secs": int(now - float(base.get("launch_time") or now))})
        return out

    def topology_info(self, name: str) -> dict[str, Any]:
        from squall.daemon.nimbus_info import topology_info
        tid, base = self._live(name)
        return topology_info(self, tid, base)


def _owner() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no user name in a bare container
        return ""
