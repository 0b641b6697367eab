"""LocalCluster: the whole kernel in the calling process, for development and tests.

Workers run as threads of this process (``topology.workers`` of them per topology) and talk
through the in-process ``local`` transport, so tuples between workers are serialized exactly as
in a cluster while module-level state stays shared with the caller. Cluster state lives in the
embedded ``memory`` state store with the layout of a real cluster (``cluster.state``:
``/storms``, ``/assignments``, ``/workerbeats``, ``/errors``); a monitor thread writes worker
beats and errors there every ``task.heartbeat.frequency.secs`` and restarts a worker whose loop
died (``topology.worker.die.on.error``), as a supervisor would. Each topology's memory state
(:mod:`squall.runtime.memory_stores`) is its own, kept across such restarts and rebalances
and dropped when it is killed.

>>> from squall import LocalCluster
>>> with LocalCluster() as cluster:
...     pass
"""
from __future__ import annotations

import itertools
import logging
import os
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from squall import drivers
from squall.api.topology import Topology, check_topology_name
from squall.config import OVERRIDES_KEY
from squall.errors import (
    AlreadyAliveError, ConfigError, NotAliveError, PluginLoadError, PluginNotFoundError,
    TopologyError,
)
from squall.runtime import gc_tuning
from squall.runtime.errors import (
    KEEP_PER_COMPONENT, WORKER_COMPONENT, death_reason, raised_in, task_in,
)
from squall.runtime.memory_stores import MemoryStores
from squall.runtime.stats import executor_stats, stall_reason
from squall.runtime.system import add_system_components, cap_parallelism
from squall.runtime.task import TaskState
from squall.runtime.worker import LAST_METRICS_SECS, Worker
from squall.security import scrubber
from squall.state.memory import NAMESPACE_KEY

log = logging.getLogger(__name__)
_ids = itertools.count(1)
LOCAL_DEFAULTS = {"squall.transport": "local", "squall.state": "memory"}
#: driver keys a LocalCluster does not follow: it places executors with :func:`assign_even`
#: and keeps its state in the in-process ``memory`` store, whatever they name
IGNORED_KEYS = {"squall.scheduler": "even", "squall.state": "memory"}


def warn_ignored_keys(conf: dict[str, Any]) -> None:
    """One warning per key of :data:`IGNORED_KEYS` that ``conf`` sets to another value than
    the local one and the shipped default (every conf read from files holds the default:
    ``squall.state: zookeeper``, said quietly, as for the transport)."""
    from squall import config
    shipped = config.defaults()
    for key, local in IGNORED_KEYS.items():
        value = conf.get(key)
        if value is not None and value != local and value != shipped.get(key):
            log.warning("LocalCluster ignores %s=%r: it always uses %r (the setting applies "
                        "on a cluster)", key, value, local)


def base_conf(conf: dict[str, Any] | None = None) -> dict[str, Any]:
    from squall import config
    merged = config.defaults()
    merged.update(LOCAL_DEFAULTS)
    merged.update(conf or {})
    return merged


def _kept_locally(key: str, value: Any) -> bool:
    """Whether a LocalCluster keeps ``value`` of ``key`` from its own conf (a config file,
    ``LocalCluster(conf)``) or the topology's, instead of its local default: an in-process
    transport is kept (a third party's, chosen in YAML); one between processes, a
    cluster's choice in a shared config file, gives way to ``local``, said in the log (the
    shipped default, which every conf holds, quietly), and so does one that cannot be
    loaded here (a cluster's transport whose extra this install lacks), said with why. The
    submit conf and ``-c`` choose as they are (and are refused if unusable here): the
    caller does not ask this of them."""
    if key != "squall.transport" or value in (None, LOCAL_DEFAULTS[key]):
        return False
    from squall import config
    if value == config.defaults().get(key):     # not chosen: the shipped default, quietly
        return False
    try:
        if drivers.driver_class("transport", {key: value}).in_process:
            return True
    except PluginNotFoundError:     # an unknown name: refused by validate with its did-you-mean
        return True
    except PluginLoadError as exc:
        # not usable here, so not this process's transport: never kept, never swallowed
        log.info("squall.transport %r of the configuration cannot be used here (%s): this "
                 "LocalCluster uses %r", value, exc, LOCAL_DEFAULTS[key])
        return False
    log.info("squall.transport %r of the configuration is for clusters: this LocalCluster "
             "uses %r", value, LOCAL_DEFAULTS[key])
    return False


