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
