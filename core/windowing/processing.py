"""Windows on processing time: count windows, and duration windows fired on a timer.

:class:`ProcessingWindows` holds one task's tuples in arrival order and decides when a window
is evaluated and when a tuple leaves. It knows nothing of acking or emitting: its owner (the
windowed bolt executor) is called back with each :class:`Window` to evaluate and with every
tuple that leaves. Single-threaded (the worker's loop thread); clocks are passed in as ms.

A window is:

- ``Count(n)``: the last ``n`` tuples that arrived; ``start`` is the arrival time of its
  oldest tuple, ``end`` the evaluation time;
- ``Duration(ms=L)``: the tuples that arrived in ``[end - L, end)``, ``start`` being
  ``end - L``.

A ``Count(s)`` slide evaluates after every ``s`` tuples, ``end`` being the arrival time of
the last (which the window holds); a ``Duration(ms=S)`` slide evaluates windows ending
every ``S`` ms of processing time from the first tuple or timer, each when the timer passes
its end (a late timer catches up window by window). A window with no tuple is skipped, as
in Storm, even when tuples left since the last evaluation: those stay in ``expired`` until
the next window that is evaluated (``expired`` is what left since the last evaluation, so
``process_window`` never sees an empty window and no departure goes unreported). Right
after an evaluation, the tuples that the next window cannot hold leave (so a tumbling
window's tuples are acked as soon as it is evaluated).

Tuples are held in one list with a moving head (a tuple leaves by the head moving past it;
the list is replaced by its live part once the head is long), and their arrival times as
runs ``[ms, count]``: tuples added together share one entry. A batch costs one list
``extend``, a departure one slice, a window a view of the list (``Window.view``: sliced
only when the bolt reads ``tuples`` or ``new``): no Python step per tuple.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from squall.windowing.spec import Count, WindowSpec
from squall.windowing.window import Window

#: held entries before the head is cut off the list
COMPACT_AT = 1024
#: called with each window to evaluate; returns False when the evaluation failed (its caller
#: failed the window's tuples), and they are then forgotten by every later window
Evaluate = Callable[[Window], bool]
#: called with the tuples that left every window (the caller acks them)
Expire = Callable[[list[Any]], None]


class ProcessingWindows:
    """One task's processing-time windows (see the module docstring)."""

    __slots__ = ("count_length", "count_slide", "due", "evaluate", "expire", "expired",
                 "fresh", "held", "length", "lo", "since", "slide", "times")

    def __init__(self, spec: WindowSpec, evaluate: Evaluate, expire: Expire) -> None:
        self.count_length = isinstance(spec.length, Count)
        self.count_slide = isinstance(spec.slide, Count)
        self.length = spec.length.n if isinstance(spec.length, Count) else spec.length.ms
        self.slide = spec.slide.n if isinstance(spec.slide, Count) else spec.slide.ms
        self.evaluate = evaluate
        self.expire = expire
        #: the tuples held, oldest first, from ``held[lo]`` on, and their arrival times as
        #: runs [ms, count]
        self.held: list[Any] = []
        self.lo = 0
        self.times: deque[list[int]] = deque()
        #: held tuples that arrived since the last evaluation (the newest ``fresh``)
        self.fresh = 0
        #: tuples that left since the last evaluation (already handed to ``expire``)
        self.expired: list[Any] = []
        #: tuples since the last count-slide evaluation
        self.since = 0
        #: when the next duration-slide evaluation is due (ms; None until the first timer)
        self.due: int | None = None

    def __len__(self) -> int:
        return len(self.held) - self.lo

    def add(self, tuples: list[Any], now_ms: int) -> None:
        """Add tuples that arrived at ``now_ms``, in order; a count slide evaluates every
        window they complete, in order."""
        if not self.count_slide:
            if self.due is None:        # the schedule starts with the first tuple or timer
                self.due = now_ms + self.slide
            self._append(tuples, now_ms)
            if self.count_length and len(self) > self.length:
                self._evict_count(self.length)      # not in the next window: leave now
            return
        n = len(tuples)
        i = 0
        while i < n:
            k = min(n - i, self.slide - self.since)
            self._append(tuples if k == n else tuples[i:i + k], now_ms)
            i += k
            self.since += k
            if self.since == self.slide:
                self.since = 0
                self._fire(now_ms, None)

    def on_time(self, now_ms: int) -> None:
        """The timer: a duration slide evaluates every window that ended by ``now_ms``, in
        order (a timer that comes late catches up; each window ends at its due time)."""
        if self.count_slide:
            return
        due = self.due
        if due is None:
            self.due = now_ms + self.slide
            return
        while due <= now_ms:
            if not len(self):
                # nothing held: the windows up to now are all skipped (what left waits, in
                # ``expired``, for the next window evaluated)
                self.due = due + ((now_ms - due) // self.slide + 1) * self.slide
                return
            self.due = due + self.slide
            self._fire(due, self.due)
            due = self.due

    def _append(self, tuples: list[Any], now_ms: int) -> None:
        lo = self.lo
        if lo >= COMPACT_AT and lo * 2 >= len(self.held):
            # the departed head, cut in one step: a new list, as windows handed out view
            # the old one
            self.held = self.held[lo:]
            self.lo = 0
        self.held.extend(tuples)
        times = self.times
        if times and times[-1][0] == now_ms:
            times[-1][1] += len(tuples)
        else:
            times.append([now_ms, len(tuples)])
        self.fresh += len(tuples)

    def _fire(self, end: int, next_due: int | None) -> None:
        """Evaluate the window ending at ``end``: every held tuple for a count slide, those
        that arrived before ``end`` for a duration slide, whose next window ends at
        ``next_due``."""
        if self.count_length:
            self._evict_count(self.length)
        else:
            self._evict_time(end - self.length)
        held, lo = self.held, self.lo
        size = len(held) - lo
        k = size if next_due is None else self._arrived_by(end)
        if not k:
            return          # an empty window is skipped; ``expired`` waits for the next one
        fresh = min(max(self.fresh - (size - k), 0), k)   # the window's newest are new
        if self.count_length:
            start = self.times[0][0] if self.times else end
        else:
            start = end - self.length
        window = Window.view(held, lo, lo + k, lo + k - fresh, self.expired, start, end)
        self.expired = []
        self.fresh -= fresh
        if not self.evaluate(window):
            self._drop(k)           # failed (and their trees with them): forget them
        # what the next window cannot hold leaves now
        if self.count_length:
            if self.count_slide:
                self._evict_count(max(0, self.length - self.slide))
        elif next_due is not None:
            self._evict_time(next_due - self.length)

    def _arrived_by(self, end: int) -> int:
        """How many held tuples (the oldest) arrived before ``end``."""
        k = 0
        for ms, n in self.times:
            if ms >= end:
                break
            k += n
        return k

    def _drop(self, k: int) -> None:
        """Forget the oldest ``k`` held tuples (not expired: they failed)."""
        self.lo += k
        self._trim_times(k)

    def _evict_count(self, keep: int) -> None:
        """The oldest tuples beyond ``keep`` leave."""
        k = len(self) - keep
        if k <= 0:
            return
        lo = self.lo
        gone = self.held[lo:lo + k]
        self.lo = lo + k
        self._trim_times(k)
        self._gone(gone)

    def _trim_times(self, k: int) -> None:
        times = self.times
        while k:
            run = times[0]
            if run[1] <= k:
                k -= run[1]
                times.popleft()
            else:
                run[1] -= k
                k = 0

    def _evict_time(self, cutoff: int) -> None:
        """The tuples that arrived before ``cutoff`` leave."""
        times = self.times
        k = 0
        while times and times[0][0] < cutoff:
            k += times.popleft()[1]
        if k:
            lo = self.lo
            gone = self.held[lo:lo + k]
            self.lo = lo + k
            self._gone(gone)

    def _gone(self, gone: list[Any]) -> None:
        left = len(self)
        if self.fresh > left:
            self.fresh = left
        self.expired.extend(gone)
        self.expire(gone)