def _check_transport(conf: dict[str, Any]) -> None:
    """LocalCluster's workers share one process, named by ports 1..n on host "local": a
    transport over sockets cannot reach them, so it is refused rather than left hanging."""
    cls = drivers.driver_class("transport", conf)
    if not cls.in_process:
        raise ConfigError(
            f"LocalCluster runs every worker in this process and needs an in-process transport "
            f"(squall.transport: local); {conf.get('squall.transport')!r} is for clusters "
            f"(squall submit)")


class _Running:
    def __init__(self, name: str, topology_id: str, topology: Topology,
                 conf: dict[str, Any]) -> None:
        self.name = name
        self.id = topology_id
        self.topology = topology
        self.conf = conf
        self.workers: list[Worker] = []
        self.transport: Any = None
        self.status = "active"
        self.launch_time = time.time()
        self.errors: dict[str, list[dict[str, Any]]] = {}
        self.restarts = 0
        #: why it runs no worker ("" while it runs): its workers failed to start again after
        #: a rebalance; the monitor starts them again, with backoff (:meth:`LocalCluster._down`)
        self.down = ""
        #: failed starts in a row while down, and when (``time.monotonic()``) the next is
        self.failed_starts = 0
        self.next_start = 0.0
        #: the error entry of its last start's failed worker, if one failed (kept in
        #: ``errors`` too)
        self.start_failure: dict[str, Any] | None = None
        #: what of its state the monitor could not write at its last try (said once, not at
        #: each check)
        self.unwritten: set[str] = set()
        #: what its memory state backends keep: shared by its workers, kept across their
        #: restarts and rebalances, cleared when it is killed
        self.memory_stores = MemoryStores()

    def record(self, what: str, write: Callable[[], None]) -> None:
        """Call ``write``, the monitor's write of ``what`` to the state store; a failure is
        logged once until ``what`` is written again (a beat's size changes with every try)."""
        try:
            write()
        except Exception as exc:
            self.cannot(what, f"cannot record the {what} of topology {self.name}: {exc}")
        else:
            self.unwritten.discard(what)

    def cannot(self, what: str, message: str) -> None:
        """Log ``message`` (why the monitor could not do ``what``) unless it failed already."""
        if what not in self.unwritten:
            log.warning("%s", message)
            self.unwritten.add(what)


def assign_even(topology: Topology, num_workers: int) -> list[list[tuple[int, int]]]:
    """Executor ranges per worker, spread like the even scheduler (``assign_local``)."""
    from squall.scheduling.local import assign_local
    from squall.scheduling.model import details_from_topology
    n = max(1, num_workers)
    placed = assign_local(details_from_topology("local", "local", {}, topology, n), n)
    slots: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for ex, index in sorted(placed.items()):
        slots[index].append((ex.start_task, ex.end_task))
    return [s for s in slots if s]


