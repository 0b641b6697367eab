"""Root ids of a spout's trees: drawn so that an acker task of the spout's own worker owns
them (``root % len(acker_tasks)`` picks the acker), within 64 bits."""
from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import pytest

from squall.runtime.acks import AckLedger


def _worker(acker_tasks: list[int], local: list[int]) -> Any:
    tasks = SimpleNamespace(ackers={t: object() for t in local})
    return AckLedger(acker_tasks, tasks, None, None)  # type: ignore[arg-type]


@pytest.mark.parametrize("acker_tasks,local", [
    ([5, 6], [5]), ([5, 6], [6]), ([3, 4, 5], [4]), (list(range(10, 110)), [57, 90]),
    (list(range(1, 1026)), [1025])])
def test_every_root_is_owned_by_an_acker_task_of_this_worker(acker_tasks: list[int],
                                                              local: list[int]) -> None:
    w = _worker(acker_tasks, local)
    n = len(acker_tasks)
    rng = random.Random(1)
    for spout_task in (1, 2, 3):
        bits, mul, home = w.root_plan(spout_task)
        for r in (0, (1 << bits) - 1, *(rng.getrandbits(bits) for _ in range(200))):
            root = r * mul + home
            assert 0 <= root < 1 << 64                  # the wire's unsigned 64 bits
            assert acker_tasks[root % n] in local
        assert bits >= 64 - n.bit_length()              # the rest of the id stays random


def test_several_acker_tasks_here_share_this_workers_spouts() -> None:
    w = _worker([1, 2, 3, 4, 5], [2, 4])
    homes = {w.root_plan(t)[2] for t in range(8)}
    assert {[1, 2, 3, 4, 5][h] for h in homes} == {2, 4}


@pytest.mark.parametrize("acker_tasks,local", [([], []), ([5], [5]), ([5], []),
                                               ([5, 6], []), ([5, 6], [5, 6])])
def test_uniform_roots_when_the_choice_does_not_matter(acker_tasks: list[int],
                                                       local: list[int]) -> None:
    assert _worker(acker_tasks, local).root_plan(1) == (64, 1, 0)
