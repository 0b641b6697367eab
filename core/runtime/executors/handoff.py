"""Calls a component on the worker's loop makes from a thread of its own (an async client's
callback that emits and acks, a poller): handed to the loop and made there, in call order, as
a ``dedicated_thread`` component's are (:mod:`.threaded`).

Routing, acking and the outbox belong to the loop thread: a bolt's helper thread that emitted
and acked there itself changed the ack ledger's fold while the loop flushed it, and killed the
worker. So a bolt's ``ack`` and ``fail``, and the ``emit`` and ``emit_many`` of the components
that may call from threads of their own (``Executor.checks_threads``: spouts, and bolts that ack
themselves, ``auto_ack = False``), compare the calling thread with the loop's
(:attr:`Handoff.ident`) and come here when they differ. A bolt that acks automatically emits
from its callbacks, on the loop's thread: its emits check nothing (a thread compare in every
emit cost word count 5 to 7 % more instructions per word, per-tuple).

Emit arguments are checked and the values copied at the call, so a mistake raises in the
caller and a list it reuses arrives as it was emitted; an emit without ``anchors`` is
unanchored (no tuple is in process on that thread); ``need_task_ids=True`` waits for the loop.
An error of a call when the loop makes it is reported as the component's, and its anchors fail
(their trees replay). A caller that outruns the loop waits at its next call once HANDOFF_CAP
calls wait; a spout's tracked emit (with a ``tup_id``) waits before it is handed over while
its task has ``topology.max.spout.pending`` trees in flight (:mod:`.pending`). Calls handed
over after the loop's last pass are not made (their trees time out).
Before the loop starts (``initialize``) and after it stops (``cleanup``) calls from any thread
go straight to the runtime, as they do for every component then.
"""
from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from threading import get_ident
from typing import TYPE_CHECKING, Any

from squall.api.tuple import Tuple
from squall.runtime.emit.fast import KEYWORDS, positional_options
from squall.runtime.emit.general import (
    anchors_of, as_values, check_anchors, check_arity, check_emit, values_list_of,
)

if TYPE_CHECKING:
    from squall.runtime.executors.pending import PendingLimit
    from squall.runtime.loop import Loop
    from squall.runtime.task import TaskState

#: calls waiting for the loop before a calling thread waits for it to make some
HANDOFF_CAP = 8192


