"""What the event-time window tests hand a window manager: a Recorder of the windows it
evaluates (failing those whose number is in ``fail_at``), the tuples it lets go and the late
ones."""
from __future__ import annotations

from typing import Any

from squall.windowing import Window


class Recorder:
    def __init__(self, fail_at: set[int] | None = None) -> None:
        self.windows: list[Window] = []
        self.gone: list[Any] = []
        self.late: list[Any] = []
        self.fail_at = fail_at or set()

    def evaluate(self, window: Window) -> bool:
        self.windows.append(window)
        return len(self.windows) not in self.fail_at

    def spans(self) -> list[tuple[int, int, list[Any]]]:
        """``(start, end, the tuples' timestamps)`` of each window evaluated."""
        return [(w.start, w.end, [t for t, _ in w.tuples]) for w in self.windows]
