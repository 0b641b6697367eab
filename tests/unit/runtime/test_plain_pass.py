"""A bolt's pass without ackers and without ticks: tuples go to ``process`` from a C loop, and
a tuple that raises is failed by itself while the pass goes on."""
from __future__ import annotations

from collections import deque
from types import SimpleNamespace
from typing import Any

import pytest

from squall.runtime.executors import BoltExecutor
from squall.runtime.executors.uncounted import Uncounted, settles


class Item(int):
    """An untracked tuple's stand-in: an int with the ``ackval`` the pass reads."""

    ackval = 0


class Stub:
    """The executor's own state that ``_run_plain`` reads (a unit test's stand-in)."""

    def __init__(self, auto_ack: bool = True) -> None:
        self.auto_ack = auto_ack
        self.failed: list[tuple[Any, str]] = []
        self.uncounted = Uncounted()

    def _failed(self, ts: Any, tup: Any, exc: BaseException) -> None:
        self.failed.append((tup, str(exc)))


def task(process: Any) -> Any:
    return SimpleNamespace(instance=SimpleNamespace(process=process), acked=0, failed=0)


def items(n: int) -> deque[Item]:
    return deque(map(Item, range(n)))


@pytest.mark.parametrize("take", [10, 6])
def test_each_raising_tuple_is_failed_alone_and_the_pass_goes_on(take: int) -> None:
    seen: list[int] = []

    def process(tup: int) -> None:
        if tup % 3 == 0:
            raise ValueError(f"no {tup}")
        seen.append(tup)

    stub, ts, q = Stub(), task(process), items(10)
    BoltExecutor._run_plain(stub, ts, q, take)  # type: ignore[arg-type]
    assert seen == [t for t in range(take) if t % 3]
    assert stub.failed == [(t, f"no {t}") for t in range(take) if t % 3 == 0]
    assert ts.acked == len(seen)
    assert list(q) == list(range(take, 10))        # the rest stay queued, in order


def test_without_auto_ack_nothing_is_counted_as_acked() -> None:
    stub, ts, q = Stub(auto_ack=False), task(lambda tup: None), items(5)
    BoltExecutor._run_plain(stub, ts, q, 5)  # type: ignore[arg-type]
    assert ts.acked == 0 and not q and not stub.failed


def test_a_raise_on_the_last_tuple() -> None:
    def process(tup: int) -> None:
        if tup == 4:
            raise KeyError(tup)

    stub, ts, q = Stub(), task(process), items(5)
    BoltExecutor._run_plain(stub, ts, q, 5)  # type: ignore[arg-type]
    assert [t for t, _ in stub.failed] == [4] and ts.acked == 4


def test_a_tuple_the_bolt_acks_or_fails_itself_is_counted_once() -> None:
    """Without ackers, auto_ack counted a pass's tuples in bulk on top of the bolt's own ack
    or fail of some of them (a tuple failed by the bolt counted as failed and acked, one
    acked twice counted three acks); a tuple kept from an earlier pass, counted by auto_ack
    then, counts nothing when the bolt acks it later."""
    stub = Stub()

    def own(ts: Any, tup: Any, counter: str) -> None:     # what the bolt's ack/fail count
        if settles(tup, stub.auto_ack, stub.uncounted):
            setattr(ts, counter, getattr(ts, counter) + 1)

    kept: list[Any] = []

    def process(tup: Any) -> None:
        if tup % 5 == 0:
            own(ts, tup, "failed")          # the bolt fails it: not acked too
        elif tup % 5 == 1:
            own(ts, tup, "acked")
            own(ts, tup, "acked")           # a second ack counts nothing
        elif tup % 5 == 2:
            own(ts, tup, "acked")
            raise ValueError("after its ack")   # not failed, nor acked again
        elif tup % 5 == 3:
            kept.append(tup)
        for k in kept[:-1]:                 # one kept from earlier: auto_ack counted it
            own(ts, k, "acked")
        del kept[:-1]

    ts = task(process)
    q = items(10)
    BoltExecutor._run_plain(stub, ts, q, 5)  # type: ignore[arg-type]
    BoltExecutor._run_plain(stub, ts, q, 5)  # type: ignore[arg-type]
    assert (ts.acked, ts.failed) == (8, 2)
    assert [t for t, _ in stub.failed] == [2, 7]    # reported, and left to auto_fail
