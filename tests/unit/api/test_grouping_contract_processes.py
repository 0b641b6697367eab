"""DeterministicGrouping checks a grouping in a second Python process with another hash seed:
one keyed on Python's salted ``hash()`` of a str (a different task per worker process) fails
it; a stable one passes, however its factory is given."""
from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from squall import Grouping
from squall.testing.contracts.grouping import DeterministicGrouping, GroupingContract


class _Contract(DeterministicGrouping, GroupingContract):
    pass


class _SaltedHash(Grouping):
    """Fields-like, on Python's hash(): the same in one process, not across two."""

    def __init__(self, index: int = 0) -> None:
        self.index = index

    def prepare(self, context: Any, stream: tuple[str, str], target_tasks: Sequence[int]) -> None:
        self.targets = sorted(target_tasks)

    def choose_tasks(self, task_id: int, values: Sequence[Any]) -> list[int]:
        return [self.targets[hash(str(values[self.index])) % len(self.targets)]]


class _Crc(_SaltedHash):
    def choose_tasks(self, task_id: int, values: Sequence[Any]) -> list[int]:
        return [self.targets[zlib.crc32(str(values[self.index]).encode()) % len(self.targets)]]


def _crc_factory() -> Grouping:
    return _Crc(0)


def _check(factory: Callable[[], Grouping]) -> None:
    contract = _Contract()
    prepared = _Contract.prepared.__wrapped__(contract, factory)  # type: ignore[attr-defined]
    contract.test_deterministic(prepared)          # one process: both pass this
    contract.test_deterministic_across_processes(factory, prepared)


@pytest.mark.parametrize("factory", [_SaltedHash, lambda: _SaltedHash(0)],
                         ids=["class", "pickled-instance"])
def test_a_grouping_on_salted_hash_fails(factory: Callable[[], Grouping]) -> None:
    with pytest.raises(AssertionError, match=r"^\d+ of 300 tuples went to other tasks in a "
                       r"process with PYTHONHASHSEED=\d+ \(values \['word-\d+', .*\]: \[\d+\] "
                       r"here, \[\d+\] there\): each worker would route them its own way"):
        _check(factory)


@pytest.mark.parametrize("factory", [_Crc, _crc_factory, lambda: _Crc(0)],
                         ids=["class", "function", "pickled-instance"])
def test_a_stable_grouping_passes(factory: Callable[[], Grouping]) -> None:
    _check(factory)


def test_a_grouping_that_cannot_be_rebuilt_elsewhere_skips_that_check() -> None:
    class Local(_Crc):
        pass

    with pytest.raises(pytest.skip.Exception, match="cannot check the grouping in another "
                                                    "process"):
        _check(lambda: Local(0))
