"""Connections close side by side: a worker with several departed peers, each lingering to
flush, stops in one linger, not one per peer."""
from __future__ import annotations

import threading
import time

from squall.transports.closing import close_all


class Lingering:
    """A connection whose close waits for ``linger`` seconds (a peer that does not ack)."""

    def __init__(self, linger: float, fail: bool = False) -> None:
        self.linger, self.fail, self.closed = linger, fail, threading.Event()

    def close(self) -> None:
        time.sleep(self.linger)             # stands for the linger itself
        self.closed.set()
        if self.fail:
            raise OSError("already gone")


def test_connections_close_side_by_side_and_a_failure_stops_nothing() -> None:
    conns = [Lingering(0.5) for _ in range(7)] + [Lingering(0.5, fail=True)]
    start = time.monotonic()
    close_all(conns)                                           # type: ignore[arg-type]
    took = time.monotonic() - start
    assert all(c.closed.is_set() for c in conns)
    assert took < 2.5, took                 # one after another would take 4 s


def test_one_or_no_connection_closes_on_the_callers_thread() -> None:
    close_all([])
    one = Lingering(0)
    close_all([one])                                           # type: ignore[arg-type]
    assert one.closed.is_set()
