"""The acker contract suite: what every ``squall.ackers`` driver must do (XOR semantics).

Use it by subclassing in a pytest module and overriding the ``acker_factory`` fixture::

    from squall.testing.contracts.acker import AckerContract

    class TestMyAcker(AckerContract):
        @pytest.fixture
        def acker_factory(self):
            return MyAcker                   # any callable conf -> Acker

An acker instance is one acker task's state (see :class:`squall.Acker`). The runtime sends it
``init(root, xor_of_spout_edges, spout_task)``, ``ack(root, own_edge ^ children_edges)`` and
``fail(root)`` in whatever order they arrive, and calls ``rotate()`` every message timeout.
Checked here:

* a tree completes exactly once, with ``(spout_task, True)``, when init and every ack have
  arrived, whatever their order (every permutation of a small tree; acks before the init too);
  no call before the last one completes it, none after it completes it again;
* ``fail`` completes the tree at once with ``(spout_task, False)``; a fail that arrives before
  the init completes it as failed when the init arrives; later acks complete nothing;
* many interleaved trees complete independently;
* a tree that never completes is returned by the second ``rotate()`` after its last message
  (as ``(root, spout_task)``) and is forgotten; an active tree survives rotations;
* ``pending()`` counts the trees being tracked.
"""
from __future__ import annotations

import itertools
import random
from typing import Any
from collections.abc import Callable

import pytest

from squall.spi.acker import Acker

__all__ = ["AckerContract", "Tree", "make_tree"]


class Tree:
    """A tuple tree as the runtime would report it: the init message and the ack messages."""

    def __init__(self, root: int, spout_task: int, init: int, acks: list[int]) -> None:
        self.root, self.spout_task, self.init, self.acks = root, spout_task, init, acks

    def messages(self) -> list[tuple[str, int]]:
        """``("init", value)`` then one ``("ack", value)`` per processed tuple."""
        return [("init", self.init)] + [("ack", v) for v in self.acks]


def make_tree(rng: random.Random, spout_task: int = 3, width: int = 2, depth: int = 2) -> Tree:
    """A spout tuple sent to ``width`` bolts, each of which emits ``width`` anchored children,
    down to ``depth`` levels; every tuple is acked once."""
    root = rng.getrandbits(64)
    spout_edges = [rng.getrandbits(64) for _ in range(width)]
    acks: list[int] = []
    level = spout_edges
    for d in range(depth):
        nxt: list[int] = []
        for edge in level:
            children = [rng.getrandbits(64) for _ in range(width)] if d < depth - 1 else []
            value = edge
            for c in children:
                value ^= c
            acks.append(value)
            nxt.extend(children)
        level = nxt
    init = 0
    for e in spout_edges:
        init ^= e
    return Tree(root, spout_task, init, acks)


