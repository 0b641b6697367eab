"""How soon a supervisor relaunches the worker of a slot whose workers keep failing.

A worker *failed* when it died, hung before its first heartbeat (its topology's code does not
import in the worker, a component raises in ``initialize`` or takes too long there, its port
is taken...) or stopped heart-beating. Relaunching it at once, every monitor round, would
make dozens of processes a minute that all fail the same way, a crash loop after the first
beat (a C extension that segfaults on some tuple, the OOM killer) too. The first failure is
relaunched at once (a worker killed by accident comes back without delay); each further
failure in a row within :data:`SETTLE_SECS` of its launch doubles the wait, from
:data:`FIRST_SECS` up to :data:`CAP_SECS`. A worker that ran for :data:`SETTLE_SECS` before
it failed starts the count again; one stopped in order after its first beat (unassigned, or
exited by itself) clears it; one unassigned before its first beat says nothing either way
(nimbus moving executors off a slot whose workers never start must not reset its count).

Used by the supervisor's monitor thread only.
"""
from __future__ import annotations

import time
from collections.abc import Callable

#: a worker that stops this soon after its launch failed to start
SETTLE_SECS = 60.0
FIRST_SECS = 1.0
CAP_SECS = 60.0


def delay(failures: int) -> float:
    """Seconds before the next launch after ``failures`` failed starts in a row."""
    if failures <= 1:
        return 0.0
    return min(CAP_SECS, FIRST_SECS * 2 ** (failures - 2))


class LaunchBackoff:
    """Failed starts in a row per port, and when each port may launch again."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.failures: dict[int, int] = {}
        self.not_before: dict[int, float] = {}

    def stopped(self, port: int, ran_secs: float, failed: bool | None) -> float:
        """A worker on ``port`` stopped after ``ran_secs``; ``failed``: True when it died,
        hung or never beat, False when it stopped in order after it started (unassigned,
        exited by itself), None when that says nothing (unassigned before its first beat:
        the count is kept). Returns the wait before the next launch on ``port``."""
        if failed is None:
            return max(0.0, self.not_before.get(port, 0.0) - self.clock())
        if not failed or ran_secs >= SETTLE_SECS:
            self.failures.pop(port, None)
            self.not_before.pop(port, None)
            if not failed:
                return 0.0
        n = self.failures[port] = self.failures.get(port, 0) + 1
        wait = delay(n)
        self.not_before[port] = self.clock() + wait
        return wait

    def ready(self, port: int) -> bool:
        """Whether a worker may be launched on ``port`` now."""
        return self.clock() >= self.not_before.get(port, 0.0)

    def count(self, port: int) -> int:
        return self.failures.get(port, 0)
