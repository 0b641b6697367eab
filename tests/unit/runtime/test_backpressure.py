"""Backpressure by task: full above the high watermark until down to the low one; every task
congested while the inbox is full, told to the other workers on change; what blocks an
executor."""
from __future__ import annotations

from typing import Any

import pytest

from squall.runtime.flow import (CONGESTION_TTL_SECS, INBOX_HIGH, INBOX_LOW, RENEW_SECS,
                                 Backpressure)
from squall.runtime.task import LocalTasks, TaskState


def flow(held: dict[int, int] | None = None, inbox: list[int] | None = None, low: float = 0.5
         ) -> tuple[Backpressure, LocalTasks, list[Any]]:
    """``inbox`` holds the bytes received and not yet taken by the loop (0 if None)."""
    tasks = LocalTasks({1: TaskState("a", 1, None, {}), 2: TaskState("b", 2, None, {})},
                       lazy=set(), ackers=set(), spouts=set())
    told: list[Any] = []
    conf = {"topology.executor.receive.buffer.size": 100,
            "topology.backpressure.high.watermark": 0.9,
            "topology.backpressure.low.watermark": low}
    backlog = inbox if inbox is not None else [0]
    bp = Backpressure(conf, tasks, lambda: backlog[0], held if held is not None else {}, set(),
                      lambda kind, value: told.append((kind, value)), incarnation="me",
                      runs=lambda who, task: who == "h:2" and task in (7, 8))
    return bp, tasks, told


def test_a_task_is_full_above_high_and_free_again_at_high_without_telling_anyone() -> None:
    bp, tasks, told = flow(low=0.9)
    q = tasks.queues[1]
    q.extend(range(90))
    bp.check(0.0)
    assert not bp.congested                         # at the high watermark, not above it
    q.append(90)
    bp.check(1.0)
    assert bp.congested == {1} and bp.full == {1}
    assert bp.blocks(frozenset({1})) and not bp.blocks(frozenset({2}))
    q.popleft()
    bp.check(2.0)
    assert not bp.congested                         # back at the mark: no band to drain
    assert not told                                 # feeders in other workers keep to credits
    assert bp.overloaded_total(2.0) == pytest.approx(1.0)
    assert tasks.states[1].queue_peak == 91


def test_a_lower_low_watermark_holds_a_full_tasks_feeders_until_it_has_drained_the_band(
        ) -> None:
    bp, tasks, told = flow(low=0.5)
    q = tasks.queues[1]
    q.extend(range(91))
    bp.check(0.0)
    assert bp.congested == {1}
    for _ in range(40):
        q.popleft()
    bp.check(1.0)
    assert bp.congested == {1}                      # 51: still above the low watermark
    q.popleft()
    bp.check(2.0)
    assert not bp.congested and not told


def test_tuples_waiting_in_the_inbox_count_as_the_tasks() -> None:
    held = {2: 95}
    bp, _, _ = flow(held)
    bp.check(0.0)
    assert bp.congested == {2}


def test_received_bytes_piling_up_before_the_loop_congest_every_task_until_an_eighth() -> None:
    inbox = [INBOX_HIGH]
    bp, _, told = flow(inbox=inbox)
    bp.check(0.0)
    assert not bp.congested                         # at the mark, not above it
    inbox[0] = INBOX_HIGH + 1
    bp.check(1.0)
    assert bp.congested == {1, 2}                   # every task here, though none is full
    assert told == [("congested", ["me", [[1, True], [2, True]], False])]
    inbox[0] = INBOX_LOW + 1
    bp.check(2.0)
    assert bp.congested == {1, 2}
    inbox[0] = INBOX_LOW
    bp.check(3.0)
    assert not bp.congested and told[-1] == ("congested", ["me", [[1, False], [2, False]], False])


def test_other_workers_reports_block_the_executors_that_feed_their_tasks() -> None:
    bp, _, _ = flow()
    bp.remote_report("h:2", ["i1", [[7, True], [8, True]], False], 0.0)
    assert bp.blocks(frozenset({3, 7})) and not bp.blocks(frozenset({3, 4}))
    bp.remote_report("h:2", ["i1", [[7, False]], False], 0.0)
    assert not bp.blocks(frozenset({3, 7})) and bp.blocks(frozenset({8}))
    bp.forget("h:2")
    assert not bp.congested
    for bad in ("x", [[7, True]], ["i1", [[7, 1]], False], ["i1", [["7", True]], False],
                ["i1", [[7]], False], ["i1", [[7, True]], 0]):
        with pytest.raises(ValueError):
            bp.remote_report("h:2", bad, 0.0)
    assert not bp.congested


def test_a_report_about_tasks_its_sender_does_not_run_is_refused_whole() -> None:
    bp, _, _ = flow()
    with pytest.raises(ValueError, match="does not run"):
        bp.remote_report("h:2", ["i1", [[7, True], [99, True]], False], 0.0)
    with pytest.raises(ValueError, match="does not run"):
        bp.remote_report("h:3", ["i1", [[7, True]], False], 0.0)
    assert not bp.congested


def test_a_remote_congestion_expires_unless_renewed() -> None:
    bp, _, _ = flow()
    bp.remote_report("h:2", ["i1", [[7, True]], False], 0.0)
    bp.tick(CONGESTION_TTL_SECS - 1)
    assert bp.blocks(frozenset({7}))
    bp.remote_report("h:2", ["i1", [[7, True]], True], CONGESTION_TTL_SECS - 1)   # renewed
    bp.tick(CONGESTION_TTL_SECS + 1)
    assert bp.blocks(frozenset({7}))
    bp.tick(2 * CONGESTION_TTL_SECS)
    assert not bp.congested


def test_a_renewal_replaces_what_was_said_and_a_restart_wipes_it() -> None:
    bp, _, _ = flow()
    bp.remote_report("h:2", ["i1", [[7, True], [8, True]], False], 0.0)
    bp.remote_report("h:2", ["i1", [[8, True]], True], 1.0)          # the full list now
    assert bp.congested == {8}
    bp.remote_report("h:2", ["i2", [], True], 2.0)                    # restarted, announces
    assert not bp.congested
    bp.remote_report("h:2", ["i1", [[7, True]], False], 3.0)
    bp.remote_report("h:2", ["i2", [[8, True]], False], 3.0)          # a delta of a new life
    assert bp.congested == {8}


def test_a_congested_worker_renews_its_state_and_announces_a_clean_start() -> None:
    inbox = [INBOX_HIGH + 1]
    bp, tasks, told = flow(inbox=inbox)
    bp.check(0.0)
    told.clear()
    bp.tick(0.5)
    assert not told                                   # renewed every RENEW_SECS
    bp.tick(RENEW_SECS + 0.1)
    assert told == [("congested", ["me", [[1, True], [2, True]], True])]
    bp.announce()
    assert told[-1] == ("congested", ["me", [], True])


def test_a_full_credit_window_blocks_like_a_congested_task() -> None:
    saturated: set[int] = set()
    tasks = LocalTasks({}, lazy=set(), ackers=set(), spouts=set())
    bp = Backpressure({}, tasks, lambda: 0, {}, saturated, lambda kind, value: None)
    saturated.add(9)
    bp.recount()
    assert bp.blocks(frozenset({9}))
    saturated.clear()
    bp.recount()
    assert not bp.blocks(frozenset({9}))
