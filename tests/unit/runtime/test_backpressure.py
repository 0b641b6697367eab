"""Backpressure by task: congested above the high watermark until down to the low one, told
to the other workers on change; what blocks an executor."""
from __future__ import annotations

from typing import Any

import pytest

from squall.runtime.flow import Backpressure
from squall.runtime.task import LocalTasks, TaskState


def flow(held: dict[int, int] | None = None) -> tuple[Backpressure, LocalTasks, list[Any]]:
    tasks = LocalTasks({1: TaskState("a", 1, None, {}), 2: TaskState("b", 2, None, {})},
                       lazy=set(), ackers=set(), spouts=set())
    told: list[Any] = []
    conf = {"topology.executor.receive.buffer.size": 100,
            "topology.backpressure.high.watermark": 0.9,
            "topology.backpressure.low.watermark": 0.5}
    bp = Backpressure(conf, tasks, lambda: 0, held if held is not None else {}, set(),
                      lambda kind, value: told.append((kind, value)))
    return bp, tasks, told


def test_a_task_is_congested_above_high_until_down_to_low() -> None:
    bp, tasks, told = flow()
    q = tasks.queues[1]
    q.extend(range(90))
    bp.check(0.0)
    assert not bp.congested and not told           # at the high watermark, not above it
    q.append(90)
    bp.check(1.0)
    assert bp.congested == {1} and told == [("congested", [[1, True]])]
    for _ in range(30):
        q.popleft()
    bp.check(2.0)
    assert bp.congested == {1} and len(told) == 1   # 61: still above the low watermark
    for _ in range(11):
        q.popleft()
    bp.check(3.0)
    assert not bp.congested and told[-1] == ("congested", [[1, False]])
    assert bp.overloaded_total(3.0) == pytest.approx(2.0)
    assert tasks.states[1].queue_peak == 91


def test_tuples_waiting_in_the_inbox_count_as_the_tasks() -> None:
    held = {2: 95}
    bp, _, _ = flow(held)
    bp.check(0.0)
    assert bp.congested == {2}


def test_other_workers_reports_block_the_executors_that_feed_their_tasks() -> None:
    bp, _, _ = flow()
    bp.remote_report("h:2", [[7, True], [8, True]])
    assert bp.blocks(frozenset({3, 7})) and not bp.blocks(frozenset({3, 4}))
    bp.remote_report("h:2", [[7, False]])
    assert not bp.blocks(frozenset({3, 7})) and bp.blocks(frozenset({8}))
    bp.forget("h:2")
    assert not bp.congested
    for bad in ("x", [[7, 1]], [["7", True]], [[7]]):
        with pytest.raises(ValueError):
            bp.remote_report("h:3", bad)


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
