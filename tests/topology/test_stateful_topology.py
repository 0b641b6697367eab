"""Stateful bolts in a LocalCluster (API.md section 11): exact counts with a replaying spout
and failures, checkpoints committing state, and the topologies that are refused."""
from __future__ import annotations

import collections
import threading
import uuid
from typing import Any

import pytest

from squall import Bolt, Spout, StatefulBolt, TopologyBuilder, TopologyError
from squall.serializers.msgpack import MsgpackSerializer
from squall.stateful.memory import MemoryStateProvider
from squall.stateful.provider import namespace
from squall.testing.waiting import wait_until

WORDS = ["cow", "moon", "apple", "snow", "dwarf", "cow", "moon", "cow"]
_LOCK = threading.Lock()
#: test key -> what the components of that test's topology report (one process: LocalCluster)
ACKED: dict[str, list[int]] = collections.defaultdict(list)
FAILED_ONCE: dict[str, set[Any]] = collections.defaultdict(set)


def expected(total: int) -> dict[str, int]:
    return dict(collections.Counter(WORDS[i % len(WORDS)] for i in range(total)))


class ReplayingWords(Spout):
    """Emits ``[word, i]`` for i < test.total with tup_id i; replays what fails."""
    outputs = ["word", "i"]

    def initialize(self, conf, context):
        self.key = conf["test.key"]
        self.todo = collections.deque(range(int(conf["test.total"])))

    def next_tuple(self):
        if self.todo:
            i = self.todo.popleft()
            self.emit([WORDS[i % len(WORDS)], i], tup_id=i)

    def ack(self, tup_id):
        with _LOCK:
            ACKED[self.key].append(tup_id)

    def fail(self, tup_id):
        self.todo.append(tup_id)


class FailsOnce(Bolt):
    """Passes words on; fails every tup_id % 7 == 3 the first time it sees it."""
    outputs = ["word", "i"]

    def initialize(self, conf, context):
        self.key = conf["test.key"]

    def process(self, tup):
        word, i = tup.values
        with _LOCK:
            first = i % 7 == 3 and ("fwd", i) not in FAILED_ONCE[self.key]
            if first:
                FAILED_ONCE[self.key].add(("fwd", i))
        if first:
            raise RuntimeError(f"failing {i} once")
        self.emit([word, i])


class WordCounter(StatefulBolt):
    outputs = ["word", "count"]

    def initialize(self, conf, context):
        self.key = conf["test.key"]
        self.fail_own = bool(conf.get("test.counter.fails"))

    def init_state(self, state):
        self.counts = state

    def process(self, tup):
        word, i = tup.values
        if self.fail_own and i % 11 == 5:
            with _LOCK:
                first = ("count", i) not in FAILED_ONCE[self.key]
                FAILED_ONCE[self.key].add(("count", i))
            if first:
                raise RuntimeError(f"counter fails {i} once")
        n = self.counts.get(word, 0) + 1
        self.counts.put(word, n)
        self.emit([word, n])


def wordcount(counters: int = 2) -> Any:
    b = TopologyBuilder()
    b.set_spout("words", ReplayingWords)
    b.set_bolt("flaky", FailsOnce, parallelism=2).shuffle_grouping("words")
    b.set_bolt("count", WordCounter, parallelism=counters).fields_grouping("flaky", ["word"])
    return b


def committed_counts(prefix: str, name: str, tasks: list[int]) -> dict[str, int]:
    """Word -> count summed over the count tasks' committed state (memory provider)."""
    provider = MemoryStateProvider({"key_prefix": prefix})
    ser = MsgpackSerializer({})
    out: collections.Counter[str] = collections.Counter()
    for task in tasks:
        _, data = provider.load(namespace(name, "count", task))
        out.update({ser.loads(k): ser.loads(v) for k, v in data.items()})
    return dict(out)


@pytest.mark.parametrize("workers, counter_fails", [(1, False), (2, True)],
                         ids=["one-worker", "two-workers-counter-fails"])
def test_stateful_word_count_is_exact_with_replays_and_failures(cluster, workers,
                                                                counter_fails):
    key = uuid.uuid4().hex
    total = 400
    topology = wordcount().create_topology()
    conf = {"test.key": key, "test.total": total, "topology.workers": workers,
            "test.counter.fails": counter_fails,
            "topology.state.provider.config": {"key_prefix": key},
            "topology.state.checkpoint.interval.ms": 100}
    cluster.submit_topology("swc", conf, topology)
    wait_until(lambda: len(set(ACKED[key])) == total, timeout=60,
               message="not every word was acked")
    assert sorted(ACKED[key]) == list(range(total)), "a word was acked twice"
    assert any(i % 7 == 3 for _, i in FAILED_ONCE[key]), "nothing was failed"
    counts = committed_counts(key, "swc", topology.tasks("count"))
    assert counts == expected(total)