class LocalCluster:
    """Run topologies in this process. Use as a context manager; leaving it stops everything."""

    def __init__(self, conf: dict[str, Any] | None = None, *,
                 on_worker_start: Any = None) -> None:
        """``on_worker_start(worker)``, if given, runs on each worker's loop thread after its
        components are initialized and before its spouts are activated (testing hooks)."""
        from squall.state.cluster_state import ClusterState
        from squall.plugin_manager import configure
        self.conf = configure(base_conf(conf))
        # components that open the cluster state store themselves (SparkSpout's progress)
        # reach this cluster's in-process tree, as they reach ZooKeeper on a cluster
        if not self.conf.get(NAMESPACE_KEY):
            self.conf[NAMESPACE_KEY] = f"local-cluster-{next(_ids)}-{os.getpid()}"
        self._on_worker_start = on_worker_start
        drivers.validate_conf(self.conf)
        warn_ignored_keys(self.conf)
        gc_tuning.thresholds(self.conf)             # a bad value fails here, before anything runs
        self._topologies: dict[str, _Running] = {}
        self._lock = threading.RLock()
        self._store = drivers.driver("state", {**self.conf, "squall.state": "memory"})
        self._store.start()
        self.state = ClusterState(self._store, self.conf)
        self.state.setup()
        self._stop = threading.Event()
        self._monitor = threading.Thread(target=self._monitor_loop, daemon=True,
                                         name="squall-local-monitor")
        self._monitor.start()
        self._restore_gc = gc_tuning.apply(self.conf)

    # -- lifecycle -----------------------------------------------------------------------------
    def __enter__(self) -> LocalCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def shutdown(self, timeout: float | None = None) -> None:
        """Kill every topology and stop; a second call does nothing (leaving the ``with``
        block calls it). ``timeout`` (None: :data:`EXIT_SECS`) bounds it as
        :meth:`kill_topology`'s bounds a kill, for every topology together: a component
        still in a call then is left running in its thread and its cleanup is skipped, one
        still in its cleanup (``close``) is left running in it (a warning names either).
        Give more to wait longer for such calls."""
        if timeout is None:
            timeout = EXIT_SECS
        deadline = _deadline(timeout)
        if self._stop.is_set():
            return
        self._stop.set()
        with self._lock:
            for name in list(self._topologies):
                self._kill(name, 0.0, deadline)
        if self._monitor.is_alive() and threading.current_thread() is not self._monitor:
            left = _left(deadline)
            self._monitor.join(5 if left is None else min(5, left))
        self._store.close()
        self._restore_gc()

    def submit_topology(self, name: str, conf: dict[str, Any] | None, topology: Topology) -> str:
        """Start ``topology`` under ``name``; returns the topology id. What a component's
        ``initialize`` raises ends the submit: an Exception as it is, a ``sys.exit()`` (any
        BaseException but a KeyboardInterrupt on the main thread) as a TopologyError naming
        the component."""
        if not isinstance(topology, Topology):
            raise TopologyError(f"submit_topology needs a Topology (from create_topology()), "
                                f"got {type(topology).__name__}")
        check_topology_name(name)        # as a cluster would: a name tested here submits
        with self._lock:
            if self._stop.is_set():
                raise TopologyError(f"cannot submit {name!r}: this LocalCluster is shut down")
            if name in self._topologies:
                raise AlreadyAliveError(f"topology {name!r} is already running")
            merged = {**self.conf, **topology.conf, **(conf or {}), "topology.name": name}
            overrides = merged.get(OVERRIDES_KEY) or {}
            for key, value in LOCAL_DEFAULTS.items():
                chosen = key in (conf or {}) or key in overrides   # as they are, see below
                if not chosen and not _kept_locally(key, merged.get(key)):
                    merged[key] = value
            merged.update(overrides)   # -c beats topology conf
            from squall import config
            config.validate(merged)
            _check_transport(merged)
            from squall.multilang.streamparse import check_mode
            check_mode(topology, merged)
            from squall.plugin_manager import notify, validate_topology
            validate_topology(topology, merged)
            full = add_system_components(cap_parallelism(topology, merged), merged)
            topology_id = f"{name}-{next(_ids)}-{int(time.time())}"
            run = _Running(name, topology_id, full, merged)
            self._start_workers(run)
            self._topologies[name] = run
            self._write_state(run)
            notify("squall_topology_submitted", name=name, topology_id=topology_id, conf=merged)
            return topology_id

    def _start_workers(self, run: _Running) -> None:
        run.start_failure = None
        layout = assign_even(run.topology, int(run.conf.get("topology.workers") or 1))
        ports = list(range(1, len(layout) + 1))
        task_to_worker = {t: ("local", port) for port, execs in zip(ports, layout)
                          for s, e in execs for t in range(s, e + 1)}
        if len(layout) > 1:
            run.transport = drivers.driver("transport", run.conf)
        started = []
        try:
            for port, execs in zip(ports, layout):
                w = Worker(conf=run.conf, topology=run.topology, topology_id=run.id, port=port,
                           executors=execs, task_to_worker=task_to_worker,
                           transport=run.transport, host="local",
                           memory_stores=run.memory_stores)
                try:
                    self._launch(w)
                except BaseException as exc:
                    _keep_start_failure(run, w, exc)
                    self._halt(w)       # built (initialized) though not started: cleaned up
                    if isinstance(exc, Exception) or (
                            isinstance(exc, KeyboardInterrupt)
                            and threading.current_thread() is threading.main_thread()):
                        raise   # a KeyboardInterrupt on the main thread may be a Ctrl-C
                    raise start_error(run.name, w, exc) from exc
                started.append(w)
                if self._on_worker_start is not None:
                    w.call_on_loop(lambda w=w: self._on_worker_start(w))
        except BaseException:
            for w in started:
                self._halt(w)
            if run.transport is not None:
                run.transport.close()
            raise
        run.workers = started
        run.down = ""           # started: up again, if it was down (a rebalance, the monitor)
        run.failed_starts = 0
        if run.status == "active":
            for w in started:
                w.activate()

    def _stop_workers(self, run: _Running, deadline: float | None = None) -> None:
        """Stop the (deactivated) workers of ``run``, keeping their recent errors; each
        worker's stop is bounded by what is left until ``deadline`` (see :func:`_left`)."""
        for w in run.workers:
            for comp, errs in w.errors.recent().items():
                run.errors.setdefault(comp, []).extend(errs)
                run.errors[comp] = run.errors[comp][-10:]
            self._halt(w, _left(deadline))
        run.workers = []
        if run.transport is not None:
            run.transport.close()
            run.transport = None

    def _get(self, name: str) -> _Running:
        run = self._topologies.get(name)
        if run is None:
            raise NotAliveError(f"no topology named {name!r} is running; running: "
                                f"{', '.join(sorted(self._topologies)) or 'none'}")
        return run

    def kill_topology(self, name: str, wait: float = 0.0, timeout: float | None = None) -> None:
        """Deactivate, wait ``wait`` seconds for tuples in flight, stop and forget it.

        ``timeout`` bounds the deactivation and the stop (not ``wait``): each worker gets
        what is left of it, at least half a second (by default 10 s each). A component
        blocked in a call, or in its cleanup (``close``), is not interrupted: it may still
        run after this returns."""
        with self._lock:
            self._kill(name, wait, _deadline(timeout))

    def _kill(self, name: str, wait: float, deadline: float | None) -> None:
        """:meth:`kill_topology` with the lock held; ``deadline`` (``time.monotonic()``) for
        the deactivation and the stop, moved on by ``wait``."""
        run = self._get(name)
        for w in run.workers:
            left = _left(deadline)
            # without a wait there is nothing to settle for: the stop, below, waits
            # for spouts on threads of their own (one blocked in a call held both); a loop
            # held in a component's call takes the deactivation when it is free
            w.deactivate(settle=wait > 0, **({} if left is None else {"timeout": left}))
        _wait_drained(run, wait)
        # every worker's last metrics points while every worker still runs: a consumer task
        # in one worker gets those of the workers stopped after it. The second round sends
        # nothing (once per worker): once every message between the workers has arrived, it
        # waits for each worker's consumers to take what the others sent them
        for second in (False, True):
            if second:
                _wait_arrived(run.workers, _share(deadline))
            for w in run.workers:
                w.send_last_metrics(_share(deadline))
        self._stop_workers(run, None if deadline is None else deadline + max(0.0, wait or 0))
        run.memory_stores.clear()       # its memory state goes with its workers
        del self._topologies[name]
        self.state.remove_topology(run.id)
        from squall.plugin_manager import notify
        notify("squall_topology_killed", name=name, topology_id=run.id)

    def activate(self, name: str) -> None:
        with self._lock:
            run = self._get(name)
            run.status = "active"
            for w in run.workers:
                w.activate()
            self.state.update_storm(run.id, status="active")

    def deactivate(self, name: str) -> None:
        with self._lock:
            run = self._get(name)
            run.status = "inactive"
            for w in run.workers:
                w.deactivate()
            self.state.update_storm(run.id, status="inactive")

    def rebalance(self, name: str, num_workers: int | None = None,
                  executors: dict[str, int] | None = None, wait: float = 0.0) -> None:
        """Deactivate, wait up to ``wait`` s for in-flight tuples, re-lay executors and workers
        (task ids unchanged; old instances stop before new ones start), reactivate.

        When the new layout does not start (a component's ``initialize`` raised), the
        topology is restarted as it was and that error is raised; when that restart fails
        too, the topology is down (:meth:`_down`: the monitor starts it again with backoff)
        and a TopologyError says so."""
        if num_workers is not None and (num_workers.__class__ is bool
                                        or not isinstance(num_workers, int) or num_workers < 1):
            raise TopologyError(f"rebalance: num_workers must be an integer >= 1, got "
                                f"{num_workers!r}")
        with self._lock:
            run = self._get(name)
            previous = run.status
            topology = run.topology.with_parallelism(executors or {})
            run.status = "rebalancing"
            for w in run.workers:
                w.deactivate()
            _wait_drained(run, wait)
            self._stop_workers(run)
            before = run.topology, run.conf
            if num_workers is not None:
                run.conf = {**run.conf, "topology.workers": int(num_workers)}
            run.topology = topology
            run.status = "active" if previous != "inactive" else "inactive"
            try:
                self._start_workers(run)
            except BaseException as exc:
                # the new layout did not start (a component's initialize raised): the
                # topology goes on as it was, and the caller gets the error
                run.topology, run.conf = before
                log.error("rebalance of %s failed; restarting it as it was", name)
                try:
                    self._start_workers(run)
                except BaseException as again:
                    # as it was neither: down, and restarted by the monitor until it starts
                    self._down(run, again)
                    if not isinstance(again, Exception):
                        raise
                    raise TopologyError(
                        f"rebalance of {name!r} failed ({_one_line(exc)}) and so did its "
                        f"restart as it was: the topology is down, and is being restarted "
                        f"until its components initialize; {run.down}") from again
                raise
            finally:
                self._write_state(run)

    # -- state and monitoring ------------------------------------------------------------------
    def _write_state(self, run: _Running) -> None:
        topo = run.topology
        self.state.set_storm(run.id, {
            "name": run.name, "launch_time": int(run.launch_time), "status": run.status,
            "status_reason": run.down, "num_workers": len(run.workers), "owner": "local",
            "component_executors": {c: len(topo.executors(c)) for c in topo.components}})
        now = int(time.time())
        self.state.set_assignment(run.id, {
            "code_dir": "", "node_host": {"local": "local"},
            "executor_node_port": {f"[{s}, {e}]": ["local", w.port] for w in run.workers
                                   for s, e in w.executor_ranges},
            "executor_start_time_secs": {f"[{s}, {e}]": now for w in run.workers
                                         for s, e in w.executor_ranges},
            "worker_resources": {}})

    @staticmethod
    def _launch(worker: Worker) -> None:
        """Build a worker, announce it (``squall_worker_start``), start its loop."""
        from squall.plugin_manager import worker_starting
        worker.build()
        worker_starting(worker.topology_id, worker.port, worker.conf)
        worker.start()

    @staticmethod
    def _halt(worker: Worker, timeout: float | None = None) -> None:
        """Shut a worker down (in ``timeout`` s; None: the worker's default) and announce it
        (``squall_worker_stopping`` while it does, ``squall_worker_stop`` after)."""
        from squall.plugin_manager import notify
        bound = {} if timeout is None else {"timeout": timeout}
        worker.shutdown(stopping=lambda: notify("squall_worker_stopping",
                                                topology_id=worker.topology_id,
                                                port=worker.port), **bound)
        notify("squall_worker_stop", topology_id=worker.topology_id, port=worker.port)

    def _monitor_loop(self) -> None:
        freq = float(self.conf.get("task.heartbeat.frequency.secs") or 3)
        while not self._stop.wait(min(freq, 0.5)):
            with self._lock:
                for run in list(self._topologies.values()):
                    try:
                        self._check(run)
                    # one topology must not stop the monitor (a component's sys.exit() in
                    # its cleanup neither)
                    except BaseException as exc:
                        run.cannot("check", f"monitoring topology {run.name} failed: {exc}")

    def _down(self, run: _Running, exc: BaseException) -> None:
        """The workers of ``run`` failed to start, ending with ``exc``: it is
        down until the monitor starts them (:meth:`_restart`), after a wait that doubles with
        each failed start in a row, from :data:`RESTART_FIRST_SECS` up to
        :data:`RESTART_CAP_SECS`, as a supervisor relaunches a failing worker. The error is
        kept in its topology's errors (``__worker`` when no component raised it) and is its
        status reason meanwhile."""
        run.failed_starts += 1
        wait = min(RESTART_CAP_SECS, RESTART_FIRST_SECS * 2 ** (run.failed_starts - 1))
        run.next_start = time.monotonic() + wait
        failure = run.start_failure     # None: no worker's launch raised it
        lines = str(failure.get("error") or "").strip().splitlines() if failure else []
        where = f" ({failure['host']}:{failure['port']})" if failure else ""
        run.down = (f"workers fail to start{where}: {lines[-1] if lines else _one_line(exc)}; "
                    f"started again with backoff "
                    f"({run.failed_starts} failed in a row, the next try {wait:g} s after "
                    f"the last)")
        log.error("topology %s is down: %s", run.name, run.down)
        if failure:
            comp = str(failure["component"])
            run.record(f"errors of component {comp}",
                       lambda: self.state.report_error(run.id, comp, failure))
        self._write_state(run)

    def _restart(self, run: _Running) -> None:
        """Start the workers of ``run``, down since they failed to start (:meth:`_down`)."""
        try:
            self._start_workers(run)
        except BaseException as exc:    # sys.exit() in an initialize too: the monitor goes on
            self._down(run, exc)
            return
        run.restarts += 1
        log.warning("topology %s started again", run.name)
        self._write_state(run)

    def _check(self, run: _Running) -> None:
        """Record each worker's errors and beat (each on its own: one that cannot be
        written is said once and keeps nothing else from happening), restart dead ones; a
        topology that is down (:meth:`_down`) is started again when its wait is over."""
        if run.down:
            if time.monotonic() >= run.next_start:
                self._restart(run)
            return
        for i, w in enumerate(run.workers):
            w.loop_stuck()      # reported once as an error; no supervisor here to restart it
            self._record_errors(run, w)
            if w.is_alive():
                run.record(f"beat of worker {w.port}", lambda w=w: self.state.write_worker_beat(
                    run.id, "local", w.port, w.stats()))
                continue
            log.warning("worker %s:%d of %s died; restarting it", w.host, w.port, run.name)
            self._halt(w)
            self._record_errors(run, w)     # what it recorded as it died: why it did
            for comp, errs in w.errors.recent().items():
                run.errors[comp] = (run.errors.get(comp, []) + errs)[-10:]
            fresh = Worker(conf=run.conf, topology=run.topology, topology_id=run.id,
                           port=w.port, executors=w.executor_ranges,
                           task_to_worker=w.outbox.task_to_worker,
                           transport=run.transport, host="local",
                           memory_stores=run.memory_stores)
            try:
                self._launch(fresh)
            except BaseException:   # sys.exit() in an initialize too: the monitor goes on
                log.exception("restarting worker %d of %s failed", w.port, run.name)
                self._halt(fresh)   # the components whose initialize returned are cleaned up
                continue
            run.workers[i] = fresh
            run.restarts += 1
            if run.status == "active":
                fresh.activate()

    def _record_errors(self, run: _Running, w: Worker) -> None:
        """Write the errors ``w`` recorded since the last call to the state store."""
        for err in w.drain_errors():
            run.record(f"errors of component {err.get('component')}",
                       lambda err=err: self.state.report_error(run.id, err["component"], err))

    # -- observation ---------------------------------------------------------------------------
    def get_topology(self, name: str) -> Topology:
        return self._get(name).topology

    def get_topology_info(self, name: str) -> dict[str, Any]:
        """Status, uptime, workers and per-component counters and recent errors."""
        run = self._get(name)
        components: dict[str, dict[str, Any]] = {}
        errors = {c: list(e) for c, e in run.errors.items()}
        executors = []
        windows: dict[str, list[Any]] = {}
        for w in run.workers:
            for ex in w.executors:
                st = executor_stats(ex)
                st["worker"] = w.port
                executors.append(st)
                comp = components.setdefault(ex.component_id, {
                    "kind": ex.kind, "executors": 0, "tasks": 0, "emitted": 0,
                    "transferred": 0, "acked": 0, "failed": 0, "executed": 0})
                if "windows" in st:
                    windows.setdefault(ex.component_id, []).append(st["windows"])
                comp["executors"] += 1
                comp["tasks"] += len(ex.tasks)
                for key in ("emitted", "transferred", "acked", "failed", "executed"):
                    comp[key] += st[key]
            for comp_id, errs in w.errors.recent().items():
                errors.setdefault(comp_id, []).extend(errs)
        from squall.metrics.stats import aggregate
        for comp_id, snaps in windows.items():
            components[comp_id]["windows"] = aggregate(snaps)
        return {"name": run.name, "id": run.id, "status": run.status,
                "status_reason": run.down or death_reason(errors, time.time())
                or stall_reason(executors),
                "uptime_secs": int(time.time() - run.launch_time),
                "num_workers": len(run.workers), "num_executors": len(executors),
                "num_tasks": len(run.topology.all_tasks()), "components": components,
                "executors": executors,
                "workers": [{"worker": w.port, "host": "localhost",
                             "uptime_secs": int(time.time() - w.start_time), **w.counters()}
                            for w in run.workers],
                "errors": {c: e[-10:] for c, e in errors.items()}}

    def topologies(self) -> list[str]:
        return sorted(self._topologies)

    def workers(self, name: str) -> list[Worker]:
        return list(self._get(name).workers)


