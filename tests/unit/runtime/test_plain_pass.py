"""A bolt's pass without ackers and without ticks: tuples go to ``process`` from a C loop, and
a tuple that raises is failed by itself while the pass goes on."""
from __future__ import annotations

from collections import deque
from types import SimpleNamespace
from typing import Any

import pytest

from squall.runtime.executors import BoltExecutor


class Stub:
    """The executor's own state that ``_run_plain`` reads (a unit test's stand-in)."""

    def __init__(self, auto_ack: bool = True) -> None:
        self.auto_ack = auto_ack
        self.failed: list[tuple[Any, str]] = []

    def _failed(self, ts: Any, tup: Any, exc: BaseException) -> None:
        self.failed.append((tup, str(exc)))


def task(process: Any) -> Any:
    return SimpleNamespace(instance=SimpleNamespace(process=process), acked=0)


@pytest.mark.parametrize("take", [10, 6])
def test_each_raising_tuple_is_failed_alone_and_the_pass_goes_on(take: int) -> None:
    seen: list[int] = []

    def process(tup: int) -> None:
        if tup % 3 == 0:
            raise ValueError(f"no {tup}")
        seen.append(tup)

    stub, ts, q = Stub(), task(process), deque(range(10))
    BoltExecutor._run_plain(stub, ts, q, take)  # type: ignore[arg-type]
    assert seen == [t for t in range(take) if t % 3]
    assert stub.failed == [(t, f"no {t}") for t in range(take) if t % 3 == 0]
    assert ts.acked == len(seen)
    assert list(q) == list(range(take, 10))        # the rest stay queued, in order


def test_without_auto_ack_nothing_is_counted_as_acked() -> None:
    stub, ts, q = Stub(auto_ack=False), task(lambda tup: None), deque(range(5))
    BoltExecutor._run_plain(stub, ts, q, 5)  # type: ignore[arg-type]
    assert ts.acked == 0 and not q and not stub.failed


def test_a_raise_on_the_last_tuple() -> None:
    def process(tup: int) -> None:
        if tup == 4:
            raise KeyError(tup)

    stub, ts, q = Stub(), task(process), deque(range(5))
    BoltExecutor._run_plain(stub, ts, q, 5)  # type: ignore[arg-type]
    assert [t for t, _ in stub.failed] == [4] and ts.acked == 4
