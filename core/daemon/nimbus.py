"""Nimbus (``squall nimbus``): accepts topologies, schedules them, watches them run.

Every nimbus registers ``/nimbuses/<host:port>`` and contends for ``/leader-lock``. Only the
leader accepts writes (submit, kill, activate, deactivate, rebalance) and schedules; a standby
answers reads and refuses writes with an error naming the leader (the client then goes there).
Packages live in ``storm.local.dir/nimbus/stormdist/<topology-id>/``; a standby downloads every
package it lacks from the leader, so it can take over. A restarted nimbus resumes from ZooKeeper
and its local directory.

:class:`Nimbus` puts the parts together and runs their threads; each part owns its state:

- :class:`~squall.daemon.nimbus_leader.Leadership`: the election, who leads;
- :class:`~squall.daemon.nimbus_code.CodeStore`: the packages on local disk;
- :class:`~squall.daemon.nimbus_schedule.Scheduling`: liveness, the scheduler, ``/assignments``;
- :class:`~squall.daemon.nimbus_topologies.TopologyLifecycle`: the write commands, their
  transitions, the lock that serializes writes and scheduling;
- :class:`~squall.daemon.nimbus_info.NimbusReads`: what any nimbus answers;
- :class:`~squall.daemon.nimbus_access.TopologyAccess`: who may see and change what;
- :class:`~squall.daemon.nimbus_service.NimbusService`: the gRPC API over the last three,
  behind :class:`~squall.security.grpc_auth.AuthInterceptor` (``nimbus.authentication``) and
  TLS when ``squall.tls.cert`` / ``.key`` are set.

Threads: gRPC handler threads serve the API; one monitor thread runs the periodic work (every
``nimbus.monitor.freq.secs``, when a watch fires or a command asks, and when a kill or rebalance
wait ends); one election thread waits for leadership.
"""
from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

from squall import config, drivers
from squall.daemon.addresses import listen_error
from squall.daemon.nimbus_access import TopologyAccess
from squall.daemon.nimbus_code import CodeStore
from squall.daemon.nimbus_info import NimbusReads
from squall.daemon.nimbus_leader import Leadership
from squall.daemon.nimbus_replication import NO_CODE, Replication
from squall.daemon.nimbus_schedule import Scheduling
from squall.daemon.nimbus_topologies import TopologyLifecycle
from squall.errors import SquallError
from squall.state.cluster_state import NIMBUSES, ClusterState

log = logging.getLogger(__name__)