class AckerContract:
    """Base class of the acker contract tests; override ``acker_factory``."""

    @pytest.fixture
    def acker_factory(self) -> Callable[[dict[str, Any]], Acker]:
        raise NotImplementedError("override the acker_factory fixture")

    @pytest.fixture
    def acker(self, acker_factory: Callable[[dict[str, Any]], Acker]) -> Acker:
        return acker_factory({"topology.message.timeout.secs": 30})

    @staticmethod
    def feed(acker: Acker, tree: Tree, messages: list[tuple[str, int]]) -> list[Any]:
        """Send ``messages`` of ``tree``; return the non-None results, with their positions."""
        out = []
        for i, (kind, value) in enumerate(messages):
            if kind == "init":
                res = acker.init(tree.root, value, tree.spout_task)
            elif kind == "ack":
                res = acker.ack(tree.root, value)
            else:
                res = acker.fail(tree.root)
            if res is not None:
                out.append((i, tuple(res)))
        return out

    def test_single_tuple_tree(self, acker: Acker) -> None:
        edge = 0x1234_5678_9ABC_DEF0
        assert acker.init(77, edge, 5) is None
        assert acker.pending() == 1
        assert tuple(acker.ack(77, edge)) == (5, True)  # type: ignore[arg-type]
        assert acker.pending() == 0

    def test_every_order_completes_exactly_once(self, acker_factory: Callable[..., Acker]
                                                ) -> None:
        rng = random.Random(1)
        tree = make_tree(rng, width=2, depth=2)          # init + 6 acks = 5040 orders
        messages = tree.messages()
        for order in itertools.permutations(range(len(messages))):
            acker = acker_factory({})
            got = self.feed(acker, tree, [messages[i] for i in order])
            assert got == [(len(messages) - 1, (tree.spout_task, True))], (
                f"order {order}: completions {got}")
            assert acker.pending() == 0

    def test_ack_before_init(self, acker: Acker) -> None:
        tree = make_tree(random.Random(2), width=3, depth=1)
        acks = [("ack", v) for v in tree.acks]
        assert self.feed(acker, tree, acks) == []
        assert acker.pending() == 1
        assert self.feed(acker, tree, [("init", tree.init)]) == [(0, (tree.spout_task, True))]
        assert acker.pending() == 0

    def test_duplicate_messages_after_completion_complete_nothing(self, acker: Acker) -> None:
        tree = make_tree(random.Random(3))
        assert self.feed(acker, tree, tree.messages())[-1][1] == (tree.spout_task, True)
        assert self.feed(acker, tree, [("ack", v) for v in tree.acks]) == []

    def test_fail_completes_with_ok_false(self, acker: Acker) -> None:
        tree = make_tree(random.Random(4))
        msgs = tree.messages()
        got = self.feed(acker, tree, msgs[:2] + [("fail", 0)])
        assert got == [(2, (tree.spout_task, False))]
        assert acker.pending() == 0
        assert self.feed(acker, tree, msgs[2:]) == [], "late acks completed a failed tree"

    def test_fail_before_init(self, acker: Acker) -> None:
        tree = make_tree(random.Random(5))
        assert self.feed(acker, tree, [("ack", tree.acks[0]), ("fail", 0)]) == []
        got = self.feed(acker, tree, [("init", tree.init)] + [("ack", v) for v in tree.acks[1:]])
        assert got == [(0, (tree.spout_task, False))]

    def test_interleaved_trees(self, acker: Acker) -> None:
        rng = random.Random(6)
        trees = [make_tree(rng, spout_task=1 + i % 4, width=2, depth=3) for i in range(200)]
        stream = [(t, m) for t in trees for m in t.messages()]
        rng.shuffle(stream)
        done: dict[int, list[Any]] = {}
        for tree, (kind, value) in stream:
            res = (acker.init(tree.root, value, tree.spout_task) if kind == "init"
                   else acker.ack(tree.root, value))
            if res is not None:
                done.setdefault(tree.root, []).append(tuple(res))
        assert done == {t.root: [(t.spout_task, True)] for t in trees}
        assert acker.pending() == 0

    def test_pending_counts_trees(self, acker: Acker) -> None:
        rng = random.Random(7)
        trees = [make_tree(rng) for _ in range(5)]
        for n, tree in enumerate(trees, 1):
            acker.init(tree.root, tree.init, tree.spout_task)
            assert acker.pending() == n
        for n, tree in enumerate(trees):
            for v in tree.acks:
                acker.ack(tree.root, v)
            assert acker.pending() == len(trees) - n - 1

    def test_rotate_twice_expires_a_tree(self, acker: Acker) -> None:
        stale = make_tree(random.Random(8), spout_task=9)
        acker.init(stale.root, stale.init, stale.spout_task)
        assert acker.rotate() == []
        assert acker.pending() == 1
        expired = acker.rotate()
        assert [tuple(e) for e in expired] == [(stale.root, stale.spout_task)]
        assert acker.pending() == 0
        assert acker.rotate() == []

    def test_active_tree_survives_rotation(self, acker: Acker) -> None:
        tree = make_tree(random.Random(9))
        acker.init(tree.root, tree.init, tree.spout_task)
        acker.rotate()
        acker.ack(tree.root, tree.acks[0])           # activity after the first rotation
        assert acker.rotate() == []
        got = self.feed(acker, tree, [("ack", v) for v in tree.acks[1:]])
        assert got and got[-1][1] == (tree.spout_task, True)
