"""A real squall cluster for tests: nimbus and supervisor processes on 127.0.0.1.

``squall_cluster`` (per test) gives a :class:`ClusterHarness` bound to the test's ZooKeeper chroot
(``zk_conf``) and temporary directories. It starts daemons as subprocesses
(``python -m squall.cli.main --config FILE nimbus|supervisor``) on free ports with short
timeouts, runs CLI commands, reads the cluster state, and at teardown kills every daemon and
every worker process they launched. Wait on outcomes with ``wait_until``, never sleep.
"""
from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from squall.daemon.ports import free_port
from squall.testing.waiting import WaitTimeout, wait_until

TOPOLOGIES = Path(__file__).resolve().parent.parent / "topologies"
WORDCOUNT_TARGET = str(TOPOLOGIES / "acked_wordcount.py") + ":topology"

FAST = {
    "nimbus.monitor.freq.secs": 1,
    "nimbus.task.timeout.secs": 6,
    "nimbus.task.launch.secs": 30,
    "supervisor.monitor.frequency.secs": 1,
    "supervisor.heartbeat.frequency.secs": 1,
    "supervisor.worker.timeout.secs": 5,
    "supervisor.worker.start.timeout.secs": 30,
    "supervisor.worker.shutdown.sleep.secs": 2,
    "worker.heartbeat.frequency.secs": 1,
    "task.heartbeat.frequency.secs": 1,
    "topology.message.timeout.secs": 5,
    "storm.zookeeper.session.timeout": 4000,
    "storm.local.hostname": "127.0.0.1",
    "squall.transport": "zmq",
}


