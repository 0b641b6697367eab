"""``lazy_batch`` bolts: process_batch gets a TupleBatch, emit_many feeds it whole runs, and
acking, failing, ticks and complete_topology behave as with a list of Tuple."""
from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest

from squall import Bolt, LocalCluster, Spout, TopologyBuilder, TupleBatch
from squall.api.tuple import Source, TupleRun
from squall.testing import complete_topology, wait_until

LOCK = threading.Lock()
COUNTS: Counter[str] = Counter()
SEEN: list[Any] = []
TICKS: list[Any] = []


@pytest.fixture(autouse=True)
def _clear() -> None:
    COUNTS.clear()
    SEEN.clear()
    TICKS.clear()


class Lines(Spout):
    outputs = ["line"]


class SplitMany(Bolt):
    """Splits each line, emitting its words with one emit_many anchored to the line."""

    outputs = ["word"]

    def process_batch(self, tuples: list[Any]) -> None:
        for tup in tuples:
            self.emit_many([(w,) for w in tup["line"].split()], anchors=(tup,))


class CountValues(Bolt):
    """Counts through ``values``: never builds a Tuple."""

    lazy_batch = True

    def process_batch(self, tuples: TupleBatch) -> None:
        with LOCK:
            SEEN.append(len(tuples))
            COUNTS.update(w for (w,) in tuples.values)


class Forward(Bolt):
    """Reads Tuples out of the batch and forwards each, anchored to it."""

    lazy_batch = True
    outputs = ["word"]

    def process_batch(self, tuples: TupleBatch) -> None:
        for tup in tuples:
            assert tup.component == "split" and tup.stream == "default"
            self.emit([tup["word"].upper()], anchors=[tup])


class CountTuples(Bolt):
    def process(self, tup: Any) -> None:
        with LOCK:
            COUNTS[tup["word"]] += 1


class Boom(Bolt):
    """Raises for a batch holding the word 'boom'."""

    lazy_batch = True

    def process_batch(self, tuples: TupleBatch) -> None:
        words = tuples.column("word")
        if "boom" in words:
            raise RuntimeError("boom")
        with LOCK:
            COUNTS.update(words)


LINES = [[f"the cat {i} sat on the mat"] for i in range(300)]


def _split_count(counter: type[Bolt], **conf: Any) -> Any:
    b = TopologyBuilder()
    b.set_spout("lines", Lines)
    b.set_bolt("split", SplitMany, 2).shuffle_grouping("lines")
    b.set_bolt("count", counter).fields_grouping("split", ["word"])
    return complete_topology(b.create_topology(), {"lines": LINES}, conf=conf)


def _expected() -> Counter[str]:
    return Counter(w for (line,) in LINES for w in line.split())


@pytest.mark.parametrize("ackers", [0, 1])
def test_values_without_tuples_count_exactly_and_ack_every_line(ackers: int) -> None:
    result = _split_count(CountValues, **{"topology.acker.executors": ackers})
    assert COUNTS == _expected()
    assert len(result.tuples("split")) == sum(_expected().values())   # emit_many is captured
    if ackers:
        assert result.acked == set(range(len(LINES))) and not result.failed
    assert max(SEEN) > 7     # runs arrive whole, not one tuple per call


@pytest.mark.parametrize("counter", [CountValues, CountTuples])
@pytest.mark.parametrize("ackers", [0, 2])
def test_emit_many_across_workers_counts_exactly(counter: type[Bolt], ackers: int) -> None:
    """Two workers over the local transport: emit_many's runs for remote tasks travel as run
    entries and arrive as runs (lazy bolt) or as Tuples (per-tuple bolt), counts exact."""
    b = TopologyBuilder()
    b.set_spout("lines", Lines, 2)
    b.set_bolt("split", SplitMany, 2).shuffle_grouping("lines")
    b.set_bolt("count", counter, 3).fields_grouping("split", ["word"])
    result = complete_topology(b.create_topology(), {"lines": LINES},
                               conf={"topology.workers": 2, "topology.acker.executors": ackers})
    assert COUNTS == _expected()
    if ackers:
        assert result.acked == set(range(len(LINES))) and not result.failed


