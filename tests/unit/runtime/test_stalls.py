"""A destination worker that accepts nothing while tuples wait for it (it grants no room: its
port refuses connections, it hangs, its tasks take nothing) is reported by its sender once per
spell, after ``topology.backpressure.stall.report.secs``: one WARNING naming it (host:port and
the tasks) and how long, one error of the topology, and one line when it accepts tuples again.
A fake clock: every ``now`` is given."""
from __future__ import annotations

import logging
from typing import Any

import pytest

from squall.runtime.wire.credits import STALE_SECS, Windows
from squall.runtime.wire.stalls import CHECK_SECS, Stalls

ME, B, C = ("10.0.0.1", 6700), ("10.0.0.2", 6701), ("10.0.0.3", 6702)
OWNERS = {5: B, 6: B, 7: C}
COMPONENTS = {5: "count", 6: "count", 7: "split"}
AFTER = 60.0


def owner(task: int) -> Any:
    return OWNERS.get(task)


def parts() -> tuple[Windows, Stalls, list[str]]:
    reported: list[str] = []
    return Windows(100, lambda: None), Stalls(AFTER, reported.append, COMPONENTS), reported


def watch(w: Windows, s: Stalls, start: float, end: float, step: float = 1.0) -> float:
    """What the loop does with its timers from ``start`` to ``end``: probe, and check."""
    now = start
    while now <= end:
        w.expire(now, owner)
        s.check(now, w, owner, ME)
        for task in list(w.limit):
            if task not in w.saturated:     # a probe opened it: the spout sends it at once
                w.sent_to(task, w.limit[task] - w.sent[task], now)
        now += step
    return now


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and "accepted no tuples" in r.getMessage()]


def test_a_worker_never_heard_from_is_reported_once_naming_it_its_tasks_and_how_long(
        caplog: pytest.LogCaptureFixture) -> None:
    w, s, reported = parts()
    w.sent_to(5, 100, 0.0)                  # its share, to a port that refuses connections
    w.sent_to(6, 100, 0.0)
    with caplog.at_level(logging.INFO, logger="squall.runtime.transfer"):
        watch(w, s, 0.0, AFTER - 1.0)
        assert not reported and not warnings(caplog)
        watch(w, s, AFTER, 10 * AFTER)      # ten minutes: still one report
    assert len(reported) == 1 and warnings(caplog) == reported
    text = reported[0]
    assert text.startswith("worker 10.0.0.2:6701 (tasks 5, 6 of 'count') has accepted no tuples "
                           "from worker 10.0.0.1:6700 for 60 s")
    assert "nothing has been heard from it since this worker started" in text
    assert "stall.report.secs is 60" in text
    assert s.stuck == {B: 0.0}


def test_a_worker_fallen_silent_says_for_how_long(caplog: pytest.LogCaptureFixture) -> None:
    w, s, reported = parts()
    w.credit(B, "b1", [[5, 0, 100]], owner, 0.0)       # its opening report
    w.sent_to(5, 100, 1.0)
    watch(w, s, 1.0, 1.0 + AFTER)
    assert len(reported) == 1
    assert "nothing has been heard from it for 61 s: its process hangs" in reported[0]


def test_a_worker_that_talks_but_grants_nothing_is_reported_as_running(
        caplog: pytest.LogCaptureFixture) -> None:
    w, s, reported = parts()
    w.sent_to(5, 100, 0.0)
    now = 0.0
    while now <= AFTER + 1.0:               # its load reports, and credit reports of no growth
        w.heard(B, now)
        w.credit(B, "b1", [[5, 100, 100]], owner, now)
        w.expire(now, owner)
        s.check(now, w, owner, ME)
        now += 1.0
    assert len(reported) == 1 and "it still sends control messages, so it runs" in reported[0]


