"""A slot whose workers keep failing to start waits longer and longer between launches."""
from __future__ import annotations

from squall.daemon.supervisor_backoff import CAP_SECS, SETTLE_SECS, LaunchBackoff, delay


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_wait_doubles_from_the_second_failure_up_to_the_cap() -> None:
    assert [delay(n) for n in range(1, 6)] == [0.0, 1.0, 2.0, 4.0, 8.0]
    assert delay(50) == CAP_SECS


def test_failed_starts_in_a_row_back_off_and_a_settled_worker_clears_them() -> None:
    clock = Clock()
    b = LaunchBackoff(clock)
    assert b.stopped(6700, 0.5, failed=True) == 0.0 and b.ready(6700)   # at once
    assert b.stopped(6700, 0.5, failed=True) == 1.0 and not b.ready(6700)
    clock.now += 1.0
    assert b.ready(6700) and b.ready(6701)             # other ports are not held
    assert b.stopped(6700, 0.5, failed=True) == 2.0
    assert b.stopped(6700, SETTLE_SECS, failed=True) == 0.0 and b.count(6700) == 1
    assert b.stopped(6700, 1.0, failed=False) == 0.0 and b.count(6700) == 0


def test_a_worker_unassigned_before_its_first_beat_keeps_the_count() -> None:
    # nimbus moving the executors of a slot whose workers never start reset its count, so
    # the slot never backed off
    clock = Clock()
    b = LaunchBackoff(clock)
    b.stopped(6700, 20.0, failed=True)
    assert b.stopped(6700, 5.0, failed=None) == 0.0 and b.count(6700) == 1
    assert b.stopped(6700, 20.0, failed=True) == 1.0 and b.count(6700) == 2
    assert b.stopped(6700, 0.5, failed=None) == 1.0 and not b.ready(6700)   # the wait stays
