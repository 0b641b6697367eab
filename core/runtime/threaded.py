"""Components on a thread of their own, for components that block: the thread, the outbox,
the control queue and the proxies (the executors are in
:mod:`squall.runtime.threaded_executors`).

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

from squall.api.tuple import Tuple
from squall.runtime.emit_general import check_anchors, check_emit
from squall.runtime.executors import _perf
from squall.runtime.emit_paths import KEYWORDS, positional_options
from squall.runtime.tasks import TaskState

if TYPE_CHECKING:
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

    def wait_for(self, ts: TaskState, fn: Callable[..., Any], args: tuple) -> Any:
        """On the component thread: have the loop call ``fn(*args)`` and return its result
        (or raise its error)."""
        done = threading.Event()
        outcome: list[Any] = [None, None]       # result, error

        def run() -> None:
            try:
                outcome[0] = fn(*args)
            except BaseException as exc:        # handed back to the component's thread
                outcome[1] = exc
            finally:
                done.set()
        self.put(ts, run, ())
        while not done.wait(0.1):
            if not self.worker.running:
                raise RuntimeError("the worker stopped before the emit was applied")
        if outcome[1] is not None:
            raise outcome[1]
        return outcome[0]

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

        def emit(values: Sequence[Any], stream: str = "default", _kw: object = KEYWORDS,
                 anchors: Any = None, tup_id: Any = None, direct_task: int | None = None,
                 need_task_ids: bool = False) -> list[int] | None:
            if _kw is not KEYWORDS:
                raise positional_options()
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
                    args = (ts, real_emit, values, stream, tup_id, direct_task, need_task_ids)
                    if need_task_ids:
                        return self.wait_for(ts, _tracked, args)
                    put(ts, _tracked, args)
                    return None
            if need_task_ids:
                return self.wait_for(ts, _one, (real_emit, values, stream, anchors, direct_task,
                                                True))
            put(ts, _one, (real_emit, values, stream, anchors, direct_task), anchors)
            return None

        def emit_many(values_list: Sequence[Sequence[Any]], stream: str = "default",
                      _kw: object = KEYWORDS, anchors: Any = None) -> None:
            if _kw is not KEYWORDS:
                raise positional_options("emit_many", "values_list", "anchors")
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
         direct_task: int | None, need_task_ids: bool = False) -> list[int] | None:
    return real_emit(values, stream, anchors=anchors, direct_task=direct_task,
                     need_task_ids=need_task_ids)


def _many(real_many: Callable[..., None], vals: list[tuple], stream: str, anchors: Any) -> None:
    real_many(vals, stream, anchors=anchors)


def _tracked(ts: TaskState, real_emit: Callable[..., Any], values: tuple, stream: str,
             tup_id: Any, direct_task: int | None, need_task_ids: bool) -> Any:
    try:
        return real_emit(values, stream, tup_id=tup_id, direct_task=direct_task,
                         need_task_ids=need_task_ids)
    finally:
        ts.applied_tracked += 1  # type: ignore[attr-defined]
