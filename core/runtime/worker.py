"""A worker: the executors of one (topology, port), built from the assignment and wired
together; its start and its stop. The parts it builds are described in
:mod:`squall.runtime` (the map); the worker owns them and hands each the narrow
collaborators it needs. The public methods are thread-safe: what touches the loop's state is
handed to the loop thread.
"""
from __future__ import annotations

import logging
import os
import threading
import time
import traceback
from collections.abc import Callable
from types import FrameType
from typing import Any

from squall import config, drivers
from squall.errors import SerializationError
from squall.api.context import TopologyContext
from squall.api.topology import ACKER, Topology
from squall.api.tuple import Source, Tuple
from squall.runtime import errors as error_log
from squall.runtime.acks import AckLedger
from squall.runtime.emit import Clock, Wiring, build_routes, make_emit
from squall.runtime.event_log import EventSampler, settings_of
from squall.runtime.executors import executor_class
from squall.runtime.executors.base import Executor, Services
from squall.runtime.executors.spout import SpoutExecutor
from squall.runtime.executors.threaded import hold_switch_interval, release_switch_interval
from squall.runtime.flow import Backpressure, watermarks
from squall.runtime.flow import capacity as queue_capacity
from squall.runtime.load import LoadTracker
from squall.runtime.latest import Latest
from squall.runtime.loop import Loop
from squall.runtime.memory_stores import MemoryStores
from squall.runtime.pause import PauseWatch
from squall.runtime.stats import executor_stats
from squall.runtime.streams import Sources, accepts, input_fields
from squall.runtime.system import METRICS_PREFIX, instantiate
from squall.runtime.task import LocalTasks, TaskState
from squall.runtime.timers import Timers
from squall.runtime.wire.credits import Windows
from squall.runtime.wire.inbox import Inbox
from squall.runtime.wire.outbox import Outbox, flush_interval
from squall.runtime.wire.stalls import Stalls
from squall.stateful.wiring import checkpointed
from squall.runtime.wire.peers import LimitedLog, PeerGate
from squall.security import credentials

log = logging.getLogger(__name__)
#: the most seconds a shutdown waits for the metrics consumers to take the last points
LAST_METRICS_SECS = 1.0
#: how many of the loop thread's innermost frames a stuck loop's report shows
STUCK_FRAMES = 12
#: how long a stopping worker waits at most for its components' calls (:func:`stop_budget`)
STOP_SECS = 10.0
#: what a cluster worker keeps, of its supervisor's SIGTERM-to-SIGKILL time, for its own
#: steps after its components stopped (links, errors, its beat's removal)
STOP_MARGIN_SECS = 2.0
#: the share of the time left to its stop deadline that a stopping worker gives the close of
#: its spouts before it starts the cleanup of its other components (spouts close first)
SPOUTS_FIRST_SHARE = 0.5