def test_probes_of_a_silent_worker_do_not_restart_its_spell() -> None:
    w, s, reported = parts()
    w.sent_to(5, 100, 0.0)
    watch(w, s, 0.0, AFTER + 1.0, step=CHECK_SECS)
    assert w.probed, "a probe (every STALE_SECS of silence) was sent meanwhile"
    assert STALE_SECS < AFTER and len(reported) == 1


def test_a_worker_that_grants_as_its_task_takes_is_never_reported() -> None:
    w, s, reported = parts()
    w.sent_to(5, 100, 0.0)
    now, granted = 0.0, 100
    while now < 5 * AFTER:                  # saturated at every check: a slow task's pace
        now += 1.0
        granted += 2
        w.credit(B, "b1", [[5, granted - 100, granted]], owner, now)
        w.sent_to(5, 2, now)
        assert 5 in w.saturated
        s.check(now, w, owner, ME)
    assert not reported and not s.stuck


def test_its_accepting_again_is_one_line_and_a_later_spell_is_reported_again(
        caplog: pytest.LogCaptureFixture) -> None:
    w, s, reported = parts()
    w.credit(B, "b1", [[5, 0, 100]], owner, 0.0)       # its opening report, then it hangs
    w.sent_to(5, 100, 0.0)
    with caplog.at_level(logging.INFO, logger="squall.runtime.transfer"):
        watch(w, s, 0.0, AFTER + 30.0)
        assert len(reported) == 1
        w.credit(B, "b2", [[5, 0, 100]], owner, AFTER + 31.0)   # it came back (a new life)
        assert not w.saturated
        for now in (AFTER + 31.0, AFTER + 32.0, AFTER + 33.0):
            s.check(now, w, owner, ME)      # the loop checks while a reported spell lasts
        again = [r.getMessage() for r in caplog.records if "again" in r.getMessage()]
        assert again == ["worker 10.0.0.2:6701 accepts tuples from worker 10.0.0.1:6700 "
                         "again, after 91 s"]
        assert not s.stuck and not s.since
        w.sent_to(5, 100, 100.0)            # later it stops granting again
        watch(w, s, 100.0, 100.0 + AFTER)
    assert len(reported) == 2 and len(warnings(caplog)) == 2


def test_each_worker_is_reported_on_its_own_and_nothing_of_the_windows_changes() -> None:
    w, s, reported = parts()
    w.sent_to(5, 100, 0.0)
    w.sent_to(7, 100, 30.0)
    for now in range(0, int(2 * AFTER)):
        s.check(float(now), w, owner, ME)   # no probes here: the windows as they were
    assert [r.split(" (")[0] for r in reported] == ["worker 10.0.0.2:6701",
                                                    "worker 10.0.0.3:6702"]
    assert "(task 7 of 'split')" in reported[1]
    assert w.sent == {5: 100, 7: 100} and w.limit == {5: 100, 7: 100}
    assert w.saturated == {5, 7}


def test_a_reported_worker_leaving_the_assignment_ends_its_spell(
        caplog: pytest.LogCaptureFixture) -> None:
    w, s, reported = parts()
    w.sent_to(5, 100, 0.0)
    watch(w, s, 0.0, AFTER)
    assert len(reported) == 1
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="squall.runtime.transfer"):
        s.forget(B, AFTER + 5.0)
        s.forget(B, AFTER + 6.0)
    assert [r.getMessage() for r in caplog.records] == [
        "worker 10.0.0.2:6701, which had accepted no tuples for 65 s, is no longer in the "
        "assignment: its tasks moved"]
    assert not s.stuck and not s.since


def test_a_grant_that_does_not_grow_is_no_progress() -> None:
    w, _, _ = parts()
    w.sent_to(5, 100, 0.0)
    w.credit(B, "b1", [[5, 100, 100]], owner, 1.0)
    assert B not in w.granted_at
    w.credit(B, "b1", [[5, 100, 101]], owner, 2.0)
    assert w.granted_at[B] == 2.0
