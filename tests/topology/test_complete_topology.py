"""complete_topology: stateful bolts across workers count every source tuple, result.tuples
lists what a component emitted through any reference to its emit, and the timeout bounds the
whole call, the stop included; several sources complete, each with its own acks and fails; a
forgotten ack shows as failed and a timeout says what is pending; a Trident topology is
refused."""
from __future__ import annotations

import collections
import threading
import time
from typing import Any

import pytest
from streamparse import Bolt as SPBolt
from streamparse import Spout as SPSpout
from streamparse import Topology as SPTopology

from squall import Bolt, Duration, Spout, StatefulBolt, Stream, TopologyBuilder, WindowedBolt
from squall.api.target import load_target
from squall.errors import TopologyError
from squall.runtime.emit import tap
from squall.testing import WaitTimeout, complete_topology
from squall.trident import Count, FixedBatchSpout, Function, MemoryMapState, TridentTopology

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


class Numbers(Spout):
    outputs = ["n"]


class Echo(Bolt):
    """Emits what it gets on "default"; fails the tuples whose value is "bad" (its "odd"
    stream is declared and never emitted on)."""
    auto_ack = False
    outputs = [Stream(["n"]), Stream(["n"], name="odd")]

    def process(self, tup: Any) -> None:
        if tup["n"] == "bad":
            self.fail(tup)
            return
        self.emit([tup["n"]], anchors=[tup])
        self.ack(tup)


def _two_sources() -> Any:
    b = TopologyBuilder()
    b.set_spout("a", Numbers)
    b.set_spout("b", Numbers)
    b.set_bolt("echo", Echo).shuffle_grouping("a").shuffle_grouping("b")
    return b.create_topology()


def test_two_sources_complete_and_each_tells_its_own_acks_and_fails() -> None:
    # both number their tuples from 0: the run waited for 4 distinct indexes, got 2, and
    # never finished
    result = complete_topology(_two_sources(), sources={"a": [[1], [2]], "b": [["bad"], [4]]},
                               timeout=10)
    assert sorted(result.tuples("echo")) == [(1,), (2,), (4,)]
    assert (result.acked_by("a"), result.failed_by("a")) == ({0, 1}, set())
    assert (result.acked_by("b"), result.failed_by("b")) == ({1}, {0})
    assert (result.acked, result.failed) == ({0, 1}, {0})     # an index acked or failed anywhere
    with pytest.raises(KeyError, match="'echo' is not a source of this run; its sources: a, b"):
        result.acked_by("echo")


def test_tuples_of_an_unknown_component_or_stream_is_a_key_error() -> None:
    result = complete_topology(_two_sources(), sources={"a": [[1]], "b": [[2]]}, timeout=10)
    assert result.tuples("echo", "odd") == []           # declared, never emitted on
    with pytest.raises(KeyError, match="'ecko' is not a component of the topology; its "
                                       "components: a, b, echo"):
        result.tuples("ecko")
    with pytest.raises(KeyError, match="component 'echo' has no stream 'even'; its streams: "
                                       "default, odd"):
        result.tuples("echo", "even")


class Forgets(Bolt):
    """Never acks "lost"."""
    auto_ack = False
    outputs = ["n"]

    def process(self, tup: Any) -> None:
        if tup["n"] != "lost":
            self.ack(tup)


def test_a_tuple_never_acked_is_failed_before_the_run_gives_up() -> None:
    # the message timeout was topology.message.timeout.secs's 30 s, as long as the wait: a
    # forgotten ack could only end in a WaitTimeout
    b = TopologyBuilder()
    b.set_spout("s", Numbers)
    b.set_bolt("f", Forgets).shuffle_grouping("s")
    result = complete_topology(b.create_topology(), sources={"s": [["a"], ["lost"], ["b"]]},
                               timeout=8)
    assert (result.acked, result.failed) == ({0, 2}, {1})


class Sums(WindowedBolt):
    outputs = ["total"]
    window = Duration(seconds=2)            # tumbling: its tuples are held up to 4 s

    def process_window(self, window: Any) -> None:
        self.emit([sum(t["n"] for t in window.tuples)])


def test_the_run_message_timeout_leaves_a_duration_window_its_time() -> None:
    # a third of the timeout (3 s) is less than the window holds its tuples: the submit
    # would refuse it
    b = TopologyBuilder()
    b.set_spout("s", Numbers)
    b.set_bolt("sums", Sums).shuffle_grouping("s")
    result = complete_topology(b.create_topology(), sources={"s": [[1], [2], [3]]}, timeout=9)
    assert (result.acked, result.failed) == ({0, 1, 2}, set())
    assert sum(total for (total,) in result.tuples("sums")) == 6


class Idle(Spout):
    outputs = ["n"]


def test_a_timeout_says_which_tuples_are_pending_and_which_spouts_are_not_mocked() -> None:
    b = TopologyBuilder()
    b.set_spout("a", Numbers)
    b.set_spout("b", Numbers)
    b.set_spout("idle", Idle)
    b.set_bolt("f", Forgets).shuffle_grouping("a").shuffle_grouping("b") \
        .shuffle_grouping("idle")
    with pytest.raises(WaitTimeout) as caught:     # the message timeout set is kept
        complete_topology(b.create_topology(), sources={"a": [["x"], ["lost"]], "b": [["y"]]},
                          conf={"topology.message.timeout.secs": 30}, timeout=3)
    assert str(caught.value) == (
        "complete_topology: not every source tuple was acked or failed within 3 s: 2 of 3 "
        "source tuples acked or failed; in flight (emitted, not acked or failed yet): a[1]; "
        "a tuple never acked or failed is failed after topology.message.timeout.secs (30 s "
        "here); spouts not mocked (they run as they are; name them in sources to replace "
        "them): idle")


class Endless(Spout):
    outputs = ["n"]

    def next_tuple(self) -> None:
        self.emit(["more"])


def test_a_timeout_waiting_for_quiet_names_the_spouts_not_mocked() -> None:
    b = TopologyBuilder()
    b.set_spout("a", Numbers)
    b.set_spout("endless", Endless)
    b.set_bolt("f", Forgets).shuffle_grouping("a").shuffle_grouping("endless")
    with pytest.raises(WaitTimeout, match=r"every source tuple was acked or failed, but the "
                       r"topology did not go quiet within 2 s .*; spouts not mocked .*: "
                       r"endless$"):
        complete_topology(b.create_topology(), sources={"a": [["x"]]}, timeout=2)


class SplitWords(Function):
    def execute(self, tup: Any, collector: Any) -> None:
        for w in tup[0].split():
            collector.emit([w])


@pytest.mark.parametrize("sources", [{}, {"spout-sentences": [["a b"]]}])
def test_a_trident_topology_is_refused_with_how_to_test_it(sources: Any) -> None:
    # it returned an empty result at once (or named a coordinator as the only spout)
    t = TridentTopology()
    (t.new_stream("sentences", FixedBatchSpout(["sentence"], 2, [["a b"], ["b c"]]))
     .each(["sentence"], SplitWords(), ["word"]).group_by(["word"])
     .persistent_aggregate(MemoryMapState(), Count(), ["count"]))
    with pytest.raises(TopologyError, match=r"complete_topology runs plain topologies, and "
                       r"this one was built by TridentTopology.build\(\) .*\$mastercoord-bg0.*"
                       r"LocalCluster.*LocalDRPC"):
        complete_topology(t.build(), sources=sources, timeout=10)
