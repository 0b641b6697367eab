"""Executors on a thread of their own, for components that block.

A component class that sets ``dedicated_thread = True`` (or whose configuration sets
``topology.executor.dedicated.thread``) has its callbacks run on one thread per executor, so a
blocking call (a database write, a blocking poll, a slow service) stalls that executor's tasks
alone, not every executor of the worker.

Only the component's own code moves. What it asks of the runtime (``emit``, ``emit_many``,
``ack``, ``fail``, ``report_error``) is queued in the executor's *outbox* and applied by the
worker's loop thread, in call order, when it next runs this executor: routing, acking and
transfer stay on one thread. The other way, tuples arrive in the task's inbound queue as for any
bolt (a deque: appended on the loop thread, taken here), and a spout's completions, timeouts,
activation and deactivation arrive as calls in the executor's *control* queue.

Emit arguments are checked at the call (an undeclared stream raises in the component, as it
would on the loop) and values are copied there, so a list the component reuses arrives as it
was emitted. An emit that still fails when applied is reported as the component's error, and
its anchors fail so their trees replay. ``need_task_ids=True`` waits for the loop to apply the
emit. When the loop falls behind, the outbox fills and the component waits at its next call.
The outbox takes calls from any thread, so a component's own helper threads may emit too;
before the loop starts (``initialize``) and after it stops (``cleanup``) calls go straight to
the runtime, as they do for every component.
"""
from __future__ import annotations

import logging
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from squall.api.tuple import Tuple, TupleBatch
from squall.runtime.emit_general import check_anchors, check_emit
from squall.runtime.executors import MAX_SAMPLES, BoltExecutor, SpoutExecutor, _perf
from squall.runtime.tasks import TaskState

if TYPE_CHECKING:
    from squall.runtime.executors import Executor
    from squall.runtime.worker import Worker

log = logging.getLogger(__name__)
#: calls an outbox takes before the component waits for the loop to apply some
OUTBOX_CAP = 8192
#: calls the loop applies from one outbox in one pass
OUTBOX_PASS = 4096
#: how long an idle component thread waits for a wake-up before it looks again
IDLE_WAIT = 0.05
CONF_KEY = "topology.executor.dedicated.thread"
SWITCH_KEY = "topology.worker.thread.switch.interval.ms"
_switch_lock = threading.Lock()
_switch_users = 0
_switch_saved = 0.0


def hold_switch_interval(conf: dict[str, Any]) -> bool:
    """Shorten the interpreter's switch interval to ``topology.worker.thread.switch.interval.ms``
    while a worker runs components on threads of their own: a thread back from a blocking
    call waits up to that long for a busy loop to let it run (5 ms by default: a component
    blocking 5 ms per tuple then got half the tuples through). Returns whether it holds it
    (release with :func:`release_switch_interval`); the shortest held value wins."""
    global _switch_users, _switch_saved
    ms = conf.get(SWITCH_KEY)
    if not ms:
        return False
    with _switch_lock:
        if not _switch_users:
            _switch_saved = sys.getswitchinterval()
        _switch_users += 1
        sys.setswitchinterval(min(sys.getswitchinterval(), float(ms) / 1000.0))
    return True


def release_switch_interval() -> None:
    """The interpreter's own switch interval again once no worker holds it."""
    global _switch_users
    with _switch_lock:
        _switch_users -= 1
        if not _switch_users:
            sys.setswitchinterval(_switch_saved)


def wants_thread(cls: type, conf: dict[str, Any]) -> bool:
    """Whether a component of class ``cls`` with configuration ``conf`` runs on its own
    thread."""
    return bool(getattr(cls, "dedicated_thread", False) or conf.get(CONF_KEY))