class Handoff:
    """One executor's way from other threads to the worker's loop.

    ``ident`` is the loop thread's id once a call made on it has learned it (:meth:`here`);
    the emit and ack paths compare ``threading.get_ident()`` with it."""

    __slots__ = ("calls", "fail_tuple", "ident", "limit", "lock", "loop", "report_error",
                 "room", "scheduled", "waiting")

    def __init__(self, loop: Loop, report_error: Callable[[TaskState, BaseException], None],
                 fail_tuple: Callable[[TaskState, Tuple], None]) -> None:
        self.ident = -1
        self.loop = loop
        self.report_error = report_error
        self.fail_tuple = fail_tuple
        #: (task, function, args, anchors) for the loop to call, in order
        self.calls: deque[tuple[TaskState, Callable[..., Any], tuple, Sequence[Any]]] = deque()
        #: whether the loop has :meth:`apply` queued or running (under ``lock``: callers on
        #: several threads, and the loop emptying ``calls``, agree on who queues it)
        self.scheduled = False
        self.lock = threading.Lock()
        self.room = threading.Event()
        self.waiting = False
        #: what a tracked emit waits for room in (a spout with max pending: .pending)
        self.limit: PendingLimit | None = None

    def limit_tracked(self, limit: PendingLimit) -> None:
        """Have tracked emits (with a ``tup_id``) wait for room in ``limit`` before they are
        handed over (a spout's ``topology.max.spout.pending``)."""
        self.limit = limit

    def here(self) -> bool:
        """On any thread whose id is not :attr:`ident`: whether it may make a call itself,
        as the loop's thread (learned now) or any thread while no loop runs; else the call is
        handed over (:meth:`emit`, :meth:`emit_many`, :meth:`put`)."""
        loop = self.loop
        if not loop.looping:
            return True
        if loop.on_loop_thread():
            self.ident = get_ident()
            return True
        return False

    def queued(self) -> int:
        """Calls handed over and not made yet (read from any thread)."""
        return len(self.calls)

    # -- on the calling thread -------------------------------------------------------------------
    def put(self, ts: TaskState, fn: Callable[..., Any], args: tuple,
            anchors: Sequence[Any] = ()) -> None:
        """Have the loop call ``fn(*args)`` at the start of its next pass, after every call
        handed over before (:meth:`apply`). Waits while more than HANDOFF_CAP calls wait."""
        calls = self.calls
        with self.lock:
            calls.append((ts, fn, args, anchors))
            schedule = not self.scheduled
            self.scheduled = True
        if schedule:
            self.loop.submit(self.apply)    # the loop applies this call and any after it
        elif len(calls) > HANDOFF_CAP:
            self.room.clear()
            self.waiting = True
            while len(calls) > HANDOFF_CAP // 2 and self.loop.running:
                self.room.wait(0.1)
            self.waiting = False

    # -- on the loop thread ----------------------------------------------------------------------
    def apply(self) -> None:
        """Make the calls handed over, in order: an error of one is reported as its task's,
        and the tracked Tuples among its anchors fail (their trees replay)."""
        calls = self.calls
        while True:
            while calls:
                ts, fn, args, anchors = calls.popleft()
                try:
                    fn(*args)
                except Exception as exc:
                    self.report_error(ts, exc)
                    for a in anchors:
                        if a.__class__ is Tuple and a.roots:
                            self.fail_tuple(ts, a)
                if self.waiting and len(calls) <= HANDOFF_CAP // 2:
                    self.room.set()
            with self.lock:
                if not calls:
                    self.scheduled = False
                    return

    def call(self, ts: TaskState, fn: Callable[..., Any], args: tuple) -> Any:
        """Have the loop call ``fn(*args)`` and return its result here (or raise its error)."""
        done = threading.Event()
        outcome: list[Any] = [None, None]       # result, error

        def run() -> None:
            try:
                outcome[0] = fn(*args)
            except BaseException as exc:        # handed back to the calling thread
                outcome[1] = exc
            finally:
                done.set()
        self.put(ts, run, ())
        while not done.wait(0.1):
            if not self.loop.running:
                raise RuntimeError("the worker stopped before the emit was applied")
        if outcome[1] is not None:
            raise outcome[1]
        return outcome[0]

    def emit(self, ts: TaskState, emit: Callable[..., Any], values: Any, stream: str,
             _kw: object, anchors: Any, tup_id: Any, direct_task: int | None,
             need_task_ids: bool) -> list[int] | None:
        """An ``emit`` of task ``ts`` from another thread: checked here, made by the loop
        with ``emit``."""
        if _kw is not KEYWORDS:
            raise positional_options()
        if stream is None:
            stream = "default"
        check_emit(ts, stream, direct_task)
        anchors = self._anchors(ts, anchors)
        values = as_values(ts, stream, values)
        check_arity(ts, stream, values)
        args: tuple[Any, ...] = (values, stream, KEYWORDS, anchors, tup_id, direct_task,
                                 need_task_ids)
        limit = self.limit
        if tup_id is not None and limit is not None:
            limit.enter(ts)         # waits while the task is at max pending
            args = (ts, emit, *args)
            emit = limit.tracked_emit
        if need_task_ids:
            return self.call(ts, emit, args)    # type: ignore[no-any-return]
        self.put(ts, emit, args, anchors)
        return None

    def emit_many(self, ts: TaskState, emit_many: Callable[..., Any], values_list: Any,
                  stream: str, _kw: object, anchors: Any) -> None:
        """An ``emit_many`` of task ``ts`` from another thread, as :meth:`emit`."""
        if _kw is not KEYWORDS:
            raise positional_options("emit_many", "values_list", "anchors")
        if stream is None:
            stream = "default"
        check_emit(ts, stream, None)
        anchors = self._anchors(ts, anchors)
        vals = [as_values(ts, stream, v) for v in values_list_of(ts, stream, values_list)]
        for v in vals:
            check_arity(ts, stream, v)
        if vals:
            self.put(ts, emit_many, (vals, stream, KEYWORDS, anchors), anchors)

    @staticmethod
    def _anchors(ts: TaskState, anchors: Any) -> tuple:
        """The anchors as given (any iterable, read once), checked, or none: no tuple is in
        process on this thread."""
        if anchors is None:
            return ()
        anchors = anchors_of(ts, anchors)
        check_anchors(ts, anchors)
        return tuple(anchors)
