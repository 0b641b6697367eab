"""The windowed bolt executor: a bolt executor whose tasks' tuples go into windows instead
of ``process``, and whose windows are evaluated on its own (the worker's loop) thread, by
count as tuples arrive and by time from the executor's timer (``on_timer``).

Per task it holds one :class:`~squall.windowing.processing.ProcessingWindows`,
:class:`~squall.windowing.event_time.EventWindows` (a duration window and slide on event
time) or :class:`~squall.windowing.event_count.EventCountWindows` (a count window or slide on
event time) and acts on what they decide: it acks a tuple when it leaves its last window,
evaluates ``process_window`` with the window's tuples as the anchors of every emit made
without ``anchors=``, fails a window's tuples when ``process_window`` raises (an event-time
window is evaluated again with the replays of its tuples: :mod:`squall.windowing.replays`),
and sends late tuples to the late stream. The bolt's ``reset_timeout`` is the plain bolt's
(for the tuples its windows hold longer than the message timeout); its ``ack`` and ``fail``
raise.
Topologies without windowed bolts never build one (``executor_class``), so the plain bolt's
path is unchanged.
"""
from __future__ import annotations

import logging
import time
from itertools import repeat as _repeat
from itertools import starmap as _starmap
from collections.abc import Sequence
from typing import Any

from squall.api.tuple import Tuple
from squall.errors import TopologyError
from squall.runtime.executors.base import Services
from squall.runtime.executors.bolt import BoltExecutor
from squall.runtime.task import TaskState
from squall.windowing.event_count import EventCountWindows
from squall.windowing.event_time import EventWindows
from squall.windowing.processing import ProcessingWindows
from squall.windowing.spec import Count, WindowSpec
from squall.windowing.window import Window

log = logging.getLogger(__name__)

#: what ``_run_tuples`` reads for a tuple that lacks the timestamp field (not an int)
_MISSING = object()


def stamp_error(component: str, field: str | None, tup: Tuple) -> str:
    """The one-line error for a tuple of windowed bolt ``component`` whose timestamp field
    ``field`` is missing or not an int."""
    where = f"windowed bolt {component!r}"
    src = tup.src
    if field not in src.index:
        return (f"{where}: stream {src.component}:{src.stream} has no timestamp field "
                f"{field!r} (its fields: {list(src.fields)}); the tuple fails")
    stamp = tup[field]
    return (f"{where}: timestamp field {field!r} must be an int (ms since the epoch), got "
            f"{type(stamp).__name__} {stamp!r:.80}; the tuple fails")


class _Anchors:
    """The window in evaluation (None outside one): a task's emits without ``anchors=`` are
    anchored to its tuples."""

    __slots__ = ("window",)

    def __init__(self) -> None:
        self.window: Window | None = None