class Dedicated:
    """The thread, outbox and control queue shared by both threaded executors."""

    worker: Worker
    component_id: str
    tasks: list[TaskState]

    def _init_thread(self) -> None:
        #: (task, function, args, anchors) applied on the loop thread, in order
        self.outbox: deque[tuple[TaskState, Callable[..., Any], tuple, Any]] = deque()
        #: (task, function, args) called on the component thread
        self.control: deque[tuple[TaskState, Callable[..., Any], tuple]] = deque()
        self.wake_thread = threading.Event()
        self.room = threading.Event()
        self.waiting_room = False
        #: tuples taken from a queue whose outcome is not in the outbox yet (Worker.queued)
        self.busy = 0
        self.alive = False
        self.thread: threading.Thread | None = None

    def start_thread(self) -> None:
        self.alive = True
        self.thread = threading.Thread(
            target=self._main, daemon=True,
            name=f"squall-{self.component_id}-{self.tasks[0].task}")
        self.thread.start()

    def backlog(self) -> int:
        """Calls and tuples this executor has in hand (counted by ``Worker.queued``)."""
        return len(self.outbox) + len(self.control) + self.busy

    # -- component thread ----------------------------------------------------------------------
    def put(self, ts: TaskState, fn: Callable[..., Any], args: tuple, anchors: Any = None) -> None:
        """Queue ``fn(*args)`` for the loop thread; waits while the outbox is full."""
        out = self.outbox
        out.append((ts, fn, args, anchors))
        if len(out) == 1:
            self.worker.wake()
        elif len(out) > OUTBOX_CAP:
            self.room.clear()
            self.waiting_room = True
            while len(out) > OUTBOX_CAP // 2 and self.alive and self.worker.running:
                self.room.wait(0.1)
            self.waiting_room = False

    def _main(self) -> None:
        try:
            self._serve()
        except BaseException:
            log.exception("the thread of %s tasks %s died", self.component_id,
                          [ts.task for ts in self.tasks])
            self.worker._alive = False
        finally:
            self._run_control()     # a deactivate or close-time call still reaches it

    def _serve(self) -> None:
        raise NotImplementedError

    def _run_control(self) -> int:
        control = self.control
        n = 0
        while control:
            ts, fn, args = control.popleft()
            n += 1
            try:
                fn(*args)
            except Exception as exc:
                self.put(ts, self.worker.report_error, (ts, exc))
        return n

    def _idle(self, seconds: float) -> None:
        self.wake_thread.wait(seconds)
        self.wake_thread.clear()

    # -- loop thread -------------------------------------------------------------------------
    def apply(self) -> int:
        """Apply the component's queued calls; returns how many."""
        out = self.outbox
        n = min(len(out), OUTBOX_PASS)
        fail_tuple = self.worker.fail_tuple
        for _ in range(n):
            ts, fn, args, anchors = out.popleft()
            try:
                fn(*args)
            except Exception as exc:
                self.worker.report_error(ts, exc)
                for a in anchors or ():
                    if a.__class__ is Tuple and a.roots:
                        fail_tuple(ts, a)
        if self.waiting_room and len(out) <= OUTBOX_CAP // 2:
            self.room.set()
        return n

    def _call(self, ts: TaskState, fn: Callable[..., Any], *args: Any) -> None:
        """Have the component thread call ``fn(*args)`` (errors are reported as the task's)."""
        self.control.append((ts, fn, args))
        self.wake_thread.set()

    def signal_stop(self) -> None:
        """Ask the thread to leave once its current call returns."""
        self.alive = False
        self.wake_thread.set()
        self.room.set()

    def stop_thread(self) -> bool:
        """Stop the thread, waiting until the worker's stop deadline; False if it is still in
        a call then (its component's cleanup or close is then skipped)."""
        self.signal_stop()
        if self.thread is None:
            return True
        self.thread.join(max(0.0, self.worker.stop_deadline - time.monotonic()))
        if self.thread.is_alive():
            log.warning("%s tasks %s: the component's thread is still in a call at shutdown; "
                        "its cleanup is skipped", self.component_id,
                        [ts.task for ts in self.tasks])
            return False
        return True

    # -- what the component calls ------------------------------------------------------------
    def install(self, ts: TaskState, spout: bool) -> None:
        """Put proxies of the runtime's methods on the task's instance (set up by
        ``Worker._install`` first)."""
        inst = ts.instance
        real_emit, real_many = inst.emit, inst.emit_many
        real_report = inst.report_error
        put = self.put
        worker = self.worker
        auto_anchor = not spout and getattr(self, "auto_anchor", False)
        thread = self

        def direct() -> bool:
            """No loop runs (``initialize`` comes before it, ``cleanup`` after it): a call goes
            straight to the runtime, as it does for any component then."""
            return not worker.looping

        #: streams a plain emit (no direct task) was checked on: they stay valid
        checked: set[str] = set()

        def check(stream: str, direct_task: int | None, anchors: Any) -> None:
            if direct_task is not None or stream not in checked:
                check_emit(ts, stream, direct_task)
                if direct_task is None:
                    checked.add(stream)
            if anchors is not None:
                check_anchors(ts, anchors)

        def anchored(anchors: Any) -> Any:
            """The anchors as given (a tuple), else the tuple in process if auto-anchoring."""
            if anchors is not None:
                return tuple(anchors)
            cur = ts.thread_current if auto_anchor else None  # type: ignore[attr-defined]
            return (cur,) if cur is not None else None

        def emit(values: Sequence[Any], stream: str = "default", *, anchors: Any = None,
                 tup_id: Any = None, direct_task: int | None = None,
                 need_task_ids: bool = False) -> list[int] | None:
            if direct():
                return real_emit(values, stream, anchors=anchors, tup_id=tup_id,
                                 direct_task=direct_task, need_task_ids=need_task_ids)
            check(stream, direct_task, anchors)
            values = tuple(values)
            anchors = anchored(anchors)
            if spout:
                ts.thread_emits += 1  # type: ignore[attr-defined]
                if tup_id is not None:
                    ts.put_tracked += 1  # type: ignore[attr-defined]
                    return _wait(thread, ts, lambda: _tracked(ts, real_emit, values, stream,
                                                              tup_id, direct_task,
                                                              need_task_ids), need_task_ids)
            if need_task_ids:
                return _wait(thread, ts, lambda: real_emit(
                    values, stream, anchors=anchors, direct_task=direct_task,
                    need_task_ids=True), True)
            put(ts, _one, (real_emit, values, stream, anchors, direct_task), anchors)
            return None

        def emit_many(values_list: Sequence[Sequence[Any]], stream: str = "default", *,
                      anchors: Any = None) -> None:
            if direct():
                return real_many(values_list, stream, anchors=anchors)
            check(stream, None, anchors)
            vals = [tuple(v) for v in values_list]
            if not vals:
                return
            anchors = anchored(anchors)
            if spout:
                ts.thread_emits += len(vals)  # type: ignore[attr-defined]
            put(ts, _many, (real_many, vals, stream, anchors), anchors)

        emit.many = emit_many  # type: ignore[attr-defined]
        inst.emit = emit
        inst.emit_many = emit_many
        inst.report_error = lambda e: real_report(e) if direct() else put(ts, real_report, (e,))
        if not spout:
            real_ack, real_fail = inst.ack, inst.fail
            samples: dict[int, float] = {}
            ts.thread_samples = samples  # type: ignore[attr-defined]

            def ack(tup: Tuple) -> None:
                if samples:
                    t0 = samples.pop(id(tup), None)
                    if t0 is not None:
                        ts.proc_ms += (_perf() - t0) * 1000.0
                        ts.proc_n += 1
                if direct():
                    real_ack(tup)
                else:
                    put(ts, real_ack, (tup,))

            inst.ack = ack
            inst.fail = lambda tup: real_fail(tup) if direct() else put(ts, real_fail, (tup,))


