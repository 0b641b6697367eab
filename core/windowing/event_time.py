"""Windows on event time: each tuple's timestamp field (int ms since the epoch) places it;
windows fire as the watermark passes their end.

Windows are aligned: a ``Duration(ms=S)`` slide gives windows ending at every multiple of
``S`` ms since the epoch, each holding the tuples whose timestamp is in ``[end - L, end)``
for a ``Duration(ms=L)`` window. A window is evaluated once the watermark reaches its end,
each window once and in order of its end (a failed one once more, with its replays: below);
windows with no tuple are skipped (as in Storm).

The watermark (:class:`EventWindows`) is the least, over the input tasks, of each task's
latest timestamp, minus ``max_lag``; it never goes back. It is computed every
``watermark_interval`` ms. Every task of every input component counts, including tasks not
heard from yet, so the watermark waits for all of them, as Storm's waits for all its input
streams. An input task quiet for ``idle_ms`` (half of ``topology.message.timeout.secs``:
tuples waiting longer for it would time out anyway) stops holding the watermark back, and
counts again from its next tuple. When every input task is quiet, the watermark moves to the
end of the last window holding the latest timestamp heard: every window of what arrived is
evaluated (and its tuples acked) instead of waiting, past their timeout, for a tuple that may
never come.

A tuple whose timestamp is behind the watermark when it arrives is late: its window was
evaluated already (or may have been); it is handed to the ``late`` callback instead of a
window, unless it is the replay of a tuple whose window failed: a window whose
``process_window`` raised is remembered, and the tuples that come back into its range are
held for it and evaluated again in a window with the same start and end, after the windows
evaluated meanwhile (:mod:`squall.windowing.replays` says which tuples, when, and for how
long; the failed window's tuples are in no later window, as it failed them). Only such a
failure is remembered: the replay of a tuple whose window was evaluated (its emits failed
downstream, or it timed out) is late, and so is every replay of a tuple older than the
watermark of a task that started afresh (a restarted worker).

Tuples are held sorted by timestamp (ties in arrival order) in two parallel lists with a
moving head, so the common case (timestamps nearly in order) appends; the lists are
replaced by their live part once the head is long. A tuple that is not late sorts after
every evaluated window's tuples, so a window is a view of the list (``Window.view``) that
later insertions leave as it is. Single-threaded (the worker's loop thread).

:class:`EventWindows` decides the windows of a Duration window and slide;
:class:`squall.windowing.event_count.EventCountWindows` keeps its watermark, holding, late
tuples and replays and decides the windows of a Count window or slide instead (it overrides
:meth:`EventWindows.advance` and :meth:`EventWindows.quiet_mark`).
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from typing import Any

from squall.windowing.processing import Evaluate, Expire
from squall.windowing.replays import FailedWindow, FailedWindows
from squall.windowing.spec import Count, WindowSpec
from squall.windowing.window import Window

#: held entries before the head is cut off the lists
COMPACT_AT = 1024


class EventWindows:
    """One task's event-time windows and watermark (see the module docstring): a Duration
    window and slide (``length`` and ``slide`` in ms; in tuples where a subclass takes a
    Count).

    ``inputs`` are the task ids the watermark waits for (a task not listed that sends is
    added). ``late(tup)`` gets every tuple behind the watermark that no failed window takes
    back. ``replays``: whether a failed window waits for its tuples to come back (False
    when none will: without ackers nothing is replayed)."""

    __slots__ = ("evaluate", "expire", "expired", "failed", "heard", "idle_ms", "inputs",
                 "lag", "late", "latest", "length", "lo", "next_end", "next_mark",
                 "prev_end", "slide", "stamps", "started", "tuples", "watermark",
                 "watermark_ms")

    def __init__(self, spec: WindowSpec, inputs: Iterable[int], idle_ms: int,
                 evaluate: Evaluate, expire: Expire, late: Callable[[Any], None], *,
                 replays: bool = True) -> None:
        self.length = spec.length.n if isinstance(spec.length, Count) else spec.length.ms
        self.slide = spec.slide.n if isinstance(spec.slide, Count) else spec.slide.ms
        self.lag = spec.max_lag_ms
        self.watermark_ms = spec.watermark_ms
        self.idle_ms = idle_ms
        self.inputs = set(inputs)
        self.evaluate = evaluate
        self.expire = expire
        self.late = late
        self.stamps: list[int] = []
        self.tuples: list[Any] = []
        self.lo = 0
        #: input task -> its latest timestamp, and when (processing ms) it was last heard
        self.latest: dict[int, int] = {}
        self.heard: dict[int, int] = {}
        self.started: int | None = None
        #: the watermark (None until every input task was heard or left out as quiet)
        self.watermark: int | None = None
        self.next_mark: int | None = None
        #: the end of the next window to evaluate, of the last one evaluated
        self.next_end: int | None = None
        self.prev_end: int | None = None
        self.expired: list[Any] = []
        #: failed windows waiting for their replays: for up to twice the message timeout
        #: (``idle_ms`` is half of it), then at most ``idle_ms`` once one came back
        self.failed = FailedWindows(4 * idle_ms, idle_ms) if replays else None

    def __len__(self) -> int:
        return len(self.stamps) - self.lo

    def add(self, tup: Any, stamp: int, task: int, now_ms: int) -> None:
        """A tuple from input task ``task`` with timestamp ``stamp`` arrived at ``now_ms``
        (processing time)."""
        if self.started is None:
            self.started = now_ms
        self.heard[task] = now_ms
        if stamp > self.latest.get(task, stamp - 1):
            self.latest[task] = stamp
        if task not in self.inputs:
            self.inputs.add(task)
        wm = self.watermark
        if wm is not None and stamp < wm:
            failed = self.failed
            if failed and failed.take(tup, stamp, now_ms):     # a failed window's replay
                for w in failed.ready(now_ms):
                    self._again(w, now_ms)
                return
            self.late(tup)
            return
        stamps = self.stamps
        if not stamps or stamp >= stamps[-1]:
            stamps.append(stamp)
            self.tuples.append(tup)
        else:
            i = bisect_right(stamps, stamp, self.lo)
            stamps.insert(i, stamp)
            self.tuples.insert(i, tup)

    def on_time(self, now_ms: int) -> None:
        """The timer: every ``watermark_interval`` the watermark is computed, and the
        windows it passed are evaluated; failed windows whose replays are ready are
        evaluated again."""
        if self.started is None:
            self.started = now_ms
        failed = self.failed
        if failed:
            for w in failed.ready(now_ms):
                self._again(w, now_ms)
        if self.next_mark is not None and now_ms < self.next_mark:
            return
        self.next_mark = now_ms + self.watermark_ms
        mark = self.compute_watermark(now_ms)
        if mark is not None and (self.watermark is None or mark > self.watermark):
            self.watermark = mark
            self.advance(mark, now_ms)

    def compute_watermark(self, now_ms: int) -> int | None:
        """The least latest timestamp of the input tasks that hold the watermark back, minus
        the lag. When every task heard from has gone quiet, the end of the last window
        holding the greatest latest timestamp of them (nothing holds the watermark back, and
        every window of what is here is evaluated). None while a task not heard from yet may
        still speak, or none was heard."""
        started = self.started if self.started is not None else now_ms
        least: int | None = None
        quiet_most: int | None = None
        for task in self.inputs:
            heard = self.heard.get(task)
            if heard is None:
                if now_ms - started < self.idle_ms:
                    return None       # not heard from yet: wait for it (for a while)
                continue
            stamp = self.latest[task]
            if now_ms - heard >= self.idle_ms:
                # quiet: left out until it sends again
                if quiet_most is None or stamp > quiet_most:
                    quiet_most = stamp
                continue
            if least is None or stamp < least:
                least = stamp
        if least is not None:
            return least - self.lag
        if quiet_most is None:
            return None
        return self.quiet_mark(quiet_most)

    def quiet_mark(self, latest: int) -> int:
        """The watermark once every input task is quiet, ``latest`` being the greatest
        timestamp heard: one that evaluates every window holding a tuple heard."""
        # windows end at multiples of the slide; the last one holding T ends at or before
        # T + length (the latest timestamp itself would leave that window unevaluated)
        return (latest + self.length) // self.slide * self.slide

    def advance(self, mark: int, now_ms: int) -> None:
        """Evaluate, in order, every window ending at or before ``mark`` (at ``now_ms``,
        processing time)."""
        length, slide = self.length, self.slide
        stamps = self.stamps
        while True:
            if self.next_end is not None:
                self._evict_below(self.next_end - length)
            lo = self.lo
            if lo == len(stamps):
                break
            first = stamps[lo]
            end = (first // slide + 1) * slide     # the first window end after ``first``
            if end - length > first:
                self._evict_below(end - length)    # between two windows: in none
                continue
            if self.next_end is not None and self.next_end > end:
                end = self.next_end
            if end > mark:
                break
            hi = bisect_left(stamps, end, lo)
            prev = self.prev_end
            new_lo = lo if prev is None else bisect_left(stamps, prev, lo, hi)
            window = Window.view(self.tuples, lo, hi, new_lo, self.expired, end - length, end)
            self.expired = []
            self.prev_end = end
            self.next_end = end + slide
            if not self.evaluate(window):
                # failed (and their trees with them): forget them, and wait for their
                # replays
                if self.failed is not None:
                    self.failed.record(end - length, end, first, hi - lo, now_ms)
                self.lo = hi
        self._compact()

    def _again(self, w: FailedWindow, now_ms: int) -> None:
        """Evaluate failed window ``w`` again with the tuples that came back for it (all
        new); they leave once it is evaluated, or fail with it again (and it waits for
        their replays again)."""
        window = Window(w.tuples, w.tuples, self.expired, w.start, w.end)
        self.expired = []
        if self.evaluate(window):
            self.expired.extend(w.tuples)
            self.expire(w.tuples)
        elif self.failed is not None:
            self.failed.record(w.start, w.end, w.stamps[0], len(w.tuples), now_ms, w.until)

    def _evict_below(self, cutoff: int) -> None:
        """Tuples with a timestamp before ``cutoff`` leave (no later window holds them)."""
        self._evict_to(bisect_left(self.stamps, cutoff, self.lo))

    def _evict_to(self, hi: int) -> None:
        """The held tuples before index ``hi`` leave (no later window holds them)."""
        lo = self.lo
        if hi > lo:
            gone = self.tuples[lo:hi]
            self.lo = hi
            self.expired.extend(gone)
            self.expire(gone)

    def _compact(self) -> None:
        lo = self.lo
        if lo >= COMPACT_AT and lo * 2 >= len(self.stamps):
            # new lists, as windows handed out view the old ones
            self.stamps = self.stamps[lo:]
            self.tuples = self.tuples[lo:]
            self.lo = 0