def test_tuples_built_from_runs_keep_the_xor_tree_exact() -> None:
    b = TopologyBuilder()
    b.set_spout("lines", Lines)
    b.set_bolt("split", SplitMany).shuffle_grouping("lines")
    b.set_bolt("forward", Forward).shuffle_grouping("split")
    b.set_bolt("count", CountTuples, 2).fields_grouping("forward", ["word"])
    result = complete_topology(b.create_topology(), {"lines": LINES},
                               conf={"topology.acker.executors": 2})
    assert result.acked == set(range(len(LINES))) and not result.failed
    assert COUNTS == Counter({w.upper(): n for w, n in _expected().items()})


def test_a_raising_batch_fails_its_lines_and_the_rest_are_counted() -> None:
    lines = [["a b c"], ["d boom e"], ["f g"]] * 20
    b = TopologyBuilder()
    b.set_spout("lines", Lines)
    b.set_bolt("split", SplitMany).shuffle_grouping("lines")
    b.set_bolt("count", Boom).shuffle_grouping("split")
    # one line per batch of the splitter, so a failing count batch holds one line's words
    result = complete_topology(b.create_topology(), {"lines": lines},
                               conf={"topology.acker.executors": 1,
                                     "topology.transfer.batch.size": 1})
    booms = {i for i, (line,) in enumerate(lines) if "boom" in line}
    assert booms <= result.failed
    assert result.acked | result.failed == set(range(len(lines)))
    assert COUNTS["boom"] == 0 and COUNTS["a"] == len(result.acked & {i for i in range(0, 60, 3)})


class Ticked(Bolt):
    lazy_batch = True

    def process_batch(self, tuples: TupleBatch) -> None:
        with LOCK:
            COUNTS.update(tuples.column("line"))

    def process_tick(self, tup: Any) -> None:
        with LOCK:
            TICKS.append(tup.is_tick)


class Endless(Spout):
    outputs = ["line"]

    def next_tuple(self) -> None:
        self.emit_many([("x",)] * 10)


def test_ticks_reach_process_tick_not_the_batch(cluster: LocalCluster) -> None:
    b = TopologyBuilder()
    b.set_spout("lines", Endless)
    b.set_bolt("ticked", Ticked, config={"topology.tick.tuple.freq.secs": 1}
               ).shuffle_grouping("lines")
    cluster.submit_topology("ticks", {"topology.acker.executors": 0,
                                      "topology.max.spout.pending": None}, b.create_topology())
    wait_until(lambda: len(TICKS) >= 1 and COUNTS["x"] > 1000, timeout=10)
    assert set(TICKS) == {True} and set(COUNTS) == {"x"}


def test_tuple_batch_reads_like_a_sequence_of_tuples() -> None:
    words = Source("split", "default", ("word", "n"))
    other = Source("other", "default", ("n", "word"))
    from squall.api.tuple import Tuple
    run = TupleRun([("a", 1), ("b", 2)], 3, words)
    batch = TupleBatch([run, Tuple((3, "c"), 4, other)], 3)
    assert len(batch) == 3
    assert batch.values == [("a", 1), ("b", 2), (3, "c")]
    assert batch.column("word") == ["a", "b", "c"] and batch.column("n") == [1, 2, 3]
    assert [t["word"] for t in batch] == ["a", "b", "c"]
    assert batch[0].task == 3 and batch[0].component == "split" and batch[-1].task == 4
    assert [t.values for t in batch[1:]] == [("b", 2), (3, "c")]
    assert batch[0] is batch[0]             # built once
    with pytest.raises(KeyError, match="no field 'nope'"):
        batch.column("nope")
    assert TupleBatch([run], 2).values is run.values
    # streams alternating, each with its own field order
    mixed = TupleBatch([run, Tuple((3, "c"), 4, other), TupleRun([("d", 4)], 3, words),
                        TupleRun([(5, "e"), (6, "f")], 4, other)], 6)
    assert mixed.column("word") == list("abcdef") and mixed.column("n") == [1, 2, 3, 4, 5, 6]