def _count_acked(ts: TaskState, n: int) -> None:
    ts.acked += n


def _one(real_emit: Callable[..., Any], values: tuple, stream: str, anchors: Any,
         direct_task: int | None) -> None:
    real_emit(values, stream, anchors=anchors, direct_task=direct_task)


def _many(real_many: Callable[..., None], vals: list[tuple], stream: str, anchors: Any) -> None:
    real_many(vals, stream, anchors=anchors)


def _tracked(ts: TaskState, real_emit: Callable[..., Any], values: tuple, stream: str,
             tup_id: Any, direct_task: int | None, need_task_ids: bool) -> Any:
    try:
        return real_emit(values, stream, tup_id=tup_id, direct_task=direct_task,
                         need_task_ids=need_task_ids)
    finally:
        ts.applied_tracked += 1  # type: ignore[attr-defined]


def _wait(thread: Dedicated, ts: TaskState, fn: Callable[[], Any], wait: bool) -> Any:
    """Queue ``fn`` for the loop; with ``wait``, return its result (or raise its error)."""
    if not wait:
        thread.put(ts, fn, ())
        return None
    done = threading.Event()
    box: list[Any] = []

    def run() -> None:
        try:
            box.append(fn())
        except BaseException as exc:  # handed back to the component's thread
            box.append(exc)
            box.append(None)
        finally:
            done.set()
    thread.put(ts, run, ())
    while not done.wait(0.1):
        if not thread.worker.running:
            raise RuntimeError("the worker stopped before the emit was applied")
    if len(box) == 2:
        raise box[0]
    return box[0]


