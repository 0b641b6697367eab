"""Barrier alignment (squall.stateful.barrier): a task acts on a checkpoint only once every
input task delivered it, holding what the early inputs sent after theirs."""
from __future__ import annotations

import pytest

from squall.stateful.barrier import BarrierAligner


def test_a_checkpoint_completes_only_when_every_input_delivered_it():
    a = BarrierAligner([1, 2, 3])
    assert a.barrier(1, "k", "b1").complete is None
    assert a.barrier(3, "k", "b3").complete is None
    step = a.barrier(2, "k", "b2")
    assert sorted(step.complete) == ["b1", "b2", "b3"]
    assert step.abandoned == [] and step.before == [] and step.after == []
    assert not a.aligning


def test_tuples_from_inputs_that_delivered_wait_and_come_back_after_the_checkpoint():
    a = BarrierAligner([1, 2])
    assert not a.holds(1)
    a.barrier(1, "k", "b1")
    assert a.holds(1) and not a.holds(2)
    a.hold("x1")
    a.hold("y1")
    step = a.barrier(2, "k", "b2")
    assert step.after == ["x1", "y1"]         # in arrival order, after acting on the checkpoint
    assert not a.holds(1)


def test_a_single_input_completes_at_once():
    a = BarrierAligner([7])
    step = a.barrier(7, 1, "b")
    assert step.complete == ["b"]


def test_another_checkpoint_abandons_the_one_being_aligned():
    a = BarrierAligner([1, 2])
    a.barrier(1, "old", "b1-old")
    a.hold("x1")
    step = a.barrier(2, "new", "b2-new")
    assert step.abandoned == ["b1-old"]
    assert step.before == ["x1"]             # sent before input 1's next checkpoint
    assert step.complete is None
    assert a.holds(2) and not a.holds(1)
    step = a.barrier(1, "new", "b1-new")
    assert sorted(step.complete) == ["b1-new", "b2-new"]


def test_the_same_checkpoint_again_from_an_input_restarts_the_alignment():
    a = BarrierAligner([1, 2])
    a.barrier(1, "k", "first")
    a.hold("x1")
    step = a.barrier(1, "k", "again")        # the spout emitted the same action again
    assert step.abandoned == ["first"] and step.before == ["x1"] and step.complete is None
    assert a.barrier(2, "k", "b2").complete == ["again", "b2"]


def test_a_single_input_abandoning_processes_the_held_tuples_before_the_new_checkpoint():
    a = BarrierAligner([1])
    a.barrier(1, "a", "ba")                  # complete at once
    step = a.barrier(1, "b", "bb")
    assert step.abandoned == [] and step.complete == ["bb"]


def test_no_inputs_is_an_error():
    with pytest.raises(ValueError):
        BarrierAligner([])