class Nimbus:
    """The nimbus daemon (see the module docstring). ``start()``, ``wait()``, then ``stop()``;
    ``request_stop()`` from a signal handler."""

    def __init__(self, conf: dict[str, Any]) -> None:
        """ConfigError for a monitor period no loop can wait (see ``config.period_secs``)."""
        self.conf = dict(conf)
        #: nimbus.monitor.freq.secs: the monitor thread's period
        self._monitor_secs = config.period_secs(self.conf, "nimbus.monitor.freq.secs")
        local = Path(str(conf.get("storm.local.dir") or "squall-local")).resolve()
        self.local_dir = local / "nimbus"
        self._code = CodeStore(self.local_dir, self.conf)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._server: Any = None
        self._store: Any = None
        self._leadership: Leadership | None = None
        self.port = 0
        self.address = ""
        self.start_time = time.time()

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self) -> None:
        """Connect to the state store, serve the API, register and contend for leadership.
        Raises StateError (store unreachable) or SquallError (port in use)."""
        self._code.prepare()
        self._store = drivers.driver("state", self.conf)
        self._store.start()
        state = ClusterState(self._store, self.conf)
        state.setup()
        from squall.security.transport_creds import ensure_cluster_credentials
        ensure_cluster_credentials(self.conf, self._store)
        scheduler = drivers.driver("scheduler", self.conf)
        self._bind()
        self._store.delete(f"{NIMBUSES}/{self.address}")   # a node left by a previous life
        registration = {"host": self.address.rsplit(":", 1)[0], "port": self.port,
                        "time_secs": int(self.start_time)}
        state.register_nimbus(self.address, {**registration, "packages": []})
        leadership = self._leadership = Leadership(state.leader_election(self.address),
                                                   self.address)
        replication = Replication(state, self._code, self.address, registration,
                                  leadership.leader_address, self.conf)
        replication.publish()
        scheduling = Scheduling(self.conf, state, scheduler, self._code)
        topologies = TopologyLifecycle(self.conf, state, self._code, scheduling,
                                       leadership.require, self._wake.set, replication)
        self._serve(topologies, NimbusReads(state, self._code, leadership),
                    TopologyAccess(self.conf, state))

        def leading() -> None:      # supervisors not registered yet get time to register
            scheduling.start_grace()
            self._wake.set()

        def new_session() -> None:  # every supervisor gets time to register again
            scheduling.start_grace(session_lost=True)
            self._wake.set()
        self._store.add_reconnect_listener(new_session)
        loops = ((lambda: leadership.run(self._stop, leading), "election"),
                 (lambda: self._monitor_loop(state, leadership, topologies, replication),
                  "monitor"))
        for target, name in loops:
            t = threading.Thread(target=target, name=f"squall-nimbus-{name}", daemon=True)
            t.start()
            self._threads.append(t)
        log.info("nimbus %s started (local dir %s)", self.address, self.local_dir)

    @property
    def store(self) -> Any:
        """The state store this nimbus talks to (None before :meth:`start`)."""
        return self._store

    @property
    def is_leader(self) -> bool:
        return self._leadership is not None and self._leadership.is_leader

    def _bind(self) -> None:
        """Create the gRPC server and bind its port (``nimbus.host``:``nimbus.port``); sets
        :attr:`port` and :attr:`address`. SquallError when the port cannot be bound,
        ConfigError for unusable security settings."""
        from concurrent import futures

        import grpc

        from squall.security.grpc_auth import AuthInterceptor, server_credentials
        host = str(self.conf.get("nimbus.host") or "127.0.0.1")
        wanted = int(self.conf.get("nimbus.port") or 0)
        interceptor = AuthInterceptor(self.conf, "nimbus")
        credentials = server_credentials(self.conf)
        self._server = grpc.server(futures.ThreadPoolExecutor(
            max_workers=8, thread_name_prefix="squall-nimbus-rpc"),
            interceptors=[interceptor], options=[("grpc.so_reuseport", 0)])
        try:
            address = f"{host}:{wanted}"
            self.port = (self._server.add_secure_port(address, credentials) if credentials
                         else self._server.add_insecure_port(address))
        except RuntimeError as exc:
            raise SquallError(listen_error("nimbus", host, wanted, "nimbus.host / nimbus.port",
                                           exc)) from exc
        if not self.port:
            raise SquallError(listen_error("nimbus", host, wanted, "nimbus.host / nimbus.port"))
        advertised = host
        if host in ("0.0.0.0", "::", ""):
            import socket
            advertised = str(self.conf.get("storm.local.hostname") or socket.gethostname())
        self.address = f"{advertised}:{self.port}"
        log.info("nimbus API on %s: authentication %s, %s", self.address, interceptor.mode,
                 "TLS" if credentials else "plaintext")

    def _serve(self, topologies: TopologyLifecycle, reads: NimbusReads,
               access: TopologyAccess) -> None:
        from squall.daemon._proto import nimbus_pb2_grpc
        from squall.daemon.nimbus_service import NimbusService
        nimbus_pb2_grpc.add_NimbusServicer_to_server(NimbusService(topologies, reads, access),
                                                     self._server)
        self._server.start()

    def stop(self) -> None:
        """Stop serving, give up leadership and disconnect. Idempotent."""
        self._stop.set()
        self._wake.set()
        if self._leadership is not None:
            self._leadership.cancel()
        if self._server is not None:
            self._server.stop(grace=1).wait(5)
        if self._store is not None:
            self._store.close()
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

    # -- periodic work (monitor thread) -------------------------------------------------------
    def _monitor_loop(self, state: ClusterState, leadership: Leadership,
                      topologies: TopologyLifecycle, replication: Replication) -> None:
        freq = self._monitor_secs
        due: float | None = None      # when (monotonic) the next kill / rebalance wait ends
        while not self._stop.is_set():
            # a kill or rebalance --wait S ends after S seconds, not at the next periodic pass
            self._wake.wait(freq if due is None else
                            min(freq, max(0.0, due - time.monotonic())))
            self._wake.clear()
            if self._stop.is_set():
                return
            due = None                # a failed pass waits the full period
            try:
                state.supervisor_ids(watch=lambda _p: self._wake.set())
                live = state.topology_ids(watch=lambda _p: self._wake.set())
                replication.sync(live)
                if leadership.is_leader:
                    self._report_unfound(state, replication.unfound)
                    due = topologies.monitor_pass()
                else:       # should it lead, it ends the waits under way on time
                    topologies.watch_transitions()
                topologies.clean_packages()
                replication.publish()
            except SquallError as exc:
                log.warning("nimbus monitor pass failed: %s", exc)
            except Exception:  # keep monitoring whatever happened
                log.exception("nimbus monitor pass failed")

    @staticmethod
    def _report_unfound(state: ClusterState, unfound: set[str]) -> None:
        """The leader says, in their status reason, which topologies' code is nowhere."""
        for tid in sorted(unfound):
            base = state.get_storm(tid)
            if base is not None and base.get("status_reason") != NO_CODE:
                state.update_storm(tid, status_reason=NO_CODE)
