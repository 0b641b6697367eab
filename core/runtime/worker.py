"""A worker: the executors of one (topology, port), their loop and their links to other workers.

One loop thread drives every executor cooperatively (no GIL contention between executors);
a receive thread waits on the transport (libraries release the GIL there) and hands raw batches
to the loop. Tuples for tasks in this worker go straight into the target task's queue; tuples
for remote tasks are collected per destination worker, serialized once per batch and sent when
the loop finishes an iteration or the batch is full. The public methods are thread-safe: they
hand work to the loop thread. See DESIGN.md, "The tuple path".
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from squall import config, drivers
from squall.api.context import TopologyContext
from squall.api.topology import ACKER, Topology
from squall.api.tuple import TICK_STREAM, Source, Tuple
from squall.runtime import errors as error_log
from squall.runtime.acking import Acking
from squall.runtime.executors import AckerExecutor, BoltExecutor, Executor
from squall.runtime.spout_executor import SpoutExecutor
from squall.runtime.load import LoadTracker
from squall.runtime.tasks import ACK_ACK, ACK_FAIL, ACK_INIT, TaskState, make_emit
from squall.runtime.threaded import (Dedicated, hold_switch_interval, release_switch_interval,
                                     wants_thread)
from squall.runtime.threaded_executors import threaded_class
from squall.runtime.inbound import INBOX_LIMIT
from squall.runtime.transfer import Transfer

log = logging.getLogger(__name__)
INBOX_HIGH, INBOX_LOW = INBOX_LIMIT // 2, INBOX_LIMIT // 8   # received batches, for backpressure


class Worker(Acking):
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
    """

    def __init__(self, *, conf: dict[str, Any], topology: Topology, topology_id: str, port: int,
                 executors: list[tuple[int, int]], task_to_worker: dict[int, tuple[str, int]],
                 transport: Any = None, host: str = "127.0.0.1") -> None:
        self.conf = conf
        self.topology = topology
        self.topology_id = topology_id
        self.port = port
        self.host = host
        self.executor_ranges = [tuple(e) for e in executors]
        self.transport = transport
        self.serializer = drivers.driver("serializer", conf)
        self.batch_size = max(1, int(conf.get("topology.transfer.batch.size") or 100))
        cap = int(conf.get("topology.executor.receive.buffer.size") or 32768)
        self.high = int(cap * float(conf.get("topology.backpressure.high.watermark", 0.9)))
        self.low = int(cap * float(conf.get("topology.backpressure.low.watermark", 0.4)))
        self.acker_tasks = topology.tasks(ACKER)
        self.acking = bool(self.acker_tasks)
        #: loop passes completed, and the last one that dispatched or ran anything (for
        #: squall.testing.complete_topology's "quiet" check)
        self.passes = self.last_busy_pass = 0
        #: passes that found nothing to do and waited for work (up to 1 ms each)
        self.idle_waits = 0
        self.queues: dict[int, deque[Tuple]] = {}
        #: the tasks of ``lazy_batch`` bolts, whose queues also take TupleRun entries
        self.lazy_tasks: dict[int, TaskState] = {}
        self.tasks: dict[int, TaskState] = {}
        self.executors: list[Executor] = []
        #: tasks holding untracked emit_many values (their release functions, see make_emit)
        self.held_emits: list[Callable[[], None]] = []
        #: executors whose components run on threads of their own (squall.runtime.threaded)
        self.threaded: list[Dedicated] = []
        #: until when shutdown waits for components' own threads to leave their calls
        self.stop_deadline = 0.0
        #: the loop runs (from start until it has sent its last): threaded components hand
        #: their calls to it meanwhile, and make them directly before and after
        self.looping = False
        self._switch_held = False
        self.now = time.monotonic()
        self.throttled = False
        self._overloaded = False
        #: seconds this worker has spent overloaded (throttling the spouts) before the current
        #: spell, which began at ``overloaded_since`` (the loop clock): squall.runtime.load
        self.overloaded_secs = 0.0
        self.overloaded_since = 0.0
        self.hold_inbox = False
        self._sources: dict[tuple[str, str], Source] = {}
        self.tick_source = Source("__system", TICK_STREAM, ("freq",))
        self._sys = {s: Source("__system", s, ("root", "value", "task"))
                     for s in (ACK_INIT, ACK_ACK, ACK_FAIL)}
        self._acks: dict[int, int] = {}
        self.local_ackers: dict[int, TaskState] = {}
        self._commands: deque[Any] = deque()
        self._wake = threading.Event()
        self.running = False
        self._alive = False
        self._loop_thread: threading.Thread | None = None
        self._recv_thread: threading.Thread | None = None
        self.errors = error_log.ErrorLog(conf)
        self.start_time = time.time()
        self.local_task_ids = [t for s, e in self.executor_ranges for t in range(s, e + 1)]
        self.transfer = Transfer(self)
        self.send_remote = self.transfer.send_remote
        self.transfer.set_assignment(task_to_worker)

    # -- set-up ------------------------------------------------------------------------------
    def source(self, component: str, stream: str) -> Source:
        key = (component, stream)
        src = self._sources.get(key)
        if src is None:
            spec = self.topology.components.get(component)
            if stream in self._sys:
                return self._sys[stream]
            fields = spec.streams[stream].fields if spec and stream in spec.streams else ()
            src = self._sources[key] = Source(component, stream, tuple(fields))
        return src

    def system_source(self, stream: str) -> Source:
        return self._sys[stream]

    def wake(self) -> None:
        """Wake the loop (from any thread)."""
        self._wake.set()

    def start(self) -> None:
        """Build executors (``initialize`` every component), bind, connect, start the loop.

        Raises whatever a component's ``initialize`` raises (the worker is then not alive)."""
        from squall.runtime.system import instantiate
        topo = self.topology
        local_tasks = self.local_task_ids
        for start, end in self.executor_ranges:
            cid = topo.task_to_component[start]
            spec = topo.components[cid]
            group = []
            for task in range(start, end + 1):
                conf = config.component_conf(self.conf, spec.config)
                ts = TaskState(self, cid, task, instantiate(spec, conf), conf)
                self.tasks[task] = ts
                self.queues[task] = ts.queue
                group.append(ts)
            cls = {"spout": SpoutExecutor, "acker": AckerExecutor}.get(spec.kind, BoltExecutor)
            if cls is not AckerExecutor and wants_thread(type(group[0].instance),
                                                         group[0].conf):
                cls = threaded_class(cls)
            self.executors.append(cls(self, cid, group))
        self.lazy_tasks = {ts.task: ts for ex in self.executors
                           if getattr(ex, "lazy", False) for ts in ex.tasks}
        #: acker tasks in this worker: their acker is fed directly, not through their queue
        self.local_ackers = {ts.task: ts for ex in self.executors if ex.kind == "acker"
                             for ts in ex.tasks}
        #: spout tasks in this worker: an acker here queues their completions as (root, ok)
        self.spout_queues = {ts.task: ts.queue for ex in self.executors if ex.kind == "spout"
                             for ts in ex.tasks}
        for ex in self.executors:
            for ts in ex.tasks:
                ts.executor = ex  # type: ignore[attr-defined]
                ctx = TopologyContext(
                    topology_id=self.topology_id, topology_name=self.conf.get(
                        "topology.name", self.topology_id), component_id=ts.component_id,
                    task_id=ts.task, task_to_component=topo.task_to_component,
                    this_worker_port=self.port, host=self.host,
                    outputs={n: s.fields for n, s in topo.components[ts.component_id]
                             .streams.items()},
                    register_metric=self._metric_registrar(ts))
                ctx.worker_tasks = local_tasks  # type: ignore[attr-defined]
                ts.context = ctx  # type: ignore[attr-defined]
                ts.build_routes(ctx)
                self._install(ex, ts)
        for ex in self.executors:
            for ts in ex.tasks:
                if ex.kind != "acker":
                    ts.instance.initialize(ts.conf, ts.context)  # type: ignore[attr-defined]
        # load-aware groupings start from their nearest targets, evenly
        self.load = LoadTracker(self)
        self.load.refresh({})
        self.running = True
        self.threaded = [ex for ex in self.executors if isinstance(ex, Dedicated)]
        self.looping = True
        if self.threaded:
            self._switch_held = hold_switch_interval(self.conf)
        for ex in self.threaded:
            ex.start_thread()
        if self.transport is not None:
            self.port = self.transfer.bind()
            self._recv_thread = threading.Thread(target=self.transfer.recv_loop, daemon=True,
                                                 name=f"squall-recv-{self.port}")
            self._recv_thread.start()
        self._alive = True
        self._loop_thread = threading.Thread(target=self._loop, daemon=True,
                                             name=f"squall-worker-{self.topology_id}-{self.port}")
        self._loop_thread.start()

    def _install(self, ex: Executor, ts: TaskState) -> None:
        inst = ts.instance
        inst.context = ts.context  # type: ignore[attr-defined]
        if ex.kind == "acker":
            return
        inst.emit = make_emit(ts, spout=ex.kind == "spout")
        inst.emit_many = inst.emit.many
        inst.report_error = lambda e, _ts=ts: self.report_error(_ts, e, user=True)
        if ex.kind == "bolt":
            inst.ack = ex.ack_function(ts)  # type: ignore[attr-defined]
            inst.fail = lambda tup, _ts=ts: self.fail_tuple(_ts, tup)
        else:
            ts.deferred = []  # type: ignore[attr-defined]
        if isinstance(ex, Dedicated):
            ex.install(ts, spout=ex.kind == "spout")

    def _metric_registrar(self, ts: TaskState) -> Any:
        from squall.metrics.registry import MetricRegistry
        bucket = int(self.conf.get("topology.builtin.metrics.bucket.size.secs") or 60)

        def register(name: str, metric: Any, bucket_secs: float | None) -> Any:
            registry = ts.__dict__.get("metrics")
            if registry is None:
                registry = ts.metrics = MetricRegistry(bucket)  # type: ignore[attr-defined]
            return registry.register(name, metric, bucket_secs)
        return register

    # -- the hot path (loop thread only) -------------------------------------------------------
    def deliver(self, ts: TaskState, task: int, tup: Tuple) -> None:
        q = self.queues.get(task)
        if q is not None:
            q.append(tup)
        else:
            self.send_remote(ts, task, tup)

    def deliver_system(self, ts: TaskState | None, task: int, values: tuple[Any, ...],
                       src_task: int, stream: str) -> None:
        """Deliver an untracked tuple of a system stream; one for another worker joins its
        open run as values, without a Tuple."""
        q = self.queues.get(task)
        if q is not None:
            q.append(Tuple(values, src_task, self._sys[stream]))
        else:
            self.transfer.send_values(ts, task, values, src_task, self._sys[stream])

    # -- errors --------------------------------------------------------------------------------
    def report_error(self, ts: TaskState, exc: BaseException | str, user: bool = False) -> None:
        self.errors.record(ts.component_id, ts.task, exc, self.host, self.port)
        if not user and self.conf.get("topology.worker.die.on.error"):
            log.critical("component %s task %d failed and topology.worker.die.on.error is set; "
                         "the worker stops", ts.component_id, ts.task)
            self.running = False
            self._alive = False

    def drain_errors(self) -> list[dict[str, Any]]:
        return self.errors.drain()

    # -- the loop ------------------------------------------------------------------------------
    def _loop(self) -> None:
        executors = self.executors
        next_timer = 0.0
        monotonic = time.monotonic
        try:
            transfer = self.transfer
            inbox = transfer.inbox
            while self.running:
                self.now = now = monotonic()
                while self._commands:
                    self._commands.popleft()()
                busy = bool(inbox) and not self.hold_inbox
                if busy:
                    transfer.dispatch_inbox()
                    self._check_backpressure()     # tell senders before a slow batch runs
                done = 0
                held = self.held_emits
                for ex in executors:
                    done += ex.run_once()
                    while held:
                        held.pop()()
                    if self._acks:
                        self.flush_acks()
                while held:         # anything held since the last executor's release
                    held.pop()()
                transfer.flush_all(now)
                if now >= next_timer:
                    next_timer = now + 0.005
                    self._timers(now)
                self._check_backpressure()
                self.passes += 1
                if done or busy:
                    self.last_busy_pass = self.passes
                if not done and not inbox and not self._commands:
                    transfer.flush_all()       # nothing else to do: send what waits
                    self.idle_waits += 1
                    self._wake.wait(0.001)
                    self._wake.clear()
        except BaseException:
            log.exception("worker %s:%d loop died", self.topology_id, self.port)
            self._alive = False
        finally:
            for ex in self.threaded:    # what the components' threads handed over by now
                ex.apply()
            while self.held_emits:
                self.held_emits.pop()()
            self.transfer.flush_all()
            self.looping = False

    def _timers(self, now: float) -> None:
        for ex in self.executors:
            ex.on_timer(now)
        self.load.tick(now)
        from squall.runtime.system import timers
        timers(self, now)

    def _check_backpressure(self) -> None:
        inbox = len(self.transfer.inbox)
        # queued tuples, not entries: a lazy_batch task's TupleRun entries hold many
        lazy = self.lazy_tasks
        high = self.high
        full = (any(len(q) > high for q in self.queues.values())
                or any(len(t.queue) + t.run_extra > high for t in lazy.values()))
        # while a lazy_batch task's queue holds twice the high watermark, received batches
        # wait in the inbox (and then in the transport): runs multiply what the senders had
        # in flight before they heard the throttle, and it must not all land at once. Other
        # queues never hold the inbox: doing so stalls an acknowledged transport's window
        # (grpc: 260 k -> 80-150 k words/s distributed, per-tuple, acking off).
        self.hold_inbox = full and any(len(t.queue) + t.run_extra > 2 * high
                                       for t in lazy.values())
        if self._overloaded:
            if (inbox <= INBOX_LOW and all(len(q) <= self.low for q in self.queues.values())
                    and all(len(t.queue) + t.run_extra <= self.low for t in lazy.values())):
                self._overloaded = False
                self.overloaded_secs += self.now - self.overloaded_since
                self.transfer.broadcast_throttle(False)
        elif inbox > INBOX_HIGH or full:
            self._overloaded = True
            self.overloaded_since = self.now
            self.transfer.broadcast_throttle(True)
        self.throttled = self._overloaded or any(self.transfer.remote_throttle.values())

    # -- assignment ---------------------------------------------------------------------------
    def update_assignment(self, task_to_worker: dict[int, tuple[str, int]]) -> None:
        """Refresh links to remote workers (thread-safe; applied by the loop)."""
        self._commands.append(lambda: self.transfer.set_assignment(task_to_worker))
        self._wake.set()

    def activate(self, settle: bool = True) -> None:
        """Activate the spouts; with ``settle``, return once spouts on threads of their own
        have run ``activate`` too (else they run it when their thread gets to it)."""
        self._call(lambda: [ex.set_active(True) for ex in self.executors
                            if isinstance(ex, SpoutExecutor)])
        if settle:
            self._settle()

    def deactivate(self, settle: bool = True) -> None:
        """Deactivate the spouts; ``settle`` as for :meth:`activate`."""
        self._call(lambda: [ex.set_active(False) for ex in self.executors
                            if isinstance(ex, SpoutExecutor)])
        if settle:
            self._settle()

    def _settle(self, timeout: float = 10.0) -> None:
        """Wait (off the loop thread) until spouts on threads of their own have run their
        activate/deactivate: a spout blocked in a call delays this by up to ``timeout``."""
        if threading.current_thread() is self._loop_thread:
            return
        deadline = time.monotonic() + timeout
        for ex in self.threaded:
            if ex.kind == "spout" and ex.alive:
                ex.settled.wait(max(0.0, deadline - time.monotonic()))  # type: ignore[attr-defined]

    def _call(self, fn: Any, timeout: float = 10.0) -> None:
        """Run ``fn`` on the loop thread and wait for it (or run it here if no loop runs)."""
        if not self.running or threading.current_thread() is self._loop_thread:
            fn()
            return
        done = threading.Event()

        def run() -> None:
            fn()
            done.set()
        self._commands.append(run)
        self._wake.set()
        done.wait(timeout)

    # -- observation ---------------------------------------------------------------------------
    def is_alive(self) -> bool:
        return self._alive and self._loop_thread is not None and self._loop_thread.is_alive()

    def pending(self) -> int:
        """Spout tuples in flight in this worker."""
        return sum(ex.pending(ts) for ex in self.executors if isinstance(ex, SpoutExecutor)
                   for ts in ex.tasks)

    def queued(self) -> int:
        return (sum(len(q) for q in self.queues.values()) + self.transfer.pending()
                + sum(t.run_extra for t in self.lazy_tasks.values()) + len(self.held_emits)
                + sum(ex.backlog() for ex in self.threaded))

    def stats(self) -> dict[str, Any]:
        from squall.runtime.system import executor_stats
        return {"executors": {f"[{ex.range[0]}, {ex.range[1]}]": executor_stats(ex)
                              for ex in self.executors},
                "uptime_secs": int(time.time() - self.start_time), "time_secs": int(time.time()),
                "worker": self.counters()}

    def overloaded_total(self) -> float:
        """Seconds this worker has spent overloaded so far (the current spell included)."""
        if self._overloaded:
            return self.overloaded_secs + max(0.0, self.now - self.overloaded_since)
        return self.overloaded_secs

    def counters(self) -> dict[str, Any]:
        """The worker's own totals since it started: loop passes, passes that waited idle,
        seconds overloaded (throttling the spouts), batches (and their bytes) sent to other
        workers, batches received from them."""
        t = self.transfer
        return {"loop_passes": self.passes, "idle_waits": self.idle_waits,
                "overloaded_secs": round(self.overloaded_total(), 3),
                "sent_batches": t.sent_batches, "sent_bytes": t.sent_bytes,
                "received_batches": t.received_batches}

    # -- shutdown ------------------------------------------------------------------------------
    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop spouts, flush and close links, stop the loop, clean up every component."""
        if self.running:
            self.deactivate(settle=False)   # the threads' stop, below, waits for them
        self.running = False
        self.stop_deadline = time.monotonic() + timeout
        for ex in self.threaded:
            ex.signal_stop()
        self._wake.set()
        if self._loop_thread is not None:
            self._loop_thread.join(timeout)
        self.looping = False        # a loop that never started (or died) takes no more calls
        for ex in self.executors:
            ex.stop()
        if self._switch_held:
            self._switch_held = False
            release_switch_interval()
        self.transfer.close()
        if self._recv_thread is not None:
            self._recv_thread.join(timeout)
        self._alive = False