#: the least time a bounded stop gives each worker (one not held in a call stops well within it)
MIN_STOP_SECS = 0.5
#: how long :meth:`LocalCluster.shutdown` (leaving the ``with`` block) waits, every topology
#: together, for what is still in a call: a worker's loop takes its deactivation and ends its
#: pass, and components on threads of their own leave their calls, within milliseconds unless
#: held in one (a loop held in a call made leaving take 11 s)
EXIT_SECS = 2.0


#: the wait before the monitor's first start of a topology that is down (its workers failed to
#: start), doubled after each further failed start up to RESTART_CAP_SECS
RESTART_FIRST_SECS = 1.0
RESTART_CAP_SECS = 60.0


def _failed_task(worker: Worker, exc: BaseException) -> TaskState | None:
    """The task of ``worker`` whose call raised ``exc`` (its start), if any did."""
    return task_in(raised_in(exc.__traceback__),
                   [t for ex in worker.executors for t in ex.tasks], worker.executors)


def _start_failure(worker: Worker, exc: BaseException) -> str:
    """What ended ``worker``'s start, in one line: the component and task that raised ``exc``
    (if one did), the exception and where it was raised."""
    ts = _failed_task(worker, exc)
    where = "" if ts is None else f"component {ts.component_id!r} (task {ts.task}) raised "
    frames = traceback.extract_tb(exc.__traceback__)
    at = f" ({frames[-1].filename}, line {frames[-1].lineno})" if frames else ""
    return f"{where}{_one_line(exc)}{at}"


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _keep_start_failure(run: _Running, worker: Worker, exc: BaseException) -> None:
    """Keep ``exc``, which ended ``worker``'s start, as ``run.start_failure`` and among its
    errors (``start_failure: true``, as a cluster's worker reports one), under the component
    whose call raised it (``__worker`` when none did); secret values of the conf are
    masked. Its last line says what failed (:func:`_start_failure`)."""
    ts = _failed_task(worker, exc)
    comp, task = (WORKER_COMPONENT, 0) if ts is None else (ts.component_id, ts.task)
    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    text = scrubber(run.conf)(f"{trace}{_start_failure(worker, exc)}")
    entry = {"component": comp, "task": task, "error": text, "time_secs": int(time.time()),
             "host": worker.host, "port": worker.port, "start_failure": True}
    run.start_failure = entry
    run.errors[comp] = (run.errors.get(comp, []) + [entry])[-KEEP_PER_COMPONENT:]


