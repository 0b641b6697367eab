"""Event-time windows with a Count window, a Count slide, or both.

The watermark, the tuples held in event order (timestamp, ties in arrival order), late
tuples and failed windows' replays are those of duration windows on event time
(:class:`~squall.windowing.event_time.EventWindows`, whose ``add`` this class keeps: the
cost per tuple is theirs); what differs is which windows are evaluated and what they hold.
Only tuples whose timestamp is at or behind the watermark take part:

- a ``Count(s)`` slide: each time the watermark advances, every ``s`` tuples it newly
  covers (in event order, since the last evaluation) evaluate the window ending at the
  ``s``-th of them, whose timestamp is the window's ``end`` (the window holds it); fewer
  than ``s`` wait for the next advance;
- a ``Duration(ms=S)`` slide (with a Count window): windows end at multiples of ``S`` ms,
  as duration windows do, and the window ending at ``E`` holds tuples with a timestamp
  before ``E``, evaluated once the watermark reaches ``E``; a window with no tuple that is
  new since the window before is skipped (the watermark may jump far on event time, and
  the same tuples would be evaluated once per slide);
- a ``Count(n)`` window holds the last ``n`` tuples (in event order) up to its end, its
  ``start`` being the timestamp of the oldest;
- a ``Duration(ms=L)`` window (with a Count slide) holds the tuples up to its end whose
  timestamp is in ``[end - L, end]``, its ``start`` being ``end - L``.

These are the processing-time rules (:mod:`squall.windowing.processing`) with timestamps for
arrival times. A tuple leaves (and is acked) once no later window can hold it: a count
window's oldest when newer tuples push them out (a tumbling count window's right after it is
evaluated), a duration window's once the next end is ``L`` past them. Like processing-time
count windows, the last tuples wait for more to come: ``topology.max.spout.pending`` must let
enough be in flight (``create_topology`` checks it).

When every input task is quiet the watermark moves to the latest timestamp heard (a count
slide evaluates every whole group of ``s`` tuples) or to the end of the window after it (a
duration slide evaluates the window holding it).

A window whose ``process_window`` raised is evaluated again with the same ``start`` and
``end`` (:mod:`squall.windowing.replays`), taking back the replays with a timestamp from its
earliest to its latest. One difference: a replay whose timestamp is still the watermark's
own (a count slide's window may end at the watermark, and it may not have moved since) is
not behind it, so it comes back as a new tuple, for a later window, and the failed window is
evaluated again without it, half the message timeout after its first replay came back.

Windows are views of the held list (``Window.view``): a tuple that is not late sorts after
every tuple evaluated, so later insertions leave them as they are. Single-threaded (the
worker's loop thread).
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from typing import Any

from squall.windowing.event_time import EventWindows
from squall.windowing.processing import Evaluate, Expire
from squall.windowing.spec import Count, WindowSpec
from squall.windowing.window import Window


class EventCountWindows(EventWindows):
    """One task's event-time windows when the window or the slide is a Count (see the
    module docstring); built and fed as :class:`EventWindows` is."""

    __slots__ = ("count_length", "count_slide", "cut")

    def __init__(self, spec: WindowSpec, inputs: Iterable[int], idle_ms: int,
                 evaluate: Evaluate, expire: Expire, late: Callable[[Any], None], *,
                 replays: bool = True) -> None:
        super().__init__(spec, inputs, idle_ms, evaluate, expire, late, replays=replays)
        self.count_length = isinstance(spec.length, Count)
        self.count_slide = isinstance(spec.slide, Count)
        assert self.count_length or self.count_slide
        #: the held lists' index past the last window evaluated: the new tuples start here
        self.cut = 0

    def quiet_mark(self, latest: int) -> int:
        if self.count_slide:
            return latest
        return (latest // self.slide + 1) * self.slide

    def advance(self, mark: int, now_ms: int) -> None:
        """Evaluate, in order, every window that the watermark ``mark`` completes (at
        ``now_ms``, processing time)."""
        stamps = self.stamps
        slide = self.slide
        if self.count_slide:
            covered = bisect_right(stamps, mark, self.cut)
            while covered - self.cut >= slide:
                hi = self.cut + slide
                self._fire(hi, stamps[hi - 1], now_ms)
        else:
            while self.cut < len(stamps):
                end = (stamps[self.cut] // slide + 1) * slide   # the first with a new tuple
                if end > mark:
                    break
                self._fire(bisect_left(stamps, end, self.cut), end, now_ms)
        self._compact()

    def _fire(self, hi: int, end: int, now_ms: int) -> None:
        """Evaluate the window of the held tuples before index ``hi``, ending at ``end``."""
        stamps = self.stamps
        if self.count_length:
            self._evict_to(hi - self.length)
            lo = self.lo
            start = stamps[lo]
        else:
            start = end - self.length
            self._evict_below(start)
            lo = self.lo
        window = Window.view(self.tuples, lo, hi, max(self.cut, lo), self.expired, start, end)
        self.expired = []
        self.cut = hi
        if self.evaluate(window):
            if self.count_length and self.count_slide:
                # the next window ends ``slide`` tuples on at least: what it cannot hold
                # leaves now
                self._evict_to(hi - max(0, self.length - self.slide))
            return
        # failed (and their trees with them): forget them, and wait for their replays
        if self.failed is not None:
            self.failed.record(start, end, stamps[lo], hi - lo, now_ms, stamps[hi - 1] + 1)
        self.lo = hi

    def _compact(self) -> None:
        lo = self.lo
        super()._compact()
        if self.lo != lo:
            self.cut -= lo