class ThreadedBolt(Dedicated, BoltExecutor):
    """A bolt executor whose tasks' ``process``/``process_batch`` run on their own thread."""

    def __init__(self, worker: Worker, component_id: str, tasks: list[TaskState]) -> None:
        super().__init__(worker, component_id, tasks)
        #: a lazy_batch class gets a TupleBatch of Tuples: its queue takes no runs
        self.lazy_class: bool = bool(getattr(type(tasks[0].instance), "lazy_batch", False)) \
            and self.batch_mode
        self.lazy = False
        self.timeout = float(tasks[0].conf.get("topology.message.timeout.secs", 30))
        for ts in tasks:
            ts.thread_current = None  # type: ignore[attr-defined]
        self._init_thread()

    def run_once(self) -> int:
        n = self.apply()
        if self.control or any(ts.queue for ts in self.tasks):
            self.wake_thread.set()
        return n

    def _serve(self) -> None:
        batch = self.batch
        while self.alive:
            done = self._run_control()
            for ts in self.tasks:
                q = ts.queue
                if q:
                    done += self._batch(ts, q, batch) if self.batch_mode else \
                        self._tuples(ts, q, batch)
            if not done:
                self._idle(IDLE_WAIT)

    def _tuples(self, ts: TaskState, q: deque[Tuple], batch: int) -> int:
        process = ts.instance.process
        put = self.put
        worker = self.worker
        tick_src = self.tick_src
        auto_ack, auto_fail, auto_anchor = self.auto_ack, self.auto_fail, self.auto_anchor
        ack, fail = worker.ack_tuple, worker.fail_tuple
        samples = None if auto_ack else ts.thread_samples  # type: ignore[attr-defined]
        n = plain = 0
        self.busy = 1               # before a tuple leaves the queue (Worker.queued)
        t0 = _perf()
        while q and n < batch and self.alive:
            tup = q.popleft()
            n += 1
            if tup.src is tick_src:
                self._tick(ts, tup)
                continue
            if samples is not None and len(samples) < MAX_SAMPLES:
                samples[id(tup)] = _perf()
            if auto_anchor:
                ts.thread_current = tup  # type: ignore[attr-defined]
            try:
                process(tup)
            except Exception as exc:
                put(ts, worker.report_error, (ts, exc))
                if auto_fail:
                    put(ts, fail, (ts, tup))
            else:
                if auto_ack:
                    if tup.roots:
                        put(ts, ack, (ts, tup))
                    else:
                        plain += 1      # untracked: counted, in one call for the pass
            ts.thread_current = None  # type: ignore[attr-defined]
        if plain:
            put(ts, _count_acked, (ts, plain))
        spent = _perf() - t0
        ts.exec_ms += spent * 1000.0
        ts.exec_n += n
        ts.executed += n
        if auto_ack:    # each tuple acked in the pass: processed from its start to its end
            ts.proc_ms += spent * 1000.0 * n
            ts.proc_n += n
        self.busy = 0
        if samples and len(samples) >= MAX_SAMPLES:    # never acked: forget the oldest
            oldest = _perf() - self.timeout
            for key in [k for k, t0 in samples.items() if t0 < oldest]:
                del samples[key]
        return n

    def _batch(self, ts: TaskState, q: deque[Tuple], batch: int) -> int:
        worker = self.worker
        put = self.put
        tick_src = self.tick_src
        self.busy = 1
        tuples = [q.popleft() for _ in range(min(len(q), batch))]
        n = len(tuples)
        for t in tuples:
            if t.src is tick_src:
                self._tick(ts, t)
        tuples = [t for t in tuples if t.src is not tick_src]
        if tuples:
            t0 = _perf()
            arg = TupleBatch(tuples, len(tuples)) if self.lazy_class else tuples  # type: ignore[arg-type]
            try:
                ts.instance.process_batch(arg)
            except Exception as exc:
                put(ts, worker.report_error, (ts, exc))
                if self.auto_fail:
                    for t in tuples:
                        put(ts, worker.fail_tuple, (ts, t))
            else:
                if self.auto_ack:
                    plain = 0
                    for t in tuples:
                        if t.roots:
                            put(ts, worker.ack_tuple, (ts, t))
                        else:
                            plain += 1
                    if plain:
                        put(ts, _count_acked, (ts, plain))
            spent = _perf() - t0
            ts.exec_ms += spent * 1000.0
            ts.exec_n += len(tuples)
            ts.executed += len(tuples)
            if self.auto_ack:
                ts.proc_ms += spent * 1000.0 * len(tuples)
                ts.proc_n += len(tuples)
        self.busy = 0
        return n

    def _tick(self, ts: TaskState, tup: Tuple) -> None:
        try:
            ts.instance.process_tick(tup)
        except Exception as exc:
            self.put(ts, self.worker.report_error, (ts, exc))

    def stop(self) -> None:
        if self.stop_thread():
            super().stop()