def start_error(name: str, worker: Worker, exc: BaseException) -> TopologyError:
    """The error a topology's start ends with when a component raised ``exc``, a
    BaseException that is no Exception (``sys.exit()`` in an ``initialize``; a
    KeyboardInterrupt only off the main thread, where it is no Ctrl-C): one TopologyError
    naming the component and where, not the end of the caller's program."""
    return TopologyError(f"topology {name!r} failed to start: {_start_failure(worker, exc)}")


def _deadline(timeout: float | None) -> float | None:
    if timeout is None:
        return None
    if timeout.__class__ is bool or not isinstance(timeout, (int, float)) \
            or not timeout >= 0:
        raise ValueError(f"timeout must be a number of seconds >= 0 or None, got {timeout!r}")
    return time.monotonic() + timeout


def _left(deadline: float | None) -> float | None:
    """Seconds a step may take until ``deadline``, at least :data:`MIN_STOP_SECS`; None
    without a deadline."""
    if deadline is None:
        return None
    return max(MIN_STOP_SECS, deadline - time.monotonic())


def _share(deadline: float | None) -> float:
    """Seconds for one step of the last metrics' delivery: LAST_METRICS_SECS, or a quarter
    of what is left to ``deadline`` when that is less."""
    left = _left(deadline)
    return LAST_METRICS_SECS if left is None else min(LAST_METRICS_SECS, left / 4)


def _wait_arrived(workers: list[Worker], wait: float) -> None:
    """Wait up to ``wait`` s until every message the in-process transport carried between
    ``workers`` has been received. Received counts are read before sent ones: a message
    is received after it is sent, so equal sums mean every message sent by the time the
    received ones were read had arrived then."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        received = sum(w.inbox.received_batches for w in workers)
        if received == sum(w.outbox.sent_batches for w in workers):
            return
        time.sleep(0.005)


def _wait_drained(run: _Running, wait: float) -> None:
    deadline = time.monotonic() + max(0.0, float(wait or 0))
    while time.monotonic() < deadline:
        if all(w.pending() == 0 and w.queued() == 0 for w in run.workers):
            return
        time.sleep(0.01)
