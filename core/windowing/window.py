"""What ``process_window`` receives: one evaluation of a window."""
from __future__ import annotations

from typing import Any


class Window:
    """One window as ``WindowedBolt.process_window`` sees it.

    ``tuples``: every tuple in the window (arrival order; event-time order with event time);
    ``new``: those of them that arrived since the last evaluation; ``expired``: the tuples
    that left the bolt's windows since the last evaluation; ``start`` and ``end``: the
    window's bounds in ms since the epoch, processing time or event time (see
    :class:`squall.WindowedBolt`). Lists the bolt may keep but should not change.

    The runtime makes windows with :meth:`view`: ``tuples`` and ``new`` are then cut from the
    windows' own list when first read (a bolt that reads only ``new`` and ``expired`` costs
    nothing per tuple of the window); that part of the list never changes afterwards, so a
    window read late, even after ``process_window`` returned, holds the same tuples.
    """

    __slots__ = ("_held", "_hi", "_lo", "_new", "_new_lo", "_tuples", "end", "expired",
                 "start")

    def __init__(self, tuples: list[Any], new: list[Any], expired: list[Any], start: int,
                 end: int) -> None:
        self._tuples: list[Any] | None = tuples
        self._new: list[Any] | None = new
        self._held: list[Any] = tuples
        self._lo = self._new_lo = 0
        self._hi = len(tuples)
        self.expired = expired
        self.start = start
        self.end = end

    @classmethod
    def view(cls, held: list[Any], lo: int, hi: int, new_lo: int, expired: list[Any],
             start: int, end: int) -> Window:
        """The window of ``held[lo:hi]`` whose new tuples are ``held[new_lo:hi]``; the
        caller never changes ``held[lo:hi]`` afterwards (it only appends past ``hi``, moves
        its own head, or replaces the list)."""
        w = cls.__new__(cls)
        w._held, w._lo, w._hi, w._new_lo = held, lo, hi, new_lo
        w._tuples = w._new = None
        w.expired = expired
        w.start = start
        w.end = end
        return w

    @property
    def tuples(self) -> list[Any]:
        tuples = self._tuples
        if tuples is None:
            tuples = self._tuples = self._held[self._lo:self._hi]
        return tuples

    @property
    def new(self) -> list[Any]:
        new = self._new
        if new is None:
            new = self._new = self._held[self._new_lo:self._hi]
        return new

    def __len__(self) -> int:
        return self._hi - self._lo

    def __repr__(self) -> str:
        return (f"Window({len(self)} tuples, {len(self.new)} new, "
                f"{len(self.expired)} expired, start={self.start}, end={self.end})")
