"""The XOR acker passes the acker contract, plus its own details."""
from __future__ import annotations

import pytest

from squall import Acker, drivers
from squall.ackers.xor import XorAcker
from squall.testing.contracts.acker import AckerContract


class TestXorAckerContract(AckerContract):
    @pytest.fixture
    def acker_factory(self):  # type: ignore[no-untyped-def]
        return XorAcker


def test_is_the_default_acker_driver() -> None:
    acker = drivers.driver("acker", {"squall.acker": "xor"})
    assert isinstance(acker, XorAcker) and isinstance(acker, Acker)
    assert XorAcker().conf == {} and XorAcker({"a": 1}).conf == {"a": 1}


def test_acks_in_old_generation_still_complete() -> None:
    acker = XorAcker()
    acker.init(1, 0b1010, 7)
    acker.rotate()
    assert acker.ack(1, 0b1000) is None
    assert acker.ack(1, 0b0010) == (7, True)
    assert acker.pending() == 0


def test_rotate_reports_only_trees_two_rotations_old() -> None:
    acker = XorAcker()
    acker.init(1, 5, 2)
    acker.rotate()
    acker.init(2, 6, 3)
    assert acker.rotate() == [(1, 2)]
    assert acker.rotate() == [(2, 3)]
    assert acker.pending() == 0


def test_ack_with_zero_value_before_init_does_not_complete() -> None:
    acker = XorAcker()
    assert acker.ack(9, 0) is None          # xor 0 but no spout task known yet
    assert acker.init(9, 4, 1) is None
    assert acker.ack(9, 4) == (1, True)


def test_a_reset_keeps_a_tree_for_two_more_rotations_and_names_its_spout_task() -> None:
    acker = XorAcker()
    acker.init(1, 5, 2)
    acker.rotate()                          # one rotation old: the next one expires it
    assert acker.reset_timeout(1) == 2      # back among the new: the spout task to tell
    assert acker.rotate() == []
    assert acker.reset_timeout(1) == 2      # new again
    assert acker.rotate() == []
    assert acker.rotate() == [(1, 2)]       # no reset since: it expires as any tree


def test_a_reset_of_a_tree_not_tracked_does_nothing() -> None:
    acker = XorAcker()
    assert acker.reset_timeout(9) is None and acker.pending() == 0
    acker.ack(3, 4)                         # acks before the spout's init: no spout task
    assert acker.reset_timeout(3) is None and acker.pending() == 1


def test_an_acker_without_reset_timeout_restarts_nothing() -> None:
    class Minimal(Acker):
        def init(self, root, value, spout_task):  # type: ignore[no-untyped-def]
            return None

        def ack(self, root, value):  # type: ignore[no-untyped-def]
            return None

        def fail(self, root):  # type: ignore[no-untyped-def]
            return None

        def rotate(self):  # type: ignore[no-untyped-def]
            return []

        def pending(self) -> int:
            return 0

    assert Minimal().reset_timeout(1) is None
    assert Minimal().sweep() is None        # and sweeps nothing


def _failed_tree_with_late_acks(acker: XorAcker, root: int) -> None:
    """A spout tuple sent to three bolts: one fails it, the other two ack after the fail."""
    assert acker.init(root, 0b111, 4) is None
    assert acker.fail(root) == (4, False)
    assert acker.ack(root, 0b010) is None
    assert acker.ack(root, 0b100) is None


def test_late_acks_of_failed_trees_are_swept_without_rotations() -> None:
    # topology.enable.message.timeouts: false: nothing rotates, and the acks that arrive
    # after their tree failed each left an entry behind for good
    acker = XorAcker()
    for root in range(1, 10_001):
        _failed_tree_with_late_acks(acker, root)
    assert acker.pending() == 10_000
    acker.sweep()                           # one sweep old: kept (acks may precede inits)
    assert acker.pending() == 10_000
    acker.sweep()
    assert acker.pending() == 0
    for root in range(10_001, 10_101):      # and so on, sweep after sweep: bounded
        _failed_tree_with_late_acks(acker, root)
    acker.sweep()
    acker.sweep()
    assert acker.pending() == 0


def test_a_sweep_keeps_every_tree_with_an_init_and_acks_waiting_one_sweep_for_theirs() -> None:
    acker = XorAcker()
    acker.init(1, 0b11, 2)                  # a tree that takes many sweeps: never expires
    acker.ack(2, 0b01)                      # an ack before its init
    acker.sweep()
    assert acker.pending() == 2
    assert acker.init(2, 0b01, 3) == (3, True)  # the init, one sweep later, completes it
    acker.ack(3, 0b1)                       # an ack before its init, and a fail
    acker.fail(3)
    acker.sweep()
    assert acker.init(3, 0b11, 5) == (5, False)  # fails it when it comes
    for _ in range(5):
        acker.sweep()
    assert acker.pending() == 1
    assert acker.ack(1, 0b01) is None
    assert acker.ack(1, 0b10) == (2, True)
    assert acker.pending() == 0


def test_a_rotation_expires_strays_as_any_tree_and_sweeps_then_find_nothing() -> None:
    acker = XorAcker()
    _failed_tree_with_late_acks(acker, 7)
    assert acker.rotate() == []
    assert acker.rotate() == [(7, -1)]
    acker.sweep()
    acker.sweep()
    assert acker.pending() == 0
