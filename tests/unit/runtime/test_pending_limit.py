"""``topology.max.spout.pending`` for a spout's tracked emits from threads of its own
(core/runtime/executors/pending.py): the calling thread waits while its task is at the limit,
is woken when trees complete, and is let go when the limit stops applying."""
from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

from squall.runtime.executors.pending import PendingLimit
from squall.testing import wait_until


class Spout:
    """The executor's side: trees in flight per task, and whether the limit applies."""

    def __init__(self, limit: int) -> None:
        self.trees: dict[int, int] = {}
        self.on = True
        self.limit = PendingLimit(limit, self.in_flight, lambda: self.on)

    def in_flight(self, ts: Any) -> int:
        return self.trees.get(ts.task, 0) + self.limit.queued(ts)

    def made(self, ts: Any) -> None:
        """The loop made a tracked emit: one tree more."""
        self.trees[ts.task] = self.trees.get(ts.task, 0) + 1
        self.limit.made(ts)


def emitter(spout: Spout, ts: Any, n: int, done: list[int]) -> threading.Thread:
    """A spout's own thread making ``n`` tracked emits (each counted once it returns)."""
    def run() -> None:
        for _ in range(n):
            spout.limit.enter(ts)
            done.append(1)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_a_thread_waits_at_the_limit_until_trees_complete() -> None:
    spout, ts, done = Spout(3), SimpleNamespace(task=7), []
    t = emitter(spout, ts, 5, done)
    wait_until(lambda: spout.limit.waiting == 1, timeout=5)
    assert len(done) == 3 and spout.limit.queued(ts) == 3
    for _ in range(3):              # the loop makes the three: three trees in flight
        spout.made(ts)
    spout.limit.wake()              # nothing completed: it goes on waiting
    assert len(done) == 3
    spout.trees[7] = 1              # two trees completed
    spout.limit.wake()
    t.join(5)
    assert not t.is_alive() and len(done) == 5 and spout.limit.waiting == 0


def test_each_task_has_its_own_room() -> None:
    spout, done = Spout(2), []
    spout.trees[1] = 2              # task 1 is at the limit, task 2 is not
    t = emitter(spout, SimpleNamespace(task=2), 2, done)
    t.join(5)
    assert not t.is_alive() and len(done) == 2


def test_an_emit_that_raised_makes_room() -> None:
    spout, ts, done = Spout(1), SimpleNamespace(task=1), []
    t = emitter(spout, ts, 2, done)
    wait_until(lambda: spout.limit.waiting == 1, timeout=5)
    spout.limit.made(ts, False)     # the loop's emit raised: no tree, and room again
    t.join(5)
    assert not t.is_alive() and len(done) == 2


def test_a_waiting_thread_is_let_go_when_the_limit_stops_applying() -> None:
    # the spout deactivated, or the worker's loop stopped: the thread must not wait for
    # trees that may never complete (a deactivate or close may join it)
    spout, ts, done = Spout(1), SimpleNamespace(task=1), []
    spout.trees[1] = 1
    t = emitter(spout, ts, 3, done)
    wait_until(lambda: spout.limit.waiting == 1, timeout=5)
    spout.on = False
    spout.limit.wake()
    t.join(5)
    assert not t.is_alive() and len(done) == 3


def test_a_stopped_loop_lets_it_go_without_a_wake_up() -> None:
    spout, ts, done = Spout(1), SimpleNamespace(task=1), []
    spout.trees[1] = 1
    t = emitter(spout, ts, 1, done)
    wait_until(lambda: spout.limit.waiting == 1, timeout=5)
    spout.on = False                # a loop that died wakes nobody: the thread looks itself
    t.join(5)
    assert not t.is_alive() and done == [1]
