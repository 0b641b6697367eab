"""The worker process: ``python -m squall.daemon.worker_main`` (launched by a supervisor).

Arguments: ``--topology-id``, ``--supervisor-id``, ``--port``, ``--worker-id``, ``--local-dir``;
``--log-file`` (with ``--log-max-bytes``, ``--log-backups``) sends its log, its ``sys.stdout``
and ``sys.stderr`` to that rotated file (:mod:`squall.daemon.log_files`; without it the log goes
to stdout).
The process reads the supervisor's conf (``supervisor/supervisor-conf.json``) and the topology
(``supervisor/stormdist/<topology-id>/``: conf, topology JSON, code on ``sys.path``), builds a
:class:`~squall.runtime.worker.Worker` with the executors ``/assignments`` gives its
``(supervisor, port)`` and the configured transport, and then, on its main thread:

- writes a local heartbeat file every ``worker.heartbeat.frequency.secs``
  (``workers/<worker-id>/heartbeats/<n>``, ``n`` counting up, newest few kept) for its
  supervisor, on a thread of its own (so a state store that blocks does not stop it). Its
  ``time_secs`` is the time of the beat while the worker's loop runs; once the loop has been
  in one pass for more than ``supervisor.worker.timeout.secs`` (a component blocked in a call
  on the loop thread, ``Worker.loop_stuck``) it is the time that pass began, that long before
  the beat's ``written_secs``, so the supervisor restarts the worker at its next check.
  That is reported once as an error of the component the loop is in, and sent to
  ``/errors`` at once;
- writes executor stats to ``/workerbeats/<topology-id>/<node>-<port>`` and the components'
  errors to ``/errors`` every ``task.heartbeat.frequency.secs``;
- follows ``/assignments/<topology-id>`` (watch + timer): refreshes links to other workers, and
  exits when its slot no longer has exactly its executors (the supervisor starts a new worker).
  After a pause of the whole process (SIGSTOP, a frozen host; the local heartbeat thread's
  wait ends too late, :mod:`squall.runtime.pause`) the loop runs no executor until this thread
  has read the assignment again, at once: then they run on, or the worker exits;
- follows ``/storms/<topology-id>``'s status: ``active`` activates the spouts, anything else
  deactivates them. This thread hands that (and the debug sampling below) to the worker's
  loop and never waits for it: a loop held in a component's call applies the latest once the
  call returns, and the ZooKeeper beats go on meanwhile. What else this thread asks of the
  loop (a new assignment's links) is queued too; only the shutdown waits for it, bounded;
- serves its executors' built-in metrics on ``http://<host>:<metrics_port>/metrics``
  (OpenMetrics text, refreshed with each ZooKeeper beat, which publishes ``metrics_port``)
  when ``worker.metrics.endpoint`` is true: on the worker's port + ``worker.metrics.port.offset``,
  or a free port when that is null;
- samples emits into its events log as ``topology.debug`` and ``component_debug`` in
  ``/storms/<topology-id>`` (``squall debug``) say (:mod:`squall.runtime.event_log`);
- follows ``/logconfigs/<topology-id>``: sets the log levels requested there and restores them
  when the request expires (:mod:`squall.daemon.log_levels`);
- SIGTERM / SIGINT: orderly shutdown (spouts deactivated, executors stopped, links closed).

Exit codes: 0 after an orderly shutdown or a lost assignment, 1 when it cannot start or its
executors died. A worker that cannot start (its code does not import, a component raises in
``initialize``, ``sys.exit()`` there too...) first reports why, with the traceback, to
``/errors/<topology-id>/__worker`` (``start_failure: true``, its ``node`` and ``port``):
nimbus's topology info and ``squall list`` show it as the topology's ``status_reason``. A
worker killed by a fatal signal (a C extension's SIGSEGV) writes its threads' Python stacks to
its raw stderr, the ``.out`` file, first (:func:`enable_crash_traces`). Its pid file is
``workers/<worker-id>/pids/<pid>``.
"""
from __future__ import annotations

import argparse
import faulthandler
import json
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from squall.errors import StateError
from squall.runtime.errors import WORKER_COMPONENT