class WindowedBoltExecutor(BoltExecutor):
    """Runs the tasks of one :class:`squall.WindowedBolt` component (see the module
    docstring). Every method runs on the worker's loop thread."""

    def __init__(self, services: Services, component_id: str, tasks: list[TaskState]) -> None:
        super().__init__(services, component_id, tasks)
        #: the executor acks (when tuples leave their windows), not the bolt
        self.auto_ack = True
        self.clock = services.clock
        #: epoch seconds minus the loop's monotonic clock: processing time in ms since the
        #: epoch is (clock.now + offset) * 1000, with no system call per tuple
        self.offset = time.time() - time.monotonic()
        first = tasks[0]
        self.spec = WindowSpec.of(component_id, type(first.instance), first.conf)
        self.field = self.spec.timestamp_field
        self.idle_ms = int(float(first.conf.get("topology.message.timeout.secs") or 30) * 500)
        #: task -> its windows (ProcessingWindows, or EventWindows with a timestamp field)
        self.panes: dict[int, Any] = {}

    def now_ms(self) -> int:
        return int((self.clock.now + self.offset) * 1000)

    # -- installing: called once per task by the worker, after its emit ------------------------
    def install(self, ts: TaskState) -> None:
        inst = ts.instance
        cell = _Anchors()
        emit, emit_many = inst.emit, inst.emit_many

        def emit_anchored(values: Sequence[Any], stream: str = "default", *,
                          anchors: Sequence[Tuple] | None = None, tup_id: Any = None,
                          direct_task: int | None = None,
                          need_task_ids: bool = False) -> list[int] | None:
            if anchors is None and cell.window is not None:
                anchors = cell.window.tuples
            return emit(values, stream, anchors=anchors, tup_id=tup_id,
                        direct_task=direct_task, need_task_ids=need_task_ids)

        def emit_many_anchored(values_list: Sequence[Sequence[Any]], stream: str = "default",
                               *, anchors: Sequence[Tuple] | None = None) -> None:
            if anchors is None and cell.window is not None:
                anchors = cell.window.tuples
            emit_many(values_list, stream, anchors=anchors)

        inst.emit = emit_anchored
        inst.emit_many = emit_many_anchored
        inst.ack = inst.fail = self._not_for_windowed
        # a tuple held in a window longer than the message timeout: the plain bolt's reset
        inst.reset_timeout = self.reset_function(ts)
        self.panes[ts.task] = self._make_windows(ts, cell, emit)

    def _not_for_windowed(self, tup: Any) -> None:
        raise TopologyError(f"windowed bolt {self.component_id!r}: its inputs are acked when "
                            "they leave their last window (or failed with the window whose "
                            "process_window raised); ack() and fail() are not for it "
                            "(reset_timeout() keeps a held tuple's tree alive)")

    def _make_windows(self, ts: TaskState, cell: _Anchors, emit: Any
                      ) -> ProcessingWindows | EventWindows:
        """The task's windows, with the callbacks that evaluate a window (``process_window``
        with the window as the emits' anchors; on an exception, report it and fail the
        window's tuples), ack departing tuples and send late ones on."""
        inst = ts.instance
        acks = self.acks
        report_error = self.report_error

        def evaluate(window: Window) -> bool:
            cell.window = window
            try:
                inst.process_window(window)
            except Exception as exc:  # the executor goes on; see WindowedBolt
                report_error(ts, exc)
                for tup in window.tuples:
                    acks.fail_tuple(ts, tup)
                return False
            finally:
                cell.window = None
            return True

        if acks.acking:
            ack = acks.ack_tuple
            folded = acks.folded
            fold = folded.get

            def expire(gone: list[Any]) -> None:
                # each tuple's ack folded into the ledger inline, as BoltExecutor's tracked
                # pass does
                done = 0
                for tup in gone:
                    roots = tup.roots
                    if roots:
                        v = tup.id ^ tup.ackval
                        for r in roots:
                            folded[r] = fold(r, 0) ^ v
                        done += 1
                    else:
                        ack(ts, tup)    # untracked (counted there)
                ts.acked += done
        else:
            def expire(gone: list[Any]) -> None:
                ts.acked += len(gone)

        if not self.spec.event_time:
            return ProcessingWindows(self.spec, evaluate, expire)
        late_stream = self.spec.late_stream

        def late(tup: Tuple) -> None:
            if late_stream is not None:
                emit(tup.values, late_stream, anchors=[tup])
            expire([tup])

        # the watermark waits for every task of every input component
        ctx = ts.context
        inputs: list[int] = []
        if ctx is not None:
            for component, _ in ctx.this_sources():
                inputs.extend(ctx.component_tasks(component))
        spec = self.spec
        kind = EventCountWindows if isinstance(spec.length, Count) or isinstance(
            spec.slide, Count) else EventWindows
        # without ackers a failed window's tuples are not replayed: none is waited for
        return kind(spec, inputs, self.idle_ms, evaluate, expire, late, replays=acks.acking)

    # -- running ------------------------------------------------------------------------------
    def _run_tuples(self, ts: TaskState, q: Any, n: int) -> None:
        """Take ``n`` queued tuples into the task's windows (ticks to ``process_tick``)."""
        windows = self.panes[ts.task]
        popleft = q.popleft
        if self.field is None:
            if n == len(q):
                tuples = list(q)
                q.clear()
            else:
                tuples = list(_starmap(popleft, _repeat((), n)))
            if ts.ticks:
                tick_src = self.tick_src
                for tup in [t for t in tuples if t.src is tick_src]:
                    ts.ticks -= 1
                    self._tick(ts, tup)
                tuples = [t for t in tuples if t.src is not tick_src]
            if tuples:
                windows.add(tuples, self.now_ms())
            return
        now_ms = self.now_ms()
        field = self.field
        add = windows.add
        tick_src = self.tick_src
        for _ in range(n):
            tup = popleft()
            if tup.src is tick_src:
                ts.ticks -= 1
                self._tick(ts, tup)
                continue
            try:
                stamp = tup[field]
            except KeyError:
                stamp = _MISSING
            if stamp.__class__ is not int:
                self._bad_stamp(ts, tup)
                continue
            add(tup, stamp, tup.task, now_ms)

    def _bad_stamp(self, ts: TaskState, tup: Tuple) -> None:
        """A tuple without an int timestamp: one error line (a message, not an exception:
        the fault is the input's, and a traceback of the executor would point at squall),
        throttled with the component's other errors; the tuple fails and the task goes on.
        Failed here whatever ``auto_fail`` says: a windowed bolt cannot fail it itself."""
        self.report_error(ts, stamp_error(self.component_id, self.field, tup))
        self.acks.fail_tuple(ts, tup)

    def on_timer(self, now: float) -> None:
        now_ms = int((now + self.offset) * 1000)
        for windows in self.panes.values():
            windows.on_time(now_ms)