def load_topology_module() -> Any:
    spec = importlib.util.spec_from_file_location("acked_wordcount_helpers",
                                                  TOPOLOGIES / "acked_wordcount.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


class Daemon:
    """One daemon subprocess and its local directory."""

    def __init__(self, kind: str, proc: subprocess.Popen[bytes], local_dir: Path, log: Path,
                 port: int = 0, ports: tuple[int, ...] = ()) -> None:
        self.kind, self.proc, self.local_dir, self.log = kind, proc, local_dir, log
        self.port, self.ports = port, ports

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill9(self) -> None:
        if self.alive():
            self.proc.kill()
            self.proc.wait(10)

    def terminate(self) -> None:
        self.send_sigterm()
        self.wait_exit()

    def send_sigterm(self) -> None:
        """SIGTERM, if it runs (:meth:`wait_exit` waits for it to go)."""
        if self.alive():
            self.proc.terminate()

    def wait_exit(self) -> None:
        """Wait up to 15 s for the process to exit, then SIGKILL it."""
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def worker_pids(self) -> list[int]:
        out = []
        for pid_file in self.local_dir.glob("workers/*/pids/*"):
            if pid_file.name.isdigit():
                out.append(int(pid_file.name))
        return out


class ClusterHarness:
    def __init__(self, tmp: Path, zk_conf: dict[str, Any], nimbus_count: int = 1) -> None:
        self.tmp = tmp
        self.out_dir = tmp / "out"
        self.out_dir.mkdir()
        self.nimbus_ports = [free_port() for _ in range(nimbus_count)]
        self.conf = {**zk_conf, **FAST,
                     "nimbus.seeds": [f"127.0.0.1:{p}" for p in self.nimbus_ports],
                     "test.output.dir": str(self.out_dir),
                     # commands run without their own (``squall ui``) write their log here
                     "storm.local.dir": str(tmp / "cli-local")}
        self.config_file = tmp / "squall.yaml"
        self.config_file.write_text(yaml.safe_dump(self.conf))
        self.daemons: list[Daemon] = []
        self._store: Any = None
        self.wordcount_target = WORDCOUNT_TARGET

    # -- processes ----------------------------------------------------------------------------
    def _spawn(self, kind: str, name: str, overrides: dict[str, Any]) -> tuple[Any, Path, Path]:
        local = self.tmp / name
        local.mkdir(exist_ok=True)
        log = self.tmp / f"{name}.log"
        args = [sys.executable, "-m", "squall.cli.main", "--config", str(self.config_file),
                "-c", f"storm.local.dir={local}"]
        for key, value in overrides.items():
            args += ["-c", f"{key}={yaml.safe_dump(value, default_flow_style=True).strip()}"
                     .replace("\n...", "")]
        args.append(kind)
        with open(log, "ab") as out:
            proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        return proc, local, log

    def start_nimbus(self, index: int = 0, overrides: dict[str, Any] | None = None) -> Daemon:
        port = self.nimbus_ports[index]
        proc, local, log = self._spawn("nimbus", f"nimbus{index}",
                                       {"nimbus.port": port, **(overrides or {})})
        d = Daemon("nimbus", proc, local, log, port=port)
        self.daemons.append(d)
        return d

    def start_supervisor(self, name: str, slots: int = 2,
                         ports: tuple[int, ...] | None = None,
                         overrides: dict[str, Any] | None = None) -> Daemon:
        ports = ports or tuple(free_port() for _ in range(slots))
        proc, local, log = self._spawn("supervisor", name,
                                       {"supervisor.slots.ports": list(ports),
                                        "logviewer.port": free_port(), **(overrides or {})})
        d = Daemon("supervisor", proc, local, log, ports=ports)
        self.daemons.append(d)
        return d

    def start_drpc(self, overrides: dict[str, Any] | None = None) -> Daemon:
        """``squall drpc`` on free ports (``.port``: gRPC; ``.ports``: (gRPC, HTTP))."""
        grpc_port, http_port = free_port(), free_port()
        proc, local, log = self._spawn("drpc", "drpc", {
            "drpc.host": "127.0.0.1", "drpc.port": grpc_port, "drpc.http.port": http_port,
            **(overrides or {})})
        d = Daemon("drpc", proc, local, log, port=grpc_port, ports=(grpc_port, http_port))
        self.daemons.append(d)
        return d

    def squall(self, *args: str, check: bool = True, timeout: float = 60,
               env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """Run ``squall --config FILE ARGS...``; AssertionError with its output if it fails
        and ``check``."""
        env = {**os.environ, **(env_extra or {})}
        proc = subprocess.run([sys.executable, "-m", "squall.cli.main", "--config",
                               str(self.config_file), *args], capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL, env=env)
        if check and proc.returncode != 0:
            raise AssertionError(f"squall {' '.join(args)} failed ({proc.returncode}):\n"
                                 f"{proc.stdout}\n{proc.stderr}\n{self.logs_tail()}")
        return proc

    def client(self) -> Any:
        from squall.daemon.nimbus_client import NimbusClient
        return NimbusClient(self.conf, timeout=20)

    @property
    def state(self) -> Any:
        if self._store is None:
            from squall import drivers
            from squall.state.cluster_state import ClusterState
            self._store = drivers.driver("state", self.conf)
            self._store.start()
            self._state = ClusterState(self._store, self.conf)
        return self._state

    # -- observations -------------------------------------------------------------------------
    def listed(self) -> dict[str, str]:
        """name -> status from ``squall list`` (its header line skipped)."""
        out = self.squall("list").stdout
        return dict(line.split()[:2] for line in out.splitlines()[1:] if line.strip())

    def wait(self, condition: Any, timeout: float, what: str) -> Any:
        """``wait_until`` that adds the daemons' and workers' log tails to a timeout."""
        try:
            return wait_until(condition, timeout, interval=0.05)
        except WaitTimeout:
            raise WaitTimeout(f"{what} (within {timeout:g} s)\n{self.logs_tail()}") from None

    def wait_ready(self, supervisors: int, timeout: float = 30) -> None:
        self.wait(lambda: len(self.state.supervisor_ids()) >= supervisors and
                  self.state.nimbuses(), timeout, "daemons did not register")

    def assignment(self, name: str) -> dict[str, Any] | None:
        tid = self.state.find_topology_id(name)
        return self.state.get_assignment(tid) if tid else None

    def worker_slots(self, name: str) -> set[tuple[str, int]]:
        a = self.assignment(name) or {}
        return {(str(n), int(p)) for n, p in (a.get("executor_node_port") or {}).values()}

    def logs_tail(self, lines: int = 40) -> str:
        parts = []
        for d in self.daemons:
            text = d.log_text().splitlines()[-lines:]
            parts.append(f"--- {d.kind} {d.local_dir.name} ---\n" + "\n".join(text))
            for wlog in sorted((d.local_dir / "logs").glob("*.log")):
                parts.append(f"--- {wlog} ---\n" +
                             "\n".join(wlog.read_text(errors="replace").splitlines()[-lines:]))
        return "\n".join(parts)

    def daemon_tracebacks(self) -> list[str]:
        """Daemon log excerpts holding a traceback (a daemon bug: they must log one line)."""
        return [f"{d.kind} {d.local_dir.name}:\n{d.log_text()[-3000:]}"
                for d in self.daemons if "Traceback" in d.log_text()]

    def close_and_delete_root(self, hosts: str, digest: str | None = None) -> None:
        """:meth:`close`, then delete this cluster's ZooKeeper root (as ``digest``, the
        ``user:password`` a secured tree wants). The daemons go first: one still beating
        writes under the root while it is deleted; a node created meanwhile all the same (a
        SIGKILLed worker's last request) is a NotEmptyError, and the delete is tried again."""
        import time
        from kazoo.client import KazooClient
        from kazoo.exceptions import NotEmptyError
        self.close()
        client = KazooClient(hosts=hosts, timeout=10,
                             auth_data=[("digest", digest)] if digest else None)
        client.start(timeout=10)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    client.delete(self.conf["storm.zookeeper.root"], recursive=True)
                    return
                except NotEmptyError:
                    if time.monotonic() > deadline:
                        raise
        finally:
            client.stop()
            client.close()

    def close(self) -> None:
        # the nimbuses first (so that none moves executors while the others leave), then the
        # others all at once: each supervisor stops its own workers, which takes a few tenths
        # of a second and needs none of the others
        nimbuses = [d for d in self.daemons if d.kind == "nimbus"]
        others = [d for d in self.daemons if d.kind != "nimbus"]
        for d in nimbuses:
            d.terminate()
        for d in others:
            d.send_sigterm()
        for d in others:
            d.wait_exit()
        for d in self.daemons:
            for pid in d.worker_pids():
                for sig in (signal.SIGTERM, signal.SIGKILL):
                    try:
                        os.killpg(pid, sig)
                    except (ProcessLookupError, PermissionError):
                        pass
        if self._store is not None:     # close() may run twice (a fixture's, then the harness's)
            self._store.close()
            self._store = None


@pytest.fixture(scope="session")
def harness_class() -> type[ClusterHarness]:
    """:class:`ClusterHarness`, for a test that builds a cluster of its own (a bare ``import
    conftest`` finds whichever conftest pytest imported last)."""
    return ClusterHarness


@pytest.fixture
def squall_cluster(tmp_path: Path, zk_conf: dict[str, Any]) -> Iterator[ClusterHarness]:
    harness = ClusterHarness(tmp_path, zk_conf)
    try:
        yield harness
    finally:
        harness.close()
    assert not harness.daemon_tracebacks(), "\n".join(harness.daemon_tracebacks())


@pytest.fixture(scope="session")
def wordcount() -> Any:
    """The test topology module (``expected_counts``, ``read_acks``, ``read_counts``)."""
    return load_topology_module()


@pytest.fixture(scope="module")
def fault_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ClusterHarness, Any]]:
    """``(harness, zookeeper)``: a cluster with two nimbus ports on a ZooKeeper of its own
    (fault tests stop and restart it), shared by the tests of one module."""
    from squall.daemon.dev_zookeeper import DevZooKeeper
    tmp = tmp_path_factory.mktemp("faults")
    zk = DevZooKeeper(tmp / "zookeeper").start()
    harness = ClusterHarness(tmp, {**zk.conf("/squall-faults"), "squall.state": "zookeeper",
                                   "storm.zookeeper.connection.timeout": 10000},
                             nimbus_count=2)
    try:
        yield harness, zk
    finally:
        harness.close()
        zk.stop()
    assert not harness.daemon_tracebacks(), "\n".join(harness.daemon_tracebacks())