log = logging.getLogger("squall.worker")

#: a beat the store keeps refusing for the same reason is logged again after this many seconds
BEAT_FAILURE_LOG_SECS = 300.0
KEEP_HEARTBEATS = 5
#: how soon the assignment is read again while the executors are fenced after a pause and
#: the last read failed (the store reconnecting)
FENCED_SYNC_SECS = 0.25


def supervisor_conf_path(local_dir: str | os.PathLike[str]) -> Path:
    return Path(local_dir) / "supervisor" / "supervisor-conf.json"


def my_executors(assignment: dict[str, Any] | None, node: str, port: int) -> list[tuple[int, int]]:
    """The executor ranges an assignment gives slot ``(node, port)``, sorted."""
    out = []
    for key, (n, p) in ((assignment or {}).get("executor_node_port") or {}).items():
        if str(n) == node and int(p) == port:
            start, end = json.loads(key)
            out.append((int(start), int(end)))
    return sorted(out)


def task_to_worker(assignment: dict[str, Any]) -> dict[int, tuple[str, int]]:
    """Every task of the assignment -> ``(host, port)`` of its worker."""
    hosts = assignment.get("node_host") or {}
    out = {}
    for key, (node, port) in (assignment.get("executor_node_port") or {}).items():
        start, end = json.loads(key)
        for task in range(int(start), int(end) + 1):
            out[task] = (str(hosts.get(node, node)), int(port))
    return out


def write_local_heartbeat(directory: Path, beat: dict[str, Any]) -> None:
    """Write ``beat`` as the newest local heartbeat in ``directory`` (one writer: this
    worker) and keep the newest :data:`KEEP_HEARTBEATS`. The file is named by a counter, one
    more than the highest name there, never by the time: whatever the host's clock does (an
    NTP step back), the newest beat has the highest name. The beat gets ``written_secs``
    (``time.time()`` now), which its supervisor compares with its ``time_secs`` only
    (:mod:`squall.daemon.supervisor_beats`). Raises OSError."""
    directory.mkdir(parents=True, exist_ok=True)
    numbers = [int(p.name) for p in directory.iterdir() if p.name.isdigit()]
    number = max(numbers, default=0) + 1
    tmp = directory / f".{number}.tmp"
    tmp.write_text(json.dumps({**beat, "written_secs": time.time()}), encoding="utf-8")
    os.replace(tmp, directory / str(number))
    for old in sorted(numbers)[:max(0, len(numbers) + 1 - KEEP_HEARTBEATS)]:
        (directory / str(old)).unlink(missing_ok=True)