class ThreadedSpout(Dedicated, SpoutExecutor):
    """A spout executor whose tasks' ``next_tuple``, ``ack`` and ``fail`` run on their own
    thread."""

    active: bool

    def __init__(self, worker: Worker, component_id: str, tasks: list[TaskState]) -> None:
        super().__init__(worker, component_id, tasks)
        for ts in tasks:
            ts.thread_emits = 0      # type: ignore[attr-defined]
            ts.put_tracked = 0       # type: ignore[attr-defined]
            ts.applied_tracked = 0   # type: ignore[attr-defined]
        #: the thread's view of ``active``: flipped in order with activate/deactivate calls
        self.thread_active = False
        #: the thread waits for activation or for the throttle to lift
        self.parked = False
        self.settled = threading.Event()
        self._init_thread()

    def pending_calls(self, ts: TaskState) -> int:
        """Tracked emits made and not yet applied by the loop (not in ``pending`` yet)."""
        return ts.put_tracked - ts.applied_tracked  # type: ignore[attr-defined]

    def run_once(self) -> int:
        done = self.apply()
        worker = self.worker
        for ts in self.tasks:
            q = ts.queue
            while q:
                self._completion(ts, q.popleft())
                done += 1
            deferred = ts.deferred  # type: ignore[attr-defined]
            if deferred:            # untracked emits with a tup_id: acked at once
                ts.deferred = []    # type: ignore[attr-defined]
                ts.acked += len(deferred)
                for tup_id in deferred:
                    self._call(ts, ts.instance.ack, tup_id)
        if self.parked and self.active and not worker.throttled:
            self.wake_thread.set()
        return done

    def set_active(self, active: bool) -> None:
        """Activation reaches the thread as calls: ``activate`` runs there before the first
        ``next_tuple``, and no ``next_tuple`` follows ``deactivate``."""
        if active == self.active:
            return
        self.active = active
        for ts in self.tasks:
            self._call(ts, ts.instance.activate if active else ts.instance.deactivate)
        self._call(self.tasks[0], self._flip, active)
        #: set once the thread has made the calls (``Worker.activate`` waits for it)
        self.settled = threading.Event()
        self._call(self.tasks[0], self.settled.set)

    def _flip(self, active: bool) -> None:
        self.thread_active = active

    def _serve(self) -> None:
        worker = self.worker
        batch = self.batch
        max_pending = self.max_pending
        while self.alive:
            self._run_control()
            if not self.thread_active or worker.throttled:
                self.parked = True
                self._idle(IDLE_WAIT)
                self.parked = False
                continue
            emitted = 0
            soonest = None
            for ts in self.tasks:
                now = time.monotonic()
                if ts.idle_until > now:   # type: ignore[attr-defined]
                    soonest = ts.idle_until if soonest is None else min(soonest, ts.idle_until)  # type: ignore[attr-defined]
                    continue
                next_tuple = ts.instance.next_tuple
                for _ in range(batch):
                    if max_pending and (self.pending(ts) + self.pending_calls(ts)
                                        >= max_pending):
                        break
                    before = ts.thread_emits  # type: ignore[attr-defined]
                    try:
                        next_tuple()
                    except Exception as exc:
                        self.put(ts, worker.report_error, (ts, exc))
                        ts.idle_until = now + self.idle_secs  # type: ignore[attr-defined]
                        break
                    if ts.thread_emits == before:  # type: ignore[attr-defined]
                        ts.idle_until = now + self.idle_secs  # type: ignore[attr-defined]
                        break
                    emitted += 1
                    if self.control:
                        break
            if not emitted:
                wait = IDLE_WAIT if soonest is None else max(0.0, soonest - time.monotonic())
                self._idle(min(wait, IDLE_WAIT) or self.idle_secs)

    def stop(self) -> None:
        if self.stop_thread():
            super().stop()


def threaded_class(base: type[Executor]) -> type[Executor]:
    """The threaded executor class for ``base`` (a bolt or spout executor class)."""
    return ThreadedSpout if issubclass(base, SpoutExecutor) else ThreadedBolt
