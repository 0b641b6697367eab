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
    """

    __slots__ = ("end", "expired", "new", "start", "tuples")

    def __init__(self, tuples: list[Any], new: list[Any], expired: list[Any], start: int,
                 end: int) -> None:
        self.tuples = tuples
        self.new = new
        self.expired = expired
        self.start = start
        self.end = end

    def __len__(self) -> int:
        return len(self.tuples)

    def __repr__(self) -> str:
        return (f"Window({len(self.tuples)} tuples, {len(self.new)} new, "
                f"{len(self.expired)} expired, start={self.start}, end={self.end})")