class WorkerProcess:
    """Everything process-level around one :class:`Worker` (see the module docstring)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.tid = args.topology_id
        self.node = args.supervisor_id
        self.port = int(args.port)
        self.worker_id = args.worker_id
        self.local_dir = Path(args.local_dir).resolve()
        self.worker_dir = self.local_dir / "workers" / self.worker_id
        self.stop = threading.Event()
        self.changed = threading.Event()
        #: set when errors wait to be sent to /errors before the next ZooKeeper beat
        self.errors_due = threading.Event()
        self.worker: Any = None
        self.store: Any = None
        self.metrics_endpoint: Any = None
        self.debug: dict[str, float] = {}
        self.seq = 0
        #: the last reason a beat was not written and when it was logged (None: written)
        self._beat_failure: tuple[str, float] | None = None
        self.active: bool | None = None
        self.log_file: Path | None = Path(args.log_file) if args.log_file else None
        self.log_rotation = (int(args.log_max_bytes), int(args.log_backups))
        from squall.daemon.log_levels import LogLevels
        self.log_levels = LogLevels()
        self.conf: dict[str, Any] = {}
        self.started = False

    def run(self) -> int:
        from squall import drivers
        from squall.daemon import packaging
        from squall.runtime.worker import Worker
        from squall.state.cluster_state import ClusterState

        sup_conf = json.loads(supervisor_conf_path(self.local_dir).read_text(encoding="utf-8"))
        self.conf = sup_conf
        dist = self.local_dir / "supervisor" / "stormdist" / self.tid
        tconf, topology = packaging.load_topology(dist)
        from squall.plugin_manager import configure
        conf = configure({**sup_conf, **tconf})
        from squall.security.transport_creds import worker_conf
        conf.update(worker_conf(conf, self.worker_dir))   # squall.transport.tls credentials
        self.conf = conf
        logging.getLogger().setLevel(str(conf.get("worker.log.level") or "INFO").upper())
        if self.log_file is not None:
            from squall.daemon.log_files import separate_events_log
            separate_events_log(self.log_file.with_name(f"{self.tid}-{self.port}.events.log"),
                                *self.log_rotation)
        if self.log_file is not None and conf.get("worker.metrics.log.separate"):
            from squall.daemon.log_files import separate_metrics_log
            separate_metrics_log(self.log_file.with_name(f"{self.tid}-{self.port}.metrics.log"),
                                 *self.log_rotation)
        from squall.errors import ConfigError
        from squall.runtime import gc_tuning
        try:
            gc_tuning.apply(conf)
        except ConfigError as exc:      # the worker runs on with the interpreter's defaults
            log.error("%s", exc)
        from squall.daemon.supervisor_local import register_pid
        register_pid(self.worker_dir / "pids")
        from squall.multilang.process import use_pid_dir
        use_pid_dir(self.worker_dir / "pids")   # shell subprocesses: stopped with this worker
        self.store = drivers.driver("state", conf)
        self.store.start()
        self.state = ClusterState(self.store, conf)
        base = self.state.get_storm(self.tid, watch=self._on_change)     # first: see sync
        assignment = self.state.get_assignment(self.tid, watch=self._on_change)
        self.executors = my_executors(assignment, self.node, self.port)
        if not self.executors or base is None:
            log.info("worker %s: no assignment for %s:%d any more; exiting", self.tid, self.node,
                     self.port)
            return 0
        if base.get("component_executors"):
            topology = topology.with_parallelism(base["component_executors"])
        host = str((assignment.get("node_host") or {}).get(self.node, "127.0.0.1"))
        self.task_to_worker = task_to_worker(assignment)
        transport = drivers.driver("transport", conf)
        self.worker = Worker(conf=conf, topology=topology, topology_id=self.tid, port=self.port,
                             executors=self.executors, task_to_worker=self.task_to_worker,
                             transport=transport, host=host)
        from squall.plugin_manager import notify, worker_starting
        self.worker.build()
        worker_starting(self.tid, self.port, conf)
        from squall.runtime.pause import pause_threshold
        self.worker.pauses.arm(pause_threshold(conf), self.changed.set)  # see _local_beats
        self.worker.start()
        self._start_metrics_endpoint(host)
        self.started = True
        log.info("worker %s:%d started with executors %s", self.tid, self.port, self.executors)
        self.heartbeat_local()
        # local beats on a thread of their own: a state store that blocks (ZooKeeper down)
        # must not make the supervisor think this worker hangs
        beats = threading.Thread(target=self._local_beats, name="squall-worker-beats",
                                 daemon=True)
        beats.start()
        self._apply_status(base)
        self.log_levels.apply(self.state.get_log_config(self.tid, watch=self._on_change))
        try:
            return self._loop()
        finally:
            self._shutdown(transport)
            notify("squall_worker_stop", topology_id=self.tid, port=self.port)

    def _start_metrics_endpoint(self, host: str) -> None:
        if not self.conf.get("worker.metrics.endpoint"):
            return
        from squall.metrics.openmetrics import MetricsEndpoint
        offset = self.conf.get("worker.metrics.port.offset")
        endpoint = MetricsEndpoint(host, 0 if offset is None else self.port + int(offset))
        try:
            endpoint.start()
        # the worker runs on without it (OverflowError: its port + an offset past 65535,
        # in a conf that escaped validation)
        except (OSError, OverflowError, ValueError) as exc:
            log.error("worker %s:%d: the /metrics endpoint cannot listen on %s:%d: %s",
                      self.tid, self.port, host, endpoint.requested_port, exc)
            return
        self.metrics_endpoint = endpoint
        log.info("worker %s:%d serves /metrics on %s:%d", self.tid, self.port, host,
                 endpoint.port)

    def _on_change(self, _path: str) -> None:
        self.changed.set()

    def _local_beats(self) -> None:
        """The local heartbeat thread: a beat every ``worker.heartbeat.frequency.secs``
        while the executors live, dated when the loop's current pass began once that pass
        has lasted past ``supervisor.worker.timeout.secs`` (see the module docstring). It is
        also the watcher of ``Worker.pauses``: a wait of its own that ends too late is a
        pause of the whole process (:mod:`squall.runtime.pause`)."""
        every = float(self.conf.get("worker.heartbeat.frequency.secs") or 1)
        limit = float(self.conf.get("supervisor.worker.timeout.secs") or 30)
        pauses = self.worker.pauses
        told = False
        while True:
            pauses.waiting(every)
            if self.stop.wait(every):
                return
            pauses.woke()       # late: the process was paused; the loop is fenced
            if not self.worker.is_alive():
                return
            try:
                since = self.worker.loop_stuck(limit)
            except Exception:   # never the end of the beats
                log.exception("worker %s:%d: checking its loop failed", self.tid, self.port)
                since = None
            if since is not None and not told:
                log.error("worker %s:%d: its loop has been in one pass since %s (more than "
                          "supervisor.worker.timeout.secs, %g s); its heartbeat stays at that "
                          "time, so its supervisor restarts it", self.tid, self.port,
                          time.strftime("%H:%M:%S", time.localtime(since)), limit)
                self.errors_due.set()      # the main thread sends the report now
                self.changed.set()
            told = since is not None
            try:
                self.heartbeat_local(since)
            except OSError as exc:
                log.warning("worker %s:%d: local heartbeat failed: %s", self.tid, self.port,
                            exc)

    def _loop(self) -> int:
        zk_every = float(self.conf.get("task.heartbeat.frequency.secs") or 3)
        sync_every = float(self.conf.get("supervisor.monitor.frequency.secs") or 3)
        next_zk = next_sync = 0.0
        while not self.stop.is_set():
            now = time.monotonic()
            if not self.worker.is_alive():
                log.error("worker %s:%d: its executors stopped; exiting", self.tid, self.port)
                return 1
            try:
                if self.changed.is_set() or now >= next_sync:
                    self.changed.clear()
                    next_sync = now + sync_every
                    if not self.sync():
                        return 0
                if now >= next_zk or self.errors_due.is_set():
                    self.errors_due.clear()
                    next_zk = now + zk_every
                    self.heartbeat_zk()
            except StateError as exc:
                log.warning("worker %s:%d: state store: %s", self.tid, self.port, exc)
            if self.worker.pauses.fenced:   # the executors wait for the assignment
                next_sync = min(next_sync, time.monotonic() + FENCED_SYNC_SECS)
            wait = max(0.01, min(next_zk, next_sync) - time.monotonic())
            self.changed.wait(wait)
        return 0

    def heartbeat_local(self, at: float | None = None) -> None:
        """A local heartbeat saying the worker was alive at ``at`` (``time.time()``; None:
        now)."""
        write_local_heartbeat(self.worker_dir / "heartbeats", {
            "time_secs": time.time() if at is None else at, "topology_id": self.tid,
            "port": self.port,
            "executors": [list(e) for e in self.executors], "pid": os.getpid()})

    def heartbeat_zk(self) -> None:
        """Send the errors recorded since the last beat to ``/errors``, then write this
        worker's beat to ``/workerbeats``. Called on the main loop's thread.

        The errors go first and each on its own, so neither a beat that cannot be written nor
        one entry that cannot be stored loses the others. A beat the store refuses is logged
        as one line, repeated only when the reason changes or every
        :data:`BEAT_FAILURE_LOG_SECS`."""
        self._send_errors()
        self.seq += 1
        stats = self.worker.stats()
        extra: dict[str, Any] = {"spout_pending": self.worker.spout_pending()}
        if self.metrics_endpoint is not None:
            from squall.metrics.openmetrics import render, worker_families
            self.metrics_endpoint.update(render(worker_families(
                stats, self.tid, self.worker.host, self.port)))
            extra["metrics_port"] = self.metrics_endpoint.port
        try:
            self.state.write_worker_beat(self.tid, self.node, self.port, {
                **stats, **extra, "seq": self.seq, "topology_id": self.tid, "node": self.node,
                "port": self.port, "host": self.worker.host})
        except StateError as exc:
            self._beat_failed(str(exc))
            return
        if self._beat_failure is not None:
            log.info("worker %s:%d: its beat is written again", self.tid, self.port)
            self._beat_failure = None

    def _send_errors(self) -> None:
        """Write the drained errors one by one; an entry the store refuses is logged (one line
        for all of this beat's) and the others are still written."""
        failed: list[str] = []
        for entry in self.worker.drain_errors():
            component = str(entry.get("component") or "unknown")
            try:
                self.state.report_error(self.tid, component, entry)
            except StateError as exc:
                failed.append(f"{component!r}: {exc}")
        if failed:
            log.warning("worker %s:%d: %d error report(s) could not be written to /errors "
                        "(%s)", self.tid, self.port, len(failed), "; ".join(failed[:3]))

    def _beat_failed(self, reason: str) -> None:
        now = time.monotonic()
        if self._beat_failure is not None and self._beat_failure[0] == reason \
                and now - self._beat_failure[1] < BEAT_FAILURE_LOG_SECS:
            return
        self._beat_failure = (reason, now)
        log.error("worker %s:%d: its beat was not written (nimbus and the UI see no stats "
                  "from it): %s", self.tid, self.port, reason)

    def sync(self) -> bool:
        """Follow the assignment and status; False when this worker must exit."""
        # the status first: nimbus writes a rebalanced topology's assignment before its status
        # goes back to active, so an active status read here comes with the new assignment
        epoch = self.worker.pauses.epoch()      # a read begun before a pause proves nothing
        base = self.state.get_storm(self.tid, watch=self._on_change)
        assignment = self.state.get_assignment(self.tid, watch=self._on_change)
        if base is None or assignment is None:
            log.info("worker %s:%d: topology gone; exiting", self.tid, self.port)
            return False
        if my_executors(assignment, self.node, self.port) != self.executors:
            log.info("worker %s:%d: its executors were reassigned; exiting", self.tid, self.port)
            return False
        self.worker.pauses.confirmed(epoch)     # fenced after a pause: the executors run on
        mapping = task_to_worker(assignment)
        if mapping != self.task_to_worker:
            self.task_to_worker = mapping
            self.worker.update_assignment(mapping)
        self._apply_status(base)
        self.log_levels.apply(self.state.get_log_config(self.tid, watch=self._on_change))
        return True

    def _apply_status(self, base: dict[str, Any]) -> None:
        """Hand the status and debug sampling of ``/storms/<topology-id>`` to the worker.
        Never waits for its loop (a component may hold it in a call for longer than nimbus
        waits for this thread's ZooKeeper beats): the loop applies the latest wanted state
        when it gets to it (``Worker.set_active``, ``Worker.set_debug``)."""
        from squall.runtime.event_log import settings_of
        debug = settings_of(self.conf, base.get("component_debug"),
                            self.worker.component_confs())
        if debug != self.debug:
            self.debug = debug
            self.worker.set_debug(debug)
            log.info("worker %s:%d: emits sampled into the events log: %s", self.tid,
                     self.port, {k: v for k, v in debug.items() if v} or "none")
        active = base.get("status") == "active"
        if active != self.active:
            self.active = active
            self.worker.set_active(active)
            log.info("worker %s:%d %s", self.tid, self.port,
                     "activating" if active else "deactivating")

    def _shutdown(self, transport: Any) -> None:
        from squall.plugin_manager import notify
        self._report_errors()   # first: a worker stopped for a stuck loop may be killed soon
        try:
            self.worker.shutdown(stopping=lambda: notify("squall_worker_stopping",
                                                         topology_id=self.tid, port=self.port))
        except Exception:  # shutting down anyway
            log.exception("worker shutdown failed")
        try:        # seed 002, step 8: its beat goes with it
            self.state.remove_worker_beat(self.tid, self.node, self.port)
        except Exception as exc:
            log.warning("worker %s:%d could not remove its beat: %s", self.tid, self.port, exc)
        self._report_errors()
        try:
            transport.close()
        except Exception:
            log.debug("closing the transport failed", exc_info=True)

    def _report_errors(self) -> None:
        """Send the errors recorded since the last beat to ``/errors`` (at shutdown: best
        effort)."""
        for entry in self.worker.drain_errors():
            try:
                self.state.report_error(self.tid, str(entry.get("component")), entry)
            except Exception:
                break

    def report_start_failure(self, exc: BaseException) -> None:
        """Tell ``/errors`` why this worker could not start (best effort: a store that cannot
        be reached is only logged)."""
        if self.started:
            return
        import traceback
        from squall.errors import SquallError
        entry = {"component": WORKER_COMPONENT, "task": 0, "start_failure": True,
                 "error": "".join(traceback.format_exception(type(exc), exc,
                                                             exc.__traceback__)),
                 "time_secs": int(time.time()), "node": self.node, "port": self.port,
                 "host": str(self.conf.get("storm.local.hostname") or "")}
        try:
            if self.store is None:
                from squall import drivers
                from squall.state.cluster_state import ClusterState
                self.store = drivers.driver("state", self.conf)
                self.store.start()
                self.state = ClusterState(self.store, self.conf)
            self.state.report_error(self.tid, WORKER_COMPONENT, entry)
        except (SquallError, OSError) as err:
            log.warning("worker %s:%d could not report its start failure: %s", self.tid,
                        self.port, err)

    def close(self) -> None:
        if self.metrics_endpoint is not None:
            self.metrics_endpoint.stop()
        if self.store is not None:
            self.store.close()
        (self.worker_dir / "pids" / str(os.getpid())).unlink(missing_ok=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="squall-worker")
    p.add_argument("--topology-id", required=True)
    p.add_argument("--supervisor-id", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--worker-id", required=True)
    p.add_argument("--local-dir", required=True)
    p.add_argument("--log-file", default=None)
    p.add_argument("--log-max-bytes", type=int, default=0)
    p.add_argument("--log-backups", type=int, default=0)
    return p.parse_args(argv)


def enable_crash_traces() -> None:
    """Make a crash of the interpreter (SIGSEGV, SIGFPE, SIGABRT, SIGBUS, SIGILL: a fault in
    a C extension) write every thread's Python stack to the process's own stderr, the
    worker's ``.out`` file, before the process dies of it (its supervisor still sees the
    signal). Called first in :func:`main`, before ``sys.stderr`` goes to the log."""
    stream = sys.__stderr__
    if stream is None:              # started without a stderr: nowhere to write it
        return
    try:
        faulthandler.enable(file=stream, all_threads=True)
    except (OSError, ValueError) as exc:    # a stderr without a usable descriptor
        log.warning("no crash traces in this worker's .out: %s", exc)


def main(argv: list[str] | None = None) -> int:
    enable_crash_traces()
    args = parse_args(argv)
    if args.log_file:
        from squall.daemon.log_files import setup_worker_logging
        setup_worker_logging(Path(args.log_file), args.log_max_bytes, args.log_backups,
                             args.port)
    else:
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s %(levelname)s [worker {args.port}] %(name)s: "
                                   "%(message)s", stream=sys.stdout)
    proc = WorkerProcess(args)

    def stop(*_: Any) -> None:
        proc.stop.set()
        proc.changed.set()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    from squall.errors import SquallError
    try:
        return proc.run()
    except SquallError as exc:
        log.error("worker %s:%d cannot run: %s", args.topology_id, args.port, exc)
        proc.report_start_failure(exc)
        return 1
    # the supervisor restarts us; say why first. A BaseException too: sys.exit() or a
    # KeyboardInterrupt raised by a component's initialize (SIGTERM and SIGINT only set
    # ``proc.stop``: they raise nothing here)
    except BaseException as exc:
        log.exception("worker %s:%d failed", args.topology_id, args.port)
        proc.report_start_failure(exc)
        return 1
    finally:
        proc.close()
        logging.shutdown()


if __name__ == "__main__":
    sys.exit(main())
