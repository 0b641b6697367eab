"""Event-time windows whose ``process_window`` raised, waiting for the replays of their tuples.

The failed window's tuples fail, and a spout that replays sends them again with their
original timestamps, behind the watermark by then. :class:`FailedWindows` remembers each
failed window for a while and takes the tuples that come back into it, where they would
otherwise be late; :class:`~squall.windowing.event_time.EventWindows` evaluates the window
again, with the same start and end, when :meth:`FailedWindows.ready` says so. The rule:

- a tuple behind the watermark whose timestamp is in ``[first, until)`` of a remembered
  window (``first``: the earliest timestamp it held when it failed; ``until``: its end, or
  for a count window one past the latest timestamp it held) is held for it (the oldest
  failure first, if two could take it);
- the window is ready once it holds as many tuples as it held when it failed (its replays
  are back), or ``gather_ms`` (half ``topology.message.timeout.secs``) after the first of
  them arrived, so that the replays held are acked before they time out;
- a window none of whose tuples came back within ``wait_ms`` (twice the message timeout)
  of its failure is forgotten; so is a window once it is evaluated again.

Memory is bounded by the windows that failed in the last ``wait_ms`` and the tuples that
came back for them. Single-threaded (the worker's loop thread); clocks are passed in as ms.
"""
from __future__ import annotations

from bisect import bisect_right
from typing import Any


class FailedWindow:
    """One failed window: its bounds, and the tuples back for it, sorted by timestamp."""

    __slots__ = ("back_at", "end", "expect", "failed_at", "first", "stamps", "start",
                 "tuples", "until")

    def __init__(self, start: int, end: int, first: int, expect: int, now_ms: int,
                 until: int) -> None:
        self.start = start
        self.end = end
        #: the timestamps it takes back, ``[first, until)``, and how many tuples it held
        #: when it failed
        self.first = first
        self.until = until
        self.expect = expect
        self.failed_at = now_ms
        #: when the first tuple came back (None: none yet)
        self.back_at: int | None = None
        self.stamps: list[int] = []
        self.tuples: list[Any] = []

    def __repr__(self) -> str:
        return (f"FailedWindow([{self.start}, {self.end}), {len(self.tuples)} of "
                f"{self.expect} back)")


class FailedWindows:
    """The failed windows of one task still waiting for replays (see the module docstring).
    False while there is none, so the caller's common case is one truth test."""

    __slots__ = ("due", "gather_ms", "wait_ms", "windows")

    def __init__(self, wait_ms: int, gather_ms: int) -> None:
        self.wait_ms = wait_ms
        self.gather_ms = gather_ms
        self.windows: list[FailedWindow] = []
        #: no window is ready or forgotten before this (ms), so a timer finds out in one
        #: comparison
        self.due = 0

    def __len__(self) -> int:
        return len(self.windows)

    def record(self, start: int, end: int, first: int, count: int, now_ms: int,
               until: int | None = None) -> None:
        """The window from ``start`` to ``end`` failed at ``now_ms`` holding ``count``
        tuples with timestamps from ``first`` to before ``until`` (None: ``end``)."""
        at = now_ms + self.wait_ms
        self.due = min(self.due, at) if self.windows else at
        self.windows.append(FailedWindow(start, end, first, count, now_ms,
                                         end if until is None else until))

    def take(self, tup: Any, stamp: int, now_ms: int) -> bool:
        """Hold ``tup`` (behind the watermark) for the failed window its timestamp falls
        in; False when there is none (it is late)."""
        for w in self.windows:
            if w.first <= stamp < w.until:
                if w.back_at is None:
                    w.back_at = now_ms
                    self.due = min(self.due, now_ms + self.gather_ms)
                stamps = w.stamps
                if not stamps or stamp >= stamps[-1]:
                    stamps.append(stamp)
                    w.tuples.append(tup)
                else:
                    i = bisect_right(stamps, stamp)
                    stamps.insert(i, stamp)
                    w.tuples.insert(i, tup)
                if len(w.tuples) >= w.expect:
                    self.due = now_ms
                return True
        return False

    def ready(self, now_ms: int) -> list[FailedWindow]:
        """The windows to evaluate again now, oldest failure first, each handed out once;
        windows that waited ``wait_ms`` for a tuple in vain are forgotten."""
        if now_ms < self.due:
            return []
        out: list[FailedWindow] = []
        keep: list[FailedWindow] = []
        due = None
        for w in self.windows:
            if w.back_at is None:
                at = w.failed_at + self.wait_ms
                if now_ms >= at:
                    continue                # forgotten
            elif len(w.tuples) >= w.expect or now_ms >= w.back_at + self.gather_ms:
                out.append(w)
                continue
            else:
                at = w.back_at + self.gather_ms
            keep.append(w)
            if due is None or at < due:
                due = at
        self.windows = keep
        self.due = due if due is not None else 0
        return out