def test_tuples_built_from_an_anchored_run_xor_to_its_edge() -> None:
    src = Source("split", "default", ("word",))
    run = TupleRun([(w,) for w in "abcdefg"], 2, src, roots=(11, 12), edge=0x1234_5678_9ABC)
    tuples = run.tuples()
    total = 0
    for t in tuples:
        total ^= t.id
        assert t.roots == (11, 12) and t.task == 2
    assert total == run.edge and len({t.id for t in tuples}) == 7


class Slow(Bolt):
    """A lazy bolt slower than its spout: its queue fills until backpressure stops the spout.
    Its cost is per tuple (about 10 µs each), so taking larger batches does not let it catch up."""

    lazy_batch = True

    def process_batch(self, tuples: TupleBatch) -> None:
        sum(range(1000 * len(tuples.values)))
        with LOCK:
            SEEN.append(len(tuples.values))


def test_backpressure_counts_the_tuples_in_runs_not_the_entries(cluster: LocalCluster) -> None:
    b = TopologyBuilder()
    b.set_spout("lines", Endless)
    b.set_bolt("slow", Slow).shuffle_grouping("lines")
    # two workers: the spout's loop runs apart from the slow bolt's, and only backpressure
    # (the bolt's worker telling the spout's to stop) bounds what piles up in front of it
    cluster.submit_topology("bp", {"topology.acker.executors": 0, "topology.workers": 2,
                                   "topology.executor.receive.buffer.size": 2000,
                                   "topology.max.spout.pending": None}, b.create_topology())
    worker = next(w for w in cluster.workers("bp") if w.local.lazy)
    spouts = next(w for w in cluster.workers("bp") if not w.local.lazy)
    seen: list[int] = []

    def throttled() -> bool:
        seen.append(worker.queued())
        return bool(spouts.flow.congested) and len(SEEN) > 20
    wait_until(throttled, timeout=30)     # the bolt is slower: its worker throttles the spout
    passes = len(SEEN)
    # and what waits stays bounded while the bolt goes on: the wire stops feeding the queue
    # at twice the 1,800-tuple high watermark, and one pass takes in at most 3,200 tuples
    wait_until(lambda: seen.append(worker.queued()) or len(SEEN) > passes + 20, timeout=30)
    assert max(seen) <= 8000, max(seen)

    # one run of 1,900 tuples is one queue entry, and it alone is over the high watermark
    cluster.deactivate("bp")
    wait_until(lambda: worker.queued() == 0 and not worker.flow.congested, timeout=30)
    task = next(iter(worker.local.lazy))
    spout_task = cluster.get_topology("bp").tasks("lines")[0]
    overloaded: list[bool] = []

    def one_run() -> None:      # as the inbox delivers one untracked run from the wire
        worker.inbox.deliver(task, [[spout_task, "default", [1900, ["x"] * 1900], 0, None]])
        worker.flow.check(worker.clock.now)
        overloaded.append(worker.flow.overloaded)
    worker.call_on_loop(one_run)
    assert overloaded == [True]


class SplitLists(Bolt):
    """Emits each word as a list (``[w]``) with one emit_many per line, to two count tasks."""

    outputs = ["word"]

    def process(self, tup: Any) -> None:
        self.emit_many([[w] for w in tup["line"].split()])


class Shapes(Bolt):
    """Records the type of each tuple's values, read both ways."""

    lazy_batch = True

    def process_batch(self, tuples: TupleBatch) -> None:
        with LOCK:
            SEEN.extend(type(v) for v in tuples.values)
            SEEN.extend(type(t.values) for t in tuples)
            COUNTS.update(tuples.column("word"))


@pytest.mark.parametrize("workers", [1, 2])
def test_values_emitted_as_lists_arrive_as_tuples(workers: int) -> None:
    b = TopologyBuilder()
    b.set_spout("lines", Lines)
    b.set_bolt("split", SplitLists).shuffle_grouping("lines")
    b.set_bolt("count", Shapes, 2).fields_grouping("split", ["word"])
    complete_topology(b.create_topology(), {"lines": LINES},
                      conf={"topology.workers": workers, "topology.acker.executors": 0})
    assert COUNTS == _expected()
    assert set(SEEN) == {tuple}