def stop_budget(conf: dict[str, Any]) -> float:
    """How long :meth:`Worker.shutdown` waits for its components' calls by default:
    :data:`STOP_SECS`, less when ``supervisor.worker.shutdown.sleep.secs`` (how long a
    supervisor waits between its SIGTERM and its SIGKILL) leaves less: that time less
    :data:`STOP_MARGIN_SECS`, or half of it when that is more."""
    try:
        grace = float(conf.get("supervisor.worker.shutdown.sleep.secs"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return STOP_SECS
    return max(0.0, min(STOP_SECS, max(grace / 2, grace - STOP_MARGIN_SECS)))


def _in_call(ex: Executor) -> bool:
    """Whether the own thread of ``ex`` (a threaded executor's) still runs: in a component's
    call, or on its way out."""
    return ex.threaded and ex.thread.running()    # type: ignore[attr-defined]


def _loop_stack(frame: FrameType) -> traceback.StackSummary:
    """The loop thread's stack at ``frame``, outermost first: the loop's own pass and what it
    called, at most the ``STUCK_FRAMES`` innermost frames."""
    frames = []
    for f, lineno in traceback.walk_stack(frame):
        frames.append((f, lineno))
        if f.f_code is Loop._run.__code__ or len(frames) == STUCK_FRAMES:
            break
    return traceback.StackSummary.extract(reversed(frames))


def stall_secs(conf: dict[str, Any]) -> float:
    """How long a destination worker may accept nothing while tuples wait for it before it is
    reported (:mod:`.wire.stalls`): ``topology.backpressure.stall.report.secs``, as for a
    spout held back."""
    return float(conf.get("topology.backpressure.stall.report.secs") or 60)


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, where the OS tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class _Stopping:
    """The stop of one executor (its components' cleanup or close, after waiting for its
    thread to leave a call) on a daemon thread started at once; what it raises, a
    ``sys.exit()`` in a cleanup too, is logged and ends this executor's stop only."""

    def __init__(self, executor: Executor) -> None:
        self.executor = executor
        self.thread = threading.Thread(target=self._run, daemon=True,
                                       name=f"squall-stop-{executor.component_id}")
        self.thread.start()

    def _run(self) -> None:
        ex = self.executor
        try:
            ex.stop()
        except BaseException as exc:    # a sys.exit() too: this thread ends, the stop goes on
            log.error("the stop of %s tasks %s ended with %s: %s", ex.component_id,
                      [ts.task for ts in ex.tasks], type(exc).__name__, exc)

    def cleaning(self) -> bool:
        """Whether it still runs in a component's cleanup or close (not waiting for the
        executor's own thread to leave a call: that wait ends at the deadline)."""
        return self.thread.is_alive() and not _in_call(self.executor)


def _join(stops: list[_Stopping], deadline: float) -> None:
    """Wait until every one of ``stops`` returned, or until ``deadline``."""
    for stop in stops:
        stop.thread.join(max(0.0, deadline - time.monotonic()))


class Worker:
    """Runs the executors assigned to one (topology, port).

    Parameters:
      conf: merged topology configuration (defaults < files < topology conf).
      topology: a :class:`squall.api.topology.Topology` with its system components.
      topology_id: e.g. ``wordcount-3-1732262400``.
      port: this worker's port (the transport binds it; 0 = any free port, see ``.port``).
      executors: the ``(start_task, end_task)`` ranges this worker runs.
      task_to_worker: every task id of the topology -> ``(host, port)`` of its worker.
      transport: a :class:`squall.Transport`, or ``None`` when every task is in this worker.
      host: the host name this worker is reached at.
      memory_stores: where the memory state backends keep its tasks' state (its owner's, which
        decides how long that lives: a LocalCluster's for the topology); ``None``: stores of
        its own, which go with it (a worker process).

    :meth:`build` makes every part and initializes every component (each gets its conf
    without the cluster's credentials, :mod:`squall.security.credentials`); :meth:`start`
    (which builds first if needed) starts the loop and the receive thread."""

    def __init__(self, *, conf: dict[str, Any], topology: Topology, topology_id: str, port: int,
                 executors: list[tuple[int, int]], task_to_worker: dict[int, tuple[str, int]],
                 transport: Any = None, host: str = "127.0.0.1",
                 memory_stores: MemoryStores | None = None) -> None:
        self.conf = conf
        self.topology = topology
        self.topology_id = topology_id
        self.port = port
        self.host = host
        self.executor_ranges = [(int(s), int(e)) for s, e in executors]
        self.transport = transport
        self.memory_stores = memory_stores if memory_stores is not None else MemoryStores()
        self.serializer = drivers.driver("serializer", conf)
        self.batch_size = max(1, int(conf.get("topology.transfer.batch.size") or 100))
        self.acker_tasks = topology.tasks(ACKER)
        self.local_task_ids = [t for s, e in self.executor_ranges for t in range(s, e + 1)]
        self.errors = error_log.ErrorLog(conf)
        self.start_time = time.time()
        self.sources = Sources(topology)
        self.clock = Clock(time.monotonic())
        self.outbox = Outbox(transport=transport, serializer=self.serializer,
                             topology_id=topology_id, local_tasks=self.local_task_ids,
                             batch_size=self.batch_size, flush_interval=0.0,
                             lost=self._lost, capacity=queue_capacity(conf),
                             windows=Windows(watermarks(conf)[0], self._window_changed),
                             stalls=Stalls(stall_secs(conf), self._peer_stalled,
                                           topology.task_to_component),
                             unencodable=self._unencodable, unassigned=self._unassigned)
        #: tells this worker's credit reports from a restarted one's (see .wire.credits)
        self.incarnation = f"{os.getpid()}-{time.time_ns()}"
        self.outbox.set_address(host, port)
        self.outbox.set_assignment(task_to_worker)
        self._set_flush_interval()
        self.executors: list[Executor] = []
        self.tasks: dict[int, TaskState] = {}
        #: warnings about what other workers (or strangers) sent, once per sender per minute
        self.limited_log = LimitedLog(log)
        self.gate = PeerGate(self.outbox.is_peer, self.limited_log, port)
        self._built = False
        self._switch_held = False
        #: pauses of the whole process and the fence after one (:mod:`.pause`): armed by the
        #: worker process before :meth:`start`; never armed, it never fences
        self.pauses = PauseWatch()

    # -- building ------------------------------------------------------------------------------
    def build(self) -> None:
        """Make every part from the assignment and ``initialize`` every component (in this
        thread). Raises whatever a component's ``initialize`` raises."""
        if self._built:
            return
        self._built = True
        topo = self.topology
        # components get their conf without the cluster's credentials; what squall opens for
        # them (Trident's state, DRPC fetches) asks credentials.for_runtime for them
        credentials.keep(self.conf)
        plan: list[tuple[type[Executor], str, list[TaskState]]] = []
        for start, end in self.executor_ranges:
            cid = topo.task_to_component[start]
            spec = topo.components[cid]
            group = [TaskState(cid, task, instantiate(spec, conf), conf)
                     for task in range(start, end + 1)
                     for conf in [credentials.without_credentials(
                         config.component_conf(self.conf, spec.config))]]
            plan.append((executor_class(spec.kind, type(group[0].instance), group[0].conf,
                                        checkpointed=checkpointed(spec)), cid, group))
        self.tasks = {ts.task: ts for _, _, group in plan for ts in group}
        self.local = LocalTasks(
            self.tasks,
            lazy={ts.task for cls, _, group in plan for ts in group
                  if cls.takes_runs(type(ts.instance))},
            ackers={ts.task for cls, _, group in plan for ts in group if cls.kind == "acker"},
            spouts={ts.task for cls, _, group in plan for ts in group if cls.kind == "spout"})
        self.acks = AckLedger(self.acker_tasks, self.local, self.sources, self.outbox,
                              lambda ts, text: self.report_error(ts, text, user=True))
        self.wiring = Wiring(self.local, self.outbox, self.acks, self.clock, self.batch_size,
                             report=lambda ts, exc: self.report_error(ts, exc, user=True))
        self._wakeup = threading.Event()
        self.inbox = Inbox(tasks=self.local, sources=self.sources,
                           task_to_component=topo.task_to_component, acks=self.acks,
                           outbox=self.outbox, serializer=self.serializer,
                           control=self._control, wake=self._wakeup.set,
                           room=watermarks(self.conf)[0], incarnation=self.incarnation,
                           accepts={t: accepts(topo, ts.component_id)
                                    for t, ts in self.tasks.items()})
        self.inbox.grants.set_peers(len(self.outbox.peers()))
        self.flow = Backpressure(self.conf, self.local, self.inbox.backlog,
                                 self.inbox.held, self.outbox.windows.saturated,
                                 self.outbox.broadcast_control, incarnation=self.incarnation,
                                 runs=self._runs)
        self.loop = Loop(name=f"squall-worker-{self.topology_id}-{self.port}", clock=self.clock,
                         inbox=self.inbox, outbox=self.outbox, acks=self.acks, flow=self.flow,
                         holding=self.wiring.holding, timers=self._timers, wakeup=self._wakeup,
                         report_death=self._report_death, pauses=self.pauses)
        services = Services(acks=self.acks, loop=self.loop, clock=self.clock, flow=self.flow,
                            sources=self.sources, report_error=self.report_error,
                            batch_size=self.batch_size)
        self.executors = [cls(services, cid, group) for cls, cid, group in plan]
        self.loop.executors.extend(self.executors)
        self.loop.threads.extend(ex.thread for ex in self.executors  # type: ignore[attr-defined]
                                 if ex.threaded)
        for ex in self.executors:
            for ts in ex.tasks:
                self._install(ex, ts)
            ex.routes_built()
        for ex in self.executors:
            if ex.kind != "acker":
                for ts in ex.tasks:
                    ts.instance.initialize(ts.conf, ts.context)
                    ts.initialized = True
        # load-aware groupings start from their nearest targets, evenly
        self.load = LoadTracker(topology=topo, conf=self.conf, tasks=self.local,
                                outbox=self.outbox, flow=self.flow, host=self.host)
        self.load.refresh({})
        self.timers = Timers(conf=self.conf, topology=topo, executors=self.executors,
                             sources=self.sources, load=self.load, deliver=self._deliver,
                             capacity=self.flow.high, identity=self._identity,
                             report=self.report_error, check=self.serializer.dumps)
        # emits are sampled into the events log only where debugging is on (event_log)
        self.events = EventSampler(self.tasks)
        debug = settings_of(self.conf, None, self.component_confs())
        if debug:
            self.events.apply(debug)
        # what set_active / set_debug hand the loop without waiting (the latest wins)
        self._active_setting: Latest[bool] = Latest(self.loop, self._spouts_active)
        self._debug_setting: Latest[dict[str, float]] = Latest(self.loop, self.events.apply)

    def _install(self, ex: Executor, ts: TaskState) -> None:
        """The task's context and routes, and the runtime's methods on its instance."""
        topo = self.topology
        ts.context = TopologyContext(
            topology_id=self.topology_id,
            topology_name=self.conf.get("topology.name", self.topology_id),
            component_id=ts.component_id, task_id=ts.task,
            task_to_component=topo.task_to_component, this_worker_port=self.port,
            host=self.host, worker_tasks=self.local_task_ids,
            outputs={n: s.fields for n, s in topo.components[ts.component_id].streams.items()},
            inputs=input_fields(topo, ts.component_id),
            register_metric=self._metric_registrar(ts), memory_stores=self.memory_stores)
        build_routes(ts, topo, self.sources, ts.context)
        inst = ts.instance
        inst.context = ts.context
        if ex.kind == "acker":
            return
        inst.emit, inst.emit_many = make_emit(ts, self.wiring, spout=ex.kind == "spout")
        inst.report_error = lambda e, _ts=ts: self.report_error(_ts, e, user=True)
        ex.install(ts)

    def _metric_registrar(self, ts: TaskState) -> Any:
        from squall.metrics.registry import MetricRegistry
        bucket = int(self.conf.get("topology.builtin.metrics.bucket.size.secs", 60))

        def register(name: str, metric: Any, bucket_secs: float | None) -> Any:
            if ts.metrics is None:
                ts.metrics = MetricRegistry(bucket)
            return ts.metrics.register(name, metric, bucket_secs)
        return register

    # -- what the parts call back ----------------------------------------------------------------
    def _lost(self, roots: set[int]) -> None:
        """Tuples the outbox could not deliver: their trees fail, so the spouts replay."""
        self.acks.fail_lost(roots)

    def _unencodable(self, src: Source, exc: SerializationError, count: int,
                     field: str | int | None) -> None:
        """``count`` tuples of ``src`` that the serializer refused on their way to another
        worker, in one batch, for one cause (``exc``; ``field`` holds the value refused in
        the first of them, when known): reported as an error of the emitting component
        (their trees fail), throttled as its other errors are."""
        mine = [t for t in self.topology.tasks(src.component) if t in self.tasks]
        ts = self.tasks.get(mine[0]) if mine else None
        one = count == 1
        which = "" if field is None else \
            f" (the value of field {field!r}{'' if one else ' in the first'})"
        text = (f"{count} tuple{'' if one else 's'} of {src.component} on stream "
                f"{src.stream!r} cannot be sent to another worker and fail{'s' if one else ''}"
                f"{which}: {exc}")
        if ts is None:
            log.error("%s", text)
        else:
            self.report_error(ts, text, user=True)

    def _unassigned(self, task: int, src_task: int, src: Source) -> None:
        """A tuple of ``src`` from ``src_task`` for ``task``, which no worker runs (the
        outbox fails it back for replay and logs that): when ``task`` is none of the targets
        of the stream's subscribers, a grouping chose it, and that is an error of the
        emitting component naming the grouping (recorded, throttled as every error is). A
        target without a worker now (an assignment changing) is left to the outbox's log."""
        ts = self.tasks.get(src_task)
        if ts is None or ts.component_id != src.component:
            return
        routes = ts.routes.get(src.stream) or []
        if not routes or any(task in r.targets for r in routes):
            return
        named = [f"{type(r.grouping).__module__}.{type(r.grouping).__qualname__} "
                 f"(subscriber {r.component!r}, targets {r.targets})"
                 for r in routes if r.grouping is not None]
        who = f"grouping {named[0]}" if len(named) == 1 else \
            f"one of the groupings {', '.join(named)}"
        self.report_error(ts, f"component {src.component!r} stream {src.stream!r}: {who} "
                              f"chose task {task!r}, which is none of its targets; the tuple "
                              f"is not delivered (a tracked one fails for replay)", user=True)

    def _peer_stalled(self, text: str) -> None:
        """Another worker accepted nothing from this one for long while tuples waited for it
        (:mod:`.wire.stalls`, which logged ``text``): an error of the worker (``__worker``),
        in ``/errors`` and the topology's info."""
        self.errors.record(error_log.WORKER_COMPONENT, 0, text, self.host, self.port,
                           logged=True)

    def _window_changed(self) -> None:
        if self._built:
            self.flow.recount()

    def _runs(self, who: str, task: int) -> bool:
        """Whether worker ``who`` (``host:port``) runs ``task`` in the assignment."""
        key = self.outbox.task_to_worker.get(task)
        return key is not None and f"{key[0]}:{key[1]}" == who

    def _control(self, kind: str, who: str, value: Any) -> None:
        """A control message from another worker: taken only from a worker of the
        assignment; a malformed one changes nothing and is logged (once per sender per
        minute)."""
        key = self.gate.admit(kind, who)
        if key is None:
            return
        who = f"{key[0]}:{key[1]}"
        self.outbox.windows.heard(key, self.clock.now)
        try:
            if kind == "credit":
                if value.__class__ is not list or len(value) != 2:
                    raise ValueError(f"a credit report must be [incarnation, grants], got "
                                     f"{value!r:.80}")
                self.inbox.grants.met(key, str(value[0]))
                self.outbox.credit(key, str(value[0]), value[1], self.clock.now)
            elif kind == "congested":
                self.flow.remote_report(who, value, self.clock.now)
            elif kind == "load":
                self.load.on_report(who, value)
            else:
                raise ValueError(f"unknown kind {kind!r:.40}")
        except (ValueError, TypeError) as exc:
            self.limited_log.warning(("control", who), "worker %s ignored a %.20r control "
                                     "message from %s: %s", self.port, kind, who, exc)

    def _timers(self, now: float) -> None:
        self.timers.run(now)
        self.flow.tick(now)

    def _deliver(self, task: int, tup: Tuple) -> None:
        q = self.local.queues.get(task)
        if q is not None:
            q.append(tup)
        else:
            self.outbox.send_tuple(task, tup)

    def _identity(self) -> dict[str, Any]:
        return {"topology": self.topology_id, "worker_host": self.host,
                "worker_port": self.port}

    def report_error(self, ts: TaskState, exc: BaseException | str, user: bool = False) -> None:
        """Record a component's error; with ``topology.worker.die.on.error`` (and not one
        the component reported itself) the worker stops."""
        self.errors.record(ts.component_id, ts.task, exc, self.host, self.port)
        if not user and self.conf.get("topology.worker.die.on.error"):
            log.critical("component %s task %d failed and topology.worker.die.on.error is set; "
                         "the worker stops", ts.component_id, ts.task)
            self.loop.halt()

    def loop_stuck(self, limit: float | None = None, now: float | None = None) -> float | None:
        """When (``time.time()``) the loop's current pass began, if the loop has been in that
        one pass for more than ``limit`` seconds (``supervisor.worker.timeout.secs`` when
        None): a call on the loop thread that does not return holds up every executor of
        this worker, and the timers that fail timed-out tuples. Else None: also before the
        loop's first pass (``initialize`` is not counted) and after its last. A component
        blocked on a thread of its own (``dedicated_thread``) does not stop the loop.

        The first time a pass is found stuck it is reported, as an error of the component
        the loop is in (topology info, ``/errors``, the worker log), with the loop thread's
        innermost frames; from then on calls handed to the loop do not wait for it. The
        time the whole process was paused (``pauses``: its watcher found it) is not counted:
        a pass that began before a pause counts from when the pause ended. Called
        from a thread other than the loop's (the worker process's local heartbeat thread,
        LocalCluster's monitor); ``now`` is ``time.monotonic()`` when None."""
        if not self._built:
            return None
        loop = self.loop
        began = loop.pass_began()
        if began is None:
            return None
        if now is None:
            now = time.monotonic()
        if limit is None:
            limit = float(self.conf.get("supervisor.worker.timeout.secs") or 30)
        # a pause of the whole process (SIGSTOP, a frozen host) is no time stuck: counted
        # from when it ended
        since = max(began, self.pauses.resumed)
        age = now - since
        if age <= limit:
            return None
        if loop.stuck_pass != began:
            loop.stuck_pass = began
            self._report_stuck(age)
        return time.time() - (time.monotonic() - since)

    def _report_stuck(self, age: float) -> None:
        frame = self.loop.current_frame()
        ts = self._stuck_in(frame)
        where = f"{ts.component_id} (task {ts.task})" if ts is not None else \
            "the worker's own code"
        stack = "".join(_loop_stack(frame).format()) if frame is not None else \
            "  (its stack cannot be read)\n"
        text = (f"worker loop stuck in {where} for {age:.0f} s: no executor of this worker "
                f"runs meanwhile (a component whose calls block belongs on a thread of its "
                f"own: dedicated_thread = True); the loop thread, innermost call last:\n{stack}")
        suppressed = self.errors.suppressed
        if ts is None:
            self.errors.record(error_log.WORKER_COMPONENT, 0, text, self.host, self.port)
        else:
            self.errors.record(ts.component_id, ts.task, text, self.host, self.port)
        if self.errors.suppressed != suppressed:    # the component's errors were throttled
            log.error("%s", text.rstrip())

    def _stuck_in(self, frame: FrameType | None) -> TaskState | None:
        """The task whose call the loop thread is in at ``frame``: the innermost frame of
        one of this worker's component instances, else the task an executor's frame runs."""
        return error_log.task_in(error_log.outward(frame), self.tasks.values(), self.executors)

    def _report_death(self, ts: TaskState | None, text: str) -> None:
        """The loop's thread or a component's own died (``Loop.died``): ``text`` is recorded
        as a fatal error of ``ts``'s component (None: of the worker, ``__worker``), past the
        throttle; ``/errors`` and LocalCluster's topology info get it before the restart."""
        if ts is None:
            self.errors.record(error_log.WORKER_COMPONENT, 0, text, self.host, self.port,
                               fatal=True)
        else:
            self.errors.record(ts.component_id, ts.task, text, self.host, self.port, fatal=True)

    def drain_errors(self) -> list[dict[str, Any]]:
        return self.errors.drain()

    # -- life ----------------------------------------------------------------------------------
    def start(self) -> None:
        """Build (if not done yet), bind, connect, start the loop and the components' own
        threads."""
        self.build()
        if self.loop.threads:
            self._switch_held = hold_switch_interval(self.conf)
        self.loop.start()
        for thread in self.loop.threads:
            thread.start()
        if self.transport is not None:
            self.port = self.inbox.bind(self.transport, self.topology_id, self.port)
            self.outbox.set_address(self.host, self.port)
            self.gate.port = self.port
            # a restarted worker's senders forget what they had on its way to the old one,
            # and what the old one said was congested
            opening = self.inbox.grants.opening(self.local_task_ids)

            def hello() -> None:
                for key in self.outbox.peers():
                    self.outbox.send_control(key, "credit", opening)
                self.flow.announce()
            self.loop.submit(hello)

    def component_confs(self) -> dict[str, dict[str, Any]]:
        """component -> the conf its tasks in this worker run with (topology conf, its own
        config, command-line overrides)."""
        return {ts.component_id: ts.conf for ts in self.tasks.values()}

    def set_debug(self, settings: dict[str, float]) -> None:
        """Sample emits into the events log: component (``*``: all) -> percentage; the
        components not named stop being sampled (see :mod:`.event_log`). Does not wait: the
        loop applies the latest settings at its next pass (:class:`.latest.Latest`)."""
        self._debug_setting.set(dict(settings))

    def set_active(self, active: bool) -> None:
        """Activate or deactivate the spouts without waiting (the worker process's main
        thread, which writes the heartbeats, calls it): the loop applies the latest state
        at its next pass, one held in a component's call once that call returns; spouts on
        threads of their own then run ``activate``/``deactivate`` when their thread gets to
        it. Changes made before the loop gets to them collapse to the last
        (:class:`.latest.Latest`). :meth:`activate` and :meth:`deactivate` wait instead."""
        self._active_setting.set(active)

    def _spouts_active(self, active: bool) -> None:
        for ex in self.executors:
            if isinstance(ex, SpoutExecutor):
                ex.set_active(active)

    def call_on_loop(self, fn: Any, timeout: float = 10.0) -> None:
        """Run ``fn`` on the loop thread and wait for it (or here if no loop runs)."""
        self.loop.call(fn, timeout)

    def update_assignment(self, task_to_worker: dict[int, tuple[str, int]]) -> None:
        """Refresh links to remote workers (applied by the loop)."""
        def apply() -> None:
            before = self.outbox.task_to_worker
            for host, port in self.outbox.set_assignment(task_to_worker):
                self.flow.forget(f"{host}:{port}")
                self.inbox.grants.forget((host, port))
            self.inbox.grants.set_peers(len(self.outbox.peers()))
            self.load.reassigned(before, self.outbox.task_to_worker)
            self._set_flush_interval()
        self.loop.submit(apply)

    def _set_flush_interval(self) -> None:
        """The outbox's flush interval for the assignment (see ``outbox.flush_interval``):
        this topology's workers on this worker's host against the cores it may run on."""
        here = {w for w in self.outbox.task_to_worker.values() if w[0] == self.host}
        here.add((self.host, self.port))
        self.outbox.flush_interval = flush_interval(
            self.conf.get("topology.batch.flush.interval.millis"), len(here), usable_cores())

    def activate(self, settle: bool = True) -> None:
        """Activate the spouts; with ``settle``, return once spouts on threads of their own
        have run ``activate`` too (else they run it when their thread gets to it)."""
        self.loop.call(lambda: self._spouts_active(True))
        if settle:
            self._settle()

    def deactivate(self, settle: bool = True, timeout: float = 10.0) -> None:
        """Deactivate the spouts; ``settle`` as for :meth:`activate`. Waits up to ``timeout``
        for the loop to take it (one held in a component's call takes it when it is free)."""
        self.loop.call(lambda: self._spouts_active(False), timeout)
        if settle:
            self._settle()

    def _settle(self, timeout: float = 10.0) -> None:
        """Wait (off the loop thread) until spouts on threads of their own have run their
        activate/deactivate: a spout blocked in a call delays this by up to ``timeout``."""
        if self.loop.on_loop_thread():
            return
        deadline = time.monotonic() + timeout
        for ex in self.executors:
            if ex.threaded and ex.kind == "spout" and ex.thread.alive:  # type: ignore[attr-defined]
                ex.settled.wait(max(0.0, deadline - time.monotonic()))  # type: ignore[attr-defined]

    def send_last_metrics(self, wait: float) -> None:
        """Before a shutdown, spouts deactivated: send every task's data points of the bucket
        begun (:meth:`Timers.send_partial`, once), and wait up to ``wait`` s until this
        worker's metrics consumer tasks have handled theirs and what arrived for them from
        other workers (their cleanup, after the loop stops, then writes them), and the
        outbox has sent those for consumer tasks in other workers, which handle them if they
        still run: whoever stops several workers calls this on each before stopping any, and
        again on each once what they sent each other has arrived
        (:meth:`~squall.runtime.local_cluster.LocalCluster.kill_topology`). :meth:`shutdown`
        calls it."""
        timers = self.timers
        if not timers.consumers:
            return
        self.loop.call(lambda: timers.send_partial(self.clock.now), wait)
        consumers = [ex for ex in self.executors if ex.component_id.startswith(METRICS_PREFIX)]
        inbox = self.inbox
        held = inbox.held
        deadline = time.monotonic() + wait
        # also what was received and not yet dispatched (the backlog, until the loop has
        # queued it) and what waits for a consumer's queue to drain
        while time.monotonic() < deadline and (
                timers.collecting or self.outbox.pending() or inbox.backlog()
                or any(ex.queued() or any(ts.queue or held.get(ts.task) for ts in ex.tasks)
                       for ex in consumers)):
            time.sleep(0.005)

    def shutdown(self, timeout: float | None = None,
                 stopping: Callable[[], None] | None = None) -> None:
        """Stop spouts, flush and close links, stop the loop, clean up every component.
        ``timeout`` (None: :func:`stop_budget` of the worker's conf) bounds the wait for
        components still in a call.

        Every component's thread is told to stop at once; each executor's cleanup (a spout's
        close) runs on a thread of its own, the spouts' first, the others' as their calls
        return, each waited for until the timeout (one stuck in a call, or in its cleanup,
        does not hold up the cleanup of the others); past it the stop goes on and leaves a
        cleanup still running in its thread (a warning names it).
        A loop that did not run an earlier call within its timeout (a component blocked in
        a call) gets 1 s more, not ``timeout``; if it is still in the call then, the
        components the loop runs are not cleaned up (a cleanup must not run beside their
        call), as for a component thread still in a call. ``stopping`` is called once the
        loop has stopped, before the components' threads are waited for (the
        ``squall_worker_stopping`` hook: what holds a component in a call ends there).
        Metrics consumers get the points of the bucket begun first (:meth:`send_last_metrics`,
        within a share of ``timeout``)."""
        if not self._built:
            return
        if timeout is None:
            timeout = stop_budget(self.conf)
        if self.loop.running:
            self.deactivate(settle=False)   # the threads' stop, below, waits for them
            if not self.loop.overdue():
                began = time.monotonic()
                self.send_last_metrics(min(LAST_METRICS_SECS, timeout / 4))
                timeout -= time.monotonic() - began
        self.loop.stop(min(timeout, 1.0) if self.loop.overdue() else timeout)
        if stopping is not None:
            stopping()
        stuck = self.loop.thread_alive()
        if stuck:
            log.warning("worker %s: its loop is still in a component's call at shutdown; the "
                        "cleanup of %s is skipped", self.port,
                        ", ".join(sorted({ex.component_id for ex in self.executors
                                          if not ex.threaded
                                          and not ex.component_id.startswith("__")})))
        self._stop_executors([ex for ex in self.executors if not (stuck and not ex.threaded)])
        if self._switch_held:
            self._switch_held = False
            release_switch_interval()
        self.outbox.close()
        self.inbox.close(timeout)
        self.loop.mark_dead()

    def _stop_executors(self, executors: list[Executor]) -> None:
        """Stop (clean up) ``executors`` once the loop stopped (which told their threads to
        stop), each on a daemon thread of its own (:class:`_Stopping`), so that a cleanup or
        close that blocks holds up no other's: first the spouts in no call (their ``close``
        follows their ``deactivate``), the others once those returned or a share of the time
        to the loop's stop deadline went by (:data:`SPOUTS_FIRST_SHARE`); one whose thread is
        still in a call waits for it until the deadline (its cleanup is skipped then, with a
        warning). At the deadline the stop goes on: a component still in its cleanup or
        close is named in one warning and left running on its thread."""
        deadline = self.loop.stop_deadline
        first = [ex for ex in executors if ex.kind == "spout" and not _in_call(ex)]
        stops = [_Stopping(ex) for ex in first]
        now = time.monotonic()
        _join(stops, now + max(0.0, deadline - now) * SPOUTS_FIRST_SHARE)
        stops += [_Stopping(ex) for ex in executors if ex not in first]
        _join(stops, deadline)
        left = sorted({s.executor.component_id for s in stops if s.cleaning()})
        if left:
            log.warning("worker %s of %s: the cleanup or close of %s has not returned by the "
                        "stop's deadline; the stop goes on and leaves it running in a thread "
                        "of its own", self.port, self.topology_id, ", ".join(left))

    # -- observation ---------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._built and self.loop.running

    @property
    def passes(self) -> int:
        return self.loop.passes

    @property
    def last_busy_pass(self) -> int:
        return self.loop.last_busy_pass

    def is_alive(self) -> bool:
        return self._built and self.loop.is_alive()

    def pending(self) -> int:
        """Spout tuples in flight in this worker."""
        return sum(ex.pending(ts) for ex in self.executors if isinstance(ex, SpoutExecutor)
                   for ts in ex.tasks)

    def queued(self) -> int:
        """Tuples and calls waiting anywhere in this worker (queues, inbox, outboxes, held
        emits, components' own threads)."""
        return (self.local.queued() + len(self.inbox.pending) + self.inbox.held_total()
                + self.outbox.pending()
                + len(self.wiring.holding) + sum(ex.queued() for ex in self.executors))

    def stats(self) -> dict[str, Any]:
        return {"executors": {f"[{ex.range[0]}, {ex.range[1]}]": executor_stats(ex)
                              for ex in self.executors},
                "uptime_secs": int(time.time() - self.start_time), "time_secs": int(time.time()),
                "worker": self.counters()}

    def spout_pending(self) -> dict[str, int]:
        """Executor (``"[start, end]"``) -> the tuples its spout tasks have in flight (tracked
        emits not yet acked or failed), for the spout executors of this worker. Read from any
        thread (sizes of the loop's dicts)."""
        return {f"[{ex.range[0]}, {ex.range[1]}]": sum(ex.pending(ts) for ts in ex.tasks)
                for ex in self.executors if isinstance(ex, SpoutExecutor)}

    def counters(self) -> dict[str, Any]:
        """The worker's own totals since it started: loop passes, passes that waited idle,
        seconds overloaded (with a congested task), task messages (and their bytes) sent to
        other workers, task messages received from them."""
        return {"loop_passes": self.loop.passes, "idle_waits": self.loop.idle_waits,
                "overloaded_secs": round(self.flow.overloaded_total(self.clock.now), 3),
                "sent_batches": self.outbox.sent_batches,
                "sent_bytes": self.outbox.sent_bytes,
                "received_batches": self.inbox.received_batches}
