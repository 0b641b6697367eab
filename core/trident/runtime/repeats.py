"""A warning that repeats while a batch fails every try (``RepeatedWarning``).

A batch that fails each time it runs is replayed for ever (under the same txid), and each try
would log the same warning again, at the batch emit interval. A run of such warnings logs its
first few in full, then one line per interval that counts the others and quotes the latest;
an interval without any ends the run (the next one is logged in full again). Loop thread
only (one instance per component task).
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

__all__ = ["RepeatedWarning"]

#: how many warnings of a run are logged in full
FIRST = 3


class RepeatedWarning:
    """The warnings of one component task about failed batches, logged to ``logger``:
    the first :data:`FIRST` of a run, then one summary line per ``interval`` seconds."""

    __slots__ = ("clock", "interval", "last", "latest", "logged", "logger", "suppressed",
                 "window")

    def __init__(self, logger: logging.Logger, interval: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.logger = logger
        self.interval = interval
        self.clock = clock
        #: when the last warning came (None: no run yet) and when the summary window began
        self.last: float | None = None
        self.window = 0.0
        #: warnings of this run logged in full; those counted since the last summary, and
        #: the latest of them (its text)
        self.logged = 0
        self.suppressed = 0
        self.latest = ""

    def warning(self, msg: str, *args: Any) -> None:
        """Log ``msg % args`` as a warning, or count it (see the module docstring)."""
        now = self.clock()
        if self.last is None or now - self.last >= self.interval:
            self._summary(now)             # the run before it ended: its count
            self.logged = 0
        self.last = now
        if self.logged < FIRST:
            self.logged += 1
            if self.logged == FIRST:
                self.logger.warning(msg + " (more like it: counted, one line every %g s)",
                                    *args, self.interval)
            else:
                self.logger.warning(msg, *args)
            self.window = now
            return
        self.suppressed += 1
        self.latest = msg % args if args else msg
        if now - self.window >= self.interval:
            self._summary(now)

    def _summary(self, now: float) -> None:
        if self.suppressed:
            self.logger.warning("%d more like it in the last %.0f s; the latest: %s",
                                self.suppressed, now - self.window, self.latest)
        self.suppressed = 0
        self.window = now
