"""complete_topology: stateful bolts across workers count every source tuple, result.tuples
lists what a component emitted through any reference to its emit, and the timeout bounds the
whole call, the stop included."""
from __future__ import annotations

import collections
import threading
import time
from typing import Any

import pytest
from streamparse import Bolt as SPBolt
from streamparse import Spout as SPSpout
from streamparse import Topology as SPTopology

from squall import Bolt, Spout, StatefulBolt, TopologyBuilder
from squall.api.target import load_target
from squall.errors import TopologyError
from squall.runtime.emit import tap
from squall.testing import WaitTimeout, complete_topology

pytestmark = pytest.mark.timeout(120)

WORDS = "a b c a b a d e f a".split()


class Words(Spout):
    outputs = ["word"]


class Lines(Spout):
    outputs = ["line"]


class Counter(StatefulBolt):
    outputs = ["word", "count"]

    def init_state(self, state: Any) -> None:
        self.counts = state

    def process(self, tup: Any) -> None:
        n = self.counts.get(tup["word"], 0) + 1
        self.counts.put(tup["word"], n)
        self.emit([tup["word"], n])


class Split(Bolt):
    outputs = ["word"]

    def process(self, tup: Any) -> None:
        for w in tup["line"].split():
            self.emit([w])


def _final(result: Any) -> dict[str, int]:
    final: dict[str, int] = {}
    for word, n in result.tuples("count"):
        final[word] = max(n, final.get(word, 0))
    return final


@pytest.mark.parametrize("workers", [1, 2])
def test_stateful_counts_every_source_tuple_on_any_number_of_workers(workers: int) -> None:
    # with two workers the stateful tasks in the worker without the checkpoint spout got the
    # first words before their state: they failed them, and a fixed spout never replays
    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("count", Counter, parallelism=2).fields_grouping("words", ["word"])
    result = complete_topology(b.create_topology(), sources={"words": [[w] for w in WORDS]},
                               conf={"topology.workers": workers})
    assert (sorted(result.acked), result.failed) == (list(range(len(WORDS))), set())
    assert _final(result) == dict(collections.Counter(WORDS))


def test_stateful_behind_a_split_on_two_workers_counts_every_word() -> None:
    lines = ["a b c", "a b", "d e f a"]
    b = TopologyBuilder()
    b.set_spout("lines", Lines)
    b.set_bolt("split", Split, parallelism=2).shuffle_grouping("lines")
    b.set_bolt("count", Counter, parallelism=2).fields_grouping("split", ["word"])
    result = complete_topology(b.create_topology(), sources={"lines": [[s] for s in lines]},
                               conf={"topology.workers": 2})
    assert (sorted(result.acked), result.failed) == ([0, 1, 2], set())
    assert _final(result) == dict(collections.Counter(" ".join(lines).split()))


SINK_LOCK = threading.Lock()
SINK: collections.Counter[str] = collections.Counter()


class BoundSplit(Bolt):
    """Binds its emits in initialize, as many bolts do."""
    outputs = ["word"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.out = self.emit
        self.out_many = self.emit_many

    def process(self, tup: Any) -> None:
        words = tup["line"].split()
        self.out([words[0]])
        self.out_many([[w] for w in words[1:]])


class Sink(Bolt):
    outputs: list[str] = []

    def process(self, tup: Any) -> None:
        with SINK_LOCK:
            SINK[tup.values[0]] += 1


def test_tuples_lists_emits_made_through_a_reference_bound_in_initialize() -> None:
    SINK.clear()
    b = TopologyBuilder()
    b.set_spout("lines", Lines)
    b.set_bolt("split", BoundSplit).shuffle_grouping("lines")
    b.set_bolt("sink", Sink).shuffle_grouping("split")
    result = complete_topology(b.create_topology(), sources={"lines": [["a b c"], ["d"]]})
    assert sorted(result.tuples("split")) == [("a",), ("b",), ("c",), ("d",)]
    assert dict(SINK) == {"a": 1, "b": 1, "c": 1, "d": 1}
    assert sorted(result.tuples("lines")) == [("a b c",), ("d",)]
    assert tap.TAPS == {}           # later topologies' emits are not wrapped


class SPSentences(SPSpout):
    outputs = ["sentence"]

    def next_tuple(self) -> None:
        pass


class SPSplit(SPBolt):
    outputs = ["word"]

    def process(self, tup: Any) -> None:
        for w in tup.values[0].split():
            self.emit([w])


class SPWords(SPTopology):
    sentences = SPSentences.spec()
    split = SPSplit.spec(inputs=[sentences], par=2)


def test_tuples_lists_what_a_streamparse_bolt_emitted() -> None:
    topology = load_target(f"{__name__}:SPWords")
    result = complete_topology(topology, sources={"sentences": [["the cow"], ["jumped"]]})
    assert sorted(result.acked) == [0, 1]
    assert sorted(result.tuples("split")) == [("cow",), ("jumped",), ("the",)]


RELEASE = threading.Event()


class Stuck(Bolt):
    outputs = ["x"]

    def process(self, tup: Any) -> None:
        if tup["line"] == "stuck":
            RELEASE.wait(60)


def test_timeout_bounds_the_call_with_a_bolt_stuck_in_process() -> None:
    # the stop after the timeout waited 10 s for the loop held in process(): 3 s took 14
    RELEASE.clear()
    b = TopologyBuilder()
    b.set_spout("s", Lines)
    b.set_bolt("b", Stuck).shuffle_grouping("s")
    start = time.monotonic()
    try:
        with pytest.raises(WaitTimeout, match="acked or failed"):
            complete_topology(b.create_topology(), sources={"s": [["ok"], ["stuck"]]},
                              timeout=2)
        took = time.monotonic() - start
    finally:
        RELEASE.set()
    assert took < 5, f"complete_topology(timeout=2) took {took:.1f} s"


@pytest.mark.parametrize("timeout", [0, -1, "3", True, float("nan")])
def test_a_bad_timeout_is_one_clear_error(timeout: Any) -> None:
    b = TopologyBuilder()
    b.set_spout("s", Lines)
    with pytest.raises(ValueError, match="timeout must be a number of seconds > 0"):
        complete_topology(b.create_topology(), sources={"s": [["x"]]}, timeout=timeout)


def test_a_topology_that_is_not_one_is_one_clear_error() -> None:
    with pytest.raises(TopologyError, match="needs a Topology .*load_target"):
        complete_topology(SPWords, sources={"sentences": [["x"]]})  # type: ignore[arg-type]


@pytest.mark.parametrize("source, said", [
    ("abc", "the source for 's' is a str"),     # would have been three tuples, a b c
    (b"ab", "the source for 's' is a bytes"),
    ({"a": 1}, "the source for 's' is a dict"),
    (["a b", "c"], "tuple 0 of the source for 's' is a str"),   # [["a b"], ["c"]] meant
    ([["x"], b"y"], "tuple 1 of the source for 's' is a bytes"),
    ([["x"], 3], "tuple 1 of the source for 's' is a int"),
])
def test_a_str_or_bytes_source_or_tuple_is_one_clear_error(source: Any, said: str) -> None:
    b = TopologyBuilder()
    b.set_spout("s", Lines)
    b.set_bolt("split", Split).shuffle_grouping("s")
    with pytest.raises(TopologyError, match=f"complete_topology: {said} .*list of"):
        complete_topology(b.create_topology(), sources={"s": source}, timeout=10)
