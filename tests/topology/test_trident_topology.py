"""Trident topologies in LocalCluster: exact counts, commits in txid order, replays."""
from __future__ import annotations

import json
import logging
import threading
import uuid
from collections import Counter
from typing import Any

import pytest

from squall import LocalCluster, LocalDRPC
from squall.errors import DRPCError
from squall.testing.waiting import wait_until
from squall.trident import (
    BatchSpout, Count, FixedBatchSpout, Function, MapFunction, MapGet, MemoryMapState,
    OpaqueEmitter, OpaquePartitionedSpout, PartitionCoordinator, StateUpdater, Sum,
    TransactionalEmitter, TransactionalSpout, TridentTopology,
)
from squall.trident.state import memory

SENTENCES = [["the cow jumped over the moon"], ["the man went to the store"],
             ["four score and seven years ago"], ["how many apples can you eat"],
             ["to be or not to be the person"], ["boom goes the dynamite"]]
CONF = {"topology.trident.batch.emit.interval.millis": 5, "topology.max.spout.pending": 3,
        "topology.message.timeout.secs": 20}

#: what the tests observe in the worker (LocalCluster runs in this process)
_LOCK = threading.Lock()
EMITTED: dict[str, list[tuple[int, list[list[Any]]]]] = {}
COMMITS: dict[str, list[int]] = {}
ARMED: set[str] = set()


class RecordingSpout(FixedBatchSpout):
    """A FixedBatchSpout that records every batch it emits, under its ``tag``."""

    tag = ""

    def emit_batch(self, txid: int, collector: Any) -> None:
        with _LOCK:
            EMITTED.setdefault(self.tag, []).append((txid, self.batch_for(txid)))
        super().emit_batch(txid, collector)


class Split(Function):
    """Splits sentences; raises on the word "boom" while the tag is armed (once)."""

    tag = ""

    def execute(self, tup: Any, collector: Any) -> None:
        for w in tup["sentence"].split():
            if w == "boom" and self.tag in ARMED:
                ARMED.discard(self.tag)
                raise RuntimeError("injected failure")
            collector.emit([w])


class RecordCommits(StateUpdater):
    tag = ""

    def update_state(self, state: Any, tuples: Any, collector: Any) -> None:
        with _LOCK:
            COMMITS.setdefault(self.tag, []).append(state.txid)


def _spout(tag: str, cycle: bool = False) -> RecordingSpout:
    spout = RecordingSpout(["sentence"], 2, SENTENCES, cycle=cycle)
    spout.tag = tag
    return spout


def _split(tag: str) -> Split:
    split = Split()
    split.tag = tag
    return split


def _expected() -> Counter[str]:
    return Counter(w for (s,) in SENTENCES for w in s.split())


def _stored(cluster: LocalCluster, name: str, state_id: str) -> dict[Any, Any]:
    """What the memory state ``state_id`` of topology ``name`` holds (its workers' stores)."""
    return memory.stored(cluster.workers(name)[0].memory_stores, state_id)


def _counts(cluster: LocalCluster, name: str, state_id: str) -> dict[str, int]:
    return {k[0]: v[1] for k, v in _stored(cluster, name, state_id).items()}


@pytest.fixture
def cluster() -> Any:
    with LocalCluster() as c:
        yield c


def test_word_count_exact_with_a_failed_batch_replayed(cluster: LocalCluster) -> None:
    tag = uuid.uuid4().hex
    ARMED.add(tag)
    t = TridentTopology()
    state = MemoryMapState.transactional(f"wc-{tag}")
    words = t.new_stream("sentences", _spout(tag)).each(["sentence"], _split(tag), ["word"])
    words.shuffle().parallelism_hint(2).group_by(["word"]).persistent_aggregate(
        state, Count(), ["count"]).parallelism_hint(3)
    updater = RecordCommits()
    updater.tag = tag
    t.new_stream("commits", _spout(tag + "-c")).partition_persist(
        MemoryMapState(), ["sentence"], updater)
    cluster.submit_topology("trident-wc", CONF, t.build())
    expected = _expected()
    wait_until(lambda: _counts(cluster, "trident-wc", f"wc-{tag}") == expected, timeout=60,
               message="exact word counts")
    # the failing batch (txid 3 holds "boom") was replayed with the same txid and rows
    with _LOCK:
        emitted = list(EMITTED[tag])
    third = [rows for txid, rows in emitted if txid == 3]
    assert len(third) >= 2 and all(rows == third[0] for rows in third)
    assert third[0] == SENTENCES[4:6]
    # every key stores the txid of the batch that last changed it (transactional layout)
    stored = _stored(cluster, "trident-wc", f"wc-{tag}")
    assert stored[("boom",)] == [3, 1]
    assert stored[("cow",)] == [1, 1]
    # commits of the other stream: in txid order with no gap, while batches overlapped
    wait_until(lambda: len(COMMITS.get(tag, [])) >= 6, timeout=60)
    with _LOCK:
        commits = list(COMMITS[tag])
    assert commits == list(range(1, len(commits) + 1))
    assert tag not in ARMED


class QueueSpout(BatchSpout):
    """Storm's usual batch spout: takes messages off a queue and keeps each txid's until
    ``ack`` says it committed (so a replay gets the same ones)."""

    outputs = ["msg"]
    tag = ""

    def open(self, conf: dict[str, Any], context: Any) -> None:
        self.queue = [f"m{i}" for i in range(6)]
        self.held: dict[int, list[str]] = {}

    def emit_batch(self, txid: int, collector: Any) -> None:
        if txid not in self.held:
            self.held[txid] = [self.queue.pop(0) for _ in range(min(2, len(self.queue)))]
        for msg in self.held[txid]:
            collector.emit([msg])

    def ack(self, txid: int) -> None:
        with _LOCK:
            EMITTED.setdefault(self.tag, []).append((txid, [["ack"]]))
        del self.held[txid]


class FailOneCommit(StateUpdater):
    """Records each committed message; the first commit of txid 2 raises."""

    tag = ""

    def update_state(self, state: Any, tuples: Any, collector: Any) -> None:
        with _LOCK:
            if state.txid == 2 and self.tag in ARMED:
                ARMED.discard(self.tag)
                raise RuntimeError("injected commit failure")
            EMITTED.setdefault(self.tag + "-msgs", []).extend(
                (state.txid, [[t["msg"]]]) for t in tuples)


def test_a_batch_spout_is_acked_only_after_its_commit_succeeded(cluster: LocalCluster) -> None:
    tag = uuid.uuid4().hex
    ARMED.add(tag)
    spout, updater = QueueSpout(), FailOneCommit()
    spout.tag = updater.tag = tag
    t = TridentTopology()
    t.new_stream("queue", spout).partition_persist(MemoryMapState(), ["msg"], updater)
    cluster.submit_topology("trident-ack", CONF, t.build())

    def committed() -> list[str]:
        with _LOCK:
            return sorted(rows[0][0] for _, rows in EMITTED.get(tag + "-msgs", []))

    wait_until(lambda: committed() == [f"m{i}" for i in range(6)], timeout=30,
               message=lambda: f"committed {committed()}")
    assert tag not in ARMED                         # the commit of txid 2 did fail once
    with _LOCK:
        acked = [txid for txid, _ in EMITTED[tag]]
    assert acked[:3] == [1, 2, 3]                   # each once, after its commit


class Pair(Function):
    """Emits each word's (length, first letter) pair as one tuple value."""

    def execute(self, tup: Any, collector: Any) -> None:
        for w in tup["sentence"].split():
            collector.emit([(len(w), w[0])])


def test_grouping_on_a_tuple_value_counts_alike_in_one_worker_and_across_two() -> None:
    want = Counter((len(w), w[0]) for (s,) in SENTENCES for w in s.split())
    for workers in (1, 2):
        tag = uuid.uuid4().hex
        t = TridentTopology()
        pairs = t.new_stream("sentences", _spout(tag)).each(["sentence"], Pair(), ["pair"])
        # the pairs cross to the other worker's aggregating tasks as lists
        pairs.shuffle().parallelism_hint(2).group_by(["pair"]).persistent_aggregate(
            MemoryMapState.transactional(f"pairs-{tag}"), Count(), ["count"]) \
            .parallelism_hint(2)
        with LocalCluster() as cluster:
            cluster.submit_topology("trident-pairs", {**CONF, "topology.workers": workers},
                                    t.build())
            wait_until(lambda: _counts(cluster, "trident-pairs", f"pairs-{tag}") == want,
                       timeout=60, message=lambda: f"{workers} workers: "
                       f"{_stored(cluster, 'trident-pairs', f'pairs-{tag}')}")
            assert not any(cluster.get_topology_info("trident-pairs")["errors"].values())


#: group keys Python finds equal (1, 1.0, True), which the fields grouping routes apart, and
#: a NaN, a new object (never equal to another) each time it crosses the serializer
ODD_KEYS: list[Any] = [float("nan"), 1, 1.0, True, "x"]
#: the last count each key's new value said, and the tasks that counted it, by (type name,
#: repr)
ODD_COUNTS: dict[str, dict[tuple[str, str], int]] = {}
ODD_TASKS: dict[str, dict[tuple[str, str], set[int]]] = {}


class OddKey(Function):
    def execute(self, tup: Any, collector: Any) -> None:
        collector.emit([ODD_KEYS[tup["sentence"]]])


class RecordCount(Function):
    tag = ""

    def prepare(self, conf: Any, context: Any) -> None:
        self.task = context.task_id

    def execute(self, tup: Any, collector: Any) -> None:
        key = (type(tup["k"]).__name__, repr(tup["k"]))
        with _LOCK:
            ODD_COUNTS.setdefault(self.tag, {})[key] = tup["count"]
            ODD_TASKS.setdefault(self.tag, {}).setdefault(key, set()).add(self.task)


def test_keys_count_as_the_fields_grouping_routes_them_when_rows_cross_the_serializer(
        ) -> None:
    tag = uuid.uuid4().hex
    record = RecordCount()
    record.tag = tag
    t = TridentTopology()
    spout = FixedBatchSpout(["sentence"], 2, [[i] for i in range(len(ODD_KEYS))] * 3)
    t.new_stream(f"odd-{tag}", spout).each(["sentence"], OddKey(), ["k"]).group_by(["k"]) \
        .persistent_aggregate(MemoryMapState.transactional(f"odd-{tag}"), Count(), ["count"]) \
        .parallelism_hint(3).new_values_stream().each(["k", "count"], record, [])
    want = {(type(k).__name__, repr(k)): 3 for k in ODD_KEYS}
    with LocalCluster() as cluster:
        cluster.submit_topology("trident-odd", {
            **CONF, "topology.testing.always.try.serialize": True}, t.build())

        def counts() -> dict[tuple[str, str], int]:
            with _LOCK:
                return dict(ODD_COUNTS.get(tag, {}))
        wait_until(lambda: counts() == want, timeout=30, message=lambda: f"{counts()}")
        assert not any(cluster.get_topology_info("trident-odd")["errors"].values())
    # each key on one partition, however a batch mixed them (1, 1.0 and True go to 3 tasks)
    with _LOCK:
        assert all(len(tasks) == 1 for tasks in ODD_TASKS[tag].values()), ODD_TASKS[tag]


class CountArgs(Function):
    def execute(self, tup: Any, collector: Any) -> None:
        for w in tup["args"].split():
            collector.emit([w])


def test_drpc_query_reads_the_counts(cluster: LocalCluster) -> None:
    tag = uuid.uuid4().hex
    with LocalDRPC({"drpc.request.timeout.secs": 60}) as drpc:
        t = TridentTopology()
        counts = (t.new_stream("sentences", _spout(tag))
                  .each(["sentence"], _split(tag), ["word"])
                  .group_by(["word"])
                  .persistent_aggregate(MemoryMapState(f"q-{tag}"), Count(), ["count"]))
        (t.new_drpc_stream("words", drpc)
         .each(["args"], CountArgs(), ["word"])
         .group_by(["word"])
         .state_query(counts, ["word"], MapGet(), ["count"])
         .aggregate(["count"], Sum(), ["sum"]))
        (t.new_drpc_stream("each", drpc)
         .each(["args"], CountArgs(), ["word"])
         .state_query(counts, ["word"], MapGet(), ["count"])
         .project(["word", "count"]))
        cluster.submit_topology("trident-drpc", CONF, t.build())
        expected = _expected()
        wait_until(lambda: _counts(cluster, "trident-drpc", f"q-{tag}") == expected, timeout=60)
        total = expected["the"] + expected["to"] + expected["cow"]
        assert json.loads(drpc.execute("words", "the to cow nosuchword")) == [[total]]
        assert json.loads(drpc.execute("each", "cow nosuchword")) == [
            ["cow", 1], ["nosuchword", None]]
        assert json.loads(drpc.execute("words", "")) == [[0]]


class Parse(Function):
    """An int for each word of the args; raises on a word that is not one."""

    def execute(self, tup: Any, collector: Any) -> None:
        for w in tup["args"].split():
            collector.emit([int(w), w.encode()])


def test_a_drpc_request_whose_batch_keeps_failing_fails_and_later_ones_are_served(
        cluster: LocalCluster) -> None:
    with LocalDRPC({"drpc.request.timeout.secs": 60}) as drpc:
        t = TridentTopology()
        t.new_drpc_stream("parse", drpc).each(["args"], Parse(), ["n", "raw"]) \
            .project(["n", "raw"])
        cluster.submit_topology("trident-drpc-fail", CONF, t.build())
        assert json.loads(drpc.execute("parse", "42")) == [[42, "b'42'"]]   # bytes as str
        with pytest.raises(DRPCError, match=r"parse\('oops'\) failed: its batch failed 3 times"):
            drpc.execute("parse", "oops")
        assert json.loads(drpc.execute("parse", "7 8")) == [[7, "b'7'"], [8, "b'8'"]]
        errors = cluster.get_topology_info("trident-drpc-fail")["errors"]
        assert any("invalid literal for int()" in e["error"] for v in errors.values() for e in v)


class Shout(MapFunction):
    def execute(self, tup: Any) -> Any:
        return tup["sentence"].upper()          # a str, not the row's values


class OneOfTwo(Function):
    def execute(self, tup: Any, collector: Any) -> None:
        collector.emit([1])                     # one value for two output fields


def test_an_operation_giving_the_wrong_values_fails_its_batch_with_a_clear_error(
        cluster: LocalCluster) -> None:
    t = TridentTopology()         # two spouts: two batch groups, each failing on its own
    t.new_stream("loud", _spout(uuid.uuid4().hex)).map(Shout(), ["loud"]) \
        .shuffle().partition_aggregate(Count(), ["n"])
    t.new_stream("pairs", _spout(uuid.uuid4().hex)).each(["sentence"], OneOfTwo(), ["a", "b"]) \
        .shuffle().partition_aggregate(Count(), ["n"])
    cluster.submit_topology("trident-width", CONF, t.build())

    def errors() -> list[str]:
        info = cluster.get_topology_info("trident-width")["errors"]
        return [e["error"].strip().splitlines()[-1] for v in info.values() for e in v]
    wait_until(lambda: any("Shout gave 'THE COW" in e for e in errors())
               and any("OneOfTwo gave 1 values for the 2 output fields ['a', 'b']" in e
                       for e in errors()), timeout=30, message=lambda: f"errors {errors()}")
    assert all(e.startswith("ValueError: ") for e in errors())


TRIES: Counter[str] = Counter()


class Poison(Function):
    """Fails every batch, counting the tries under its ``tag``."""

    tag = ""

    def execute(self, tup: Any, collector: Any) -> None:
        with _LOCK:
            TRIES[self.tag] += 1
        raise RuntimeError("poison")


def test_a_batch_failing_every_try_logs_a_few_warnings_not_two_a_retry(
        cluster: LocalCluster, caplog: pytest.LogCaptureFixture) -> None:
    # replayed for ever (as it should be), it logged two warnings a retry: the bolt's "batch
    # txid 1 failed" and the coordinator's "restarting it"
    caplog.set_level(logging.WARNING, logger="squall.trident")
    tag = uuid.uuid4().hex
    poison = Poison()
    poison.tag = tag
    t = TridentTopology()
    t.new_stream("poison", _spout(tag)).each(["sentence"], poison, ["x"])
    cluster.submit_topology("trident-poison", {**CONF, "topology.max.spout.pending": 1,
                                               "topology.error.throttle.interval.secs": 600},
                            t.build())
    wait_until(lambda: TRIES[tag] >= 30, timeout=30, message=lambda: f"tries {TRIES[tag]}")
    warned = [r.getMessage() for r in caplog.records if r.name.startswith("squall.trident")]
    failed = [m for m in warned if "batch txid 1 failed (it will be replayed)" in m]
    restarted = [m for m in warned if "batch of txid 1 failed; restarting it" in m]
    assert 1 <= len(failed) <= 3 and 1 <= len(restarted) <= 3, warned
    assert "more like it: counted, one line every 600 s" in failed[-1], failed


def test_drpc_request_nobody_serves_times_out() -> None:
    with LocalDRPC({"drpc.request.timeout.secs": 0.2}) as drpc:
        with pytest.raises(DRPCError, match="timed out after 0.2 s"):
            drpc.execute("nothing", "x")


def test_word_count_exact_across_two_workers(cluster: LocalCluster) -> None:
    tag = uuid.uuid4().hex
    ARMED.add(tag)
    t = TridentTopology()
    (t.new_stream("sentences", _spout(tag)).shuffle().parallelism_hint(3)
     .each(["sentence"], _split(tag), ["word"])
     .group_by(["word"])
     .persistent_aggregate(MemoryMapState(f"w2-{tag}"), Count(), ["count"])
     .parallelism_hint(2))
    cluster.submit_topology("trident-2w", {**CONF, "topology.workers": 2,
                                           "topology.acker.executors": 2}, t.build())
    wait_until(lambda: _counts(cluster, "trident-2w", f"w2-{tag}") == _expected(), timeout=60,
               message="exact word counts across two workers")
    assert tag not in ARMED


# -- a transactional partitioned spout ------------------------------------------------------

PARTITIONS = {"p0": [s for (s,) in SENTENCES[0::2]], "p1": [s for (s,) in SENTENCES[1::2]]}
REPLAYS: dict[str, list[tuple[int, str, Any]]] = {}


class ListCoordinator:
    def get_partitions_for_batch(self) -> Any:
        return sorted(PARTITIONS)

    def is_ready(self, txid: int) -> bool:
        return True

    def close(self) -> None:
        pass


class ListEmitter(TransactionalEmitter):
    """Batches of two sentences of a partition; metadata: the [start, end) range."""

    def __init__(self, tag: str) -> None:
        self.tag = tag

    def emit_partition_batch_new(self, txid: int, collector: Any, partition: Any,
                                 last_partition_meta: Any) -> Any:
        start = last_partition_meta["end"] if last_partition_meta else 0
        meta = {"start": start, "end": min(start + 2, len(PARTITIONS[partition]))}
        self.emit_partition_batch(txid, collector, partition, meta, replay=False)
        return meta

    def emit_partition_batch(self, txid: int, collector: Any, partition: Any,
                             partition_meta: Any, replay: bool = True) -> None:
        if replay:
            with _LOCK:
                REPLAYS.setdefault(self.tag, []).append((txid, partition, partition_meta))
        for s in PARTITIONS[partition][partition_meta["start"]:partition_meta["end"]]:
            collector.emit([s])


class ListSpout(TransactionalSpout):
    outputs = ["sentence"]
    tag = ""

    def get_coordinator(self, conf: dict[str, Any], context: Any) -> Any:
        return ListCoordinator()

    def get_emitter(self, conf: dict[str, Any], context: Any) -> Any:
        return ListEmitter(self.tag)


def test_transactional_partitioned_spout_replays_the_same_partition_batches(
        cluster: LocalCluster) -> None:
    tag = uuid.uuid4().hex
    ARMED.add(tag)
    spout = ListSpout()
    spout.tag = tag
    t = TridentTopology()
    (t.new_stream("parts", spout).parallelism_hint(2)
     .each(["sentence"], _split(tag), ["word"])
     .group_by(["word"])
     .persistent_aggregate(MemoryMapState(f"tp-{tag}"), Count(), ["count"]))
    cluster.submit_topology("trident-partitioned", CONF, t.build())
    wait_until(lambda: _counts(cluster, "trident-partitioned", f"tp-{tag}") == _expected(),
               timeout=60,
               message="exact counts from a partitioned spout in two tasks")
    assert tag not in ARMED
    # "boom" is in p1's second batch: that txid was replayed from its kept metadata
    with _LOCK:
        replays = list(REPLAYS[tag])
    assert ("p1", {"start": 2, "end": 3}) in [(p, m) for _, p, m in replays]


# -- an opaque partitioned spout whose partitions move between its tasks --------------------

MOVING_ROWS = 40
#: the coordinator adds a partition every other batch until this many (txid 20)
MOVES = 10
#: by tag: the first txid after the last move at which each partition was read to its end,
#: and the last txid that succeeded (seen by the emitters)
MOVED_DONE: dict[str, dict[str, int]] = {}
MOVED_SUCCEEDED: dict[str, int] = {}


class GrowingCoordinator(PartitionCoordinator):
    """p1 and p2, and one more (empty) partition every other batch, up to :data:`MOVES`: each
    sorts before p1 and p2, so the two change task every other batch."""

    def __init__(self) -> None:
        self.batches = 0

    def get_partitions_for_batch(self) -> Any:
        self.batches += 1
        return ["p1", "p2"] + [f"a{k}" for k in range(min(self.batches // 2, MOVES))]


class RangeEmitter(OpaqueEmitter):
    """Two rows of a partition after the previous batch's; metadata: the [start, end) range."""

    def __init__(self, tag: str) -> None:
        self.tag = tag

    def get_ordered_partitions(self, all_partition_info: Any) -> list[Any]:
        return sorted(all_partition_info)

    def emit_partition_batch(self, txid: int, collector: Any, partition: Any,
                             last_partition_meta: Any) -> Any:
        start = last_partition_meta["end"] if last_partition_meta else 0
        end = start if partition.startswith("a") else min(start + 2, MOVING_ROWS)
        for _ in range(start, end):
            collector.emit([partition])
        if start == MOVING_ROWS and txid > 2 * MOVES:
            with _LOCK:
                MOVED_DONE.setdefault(self.tag, {}).setdefault(partition, txid)
        return {"start": start, "end": end}

    def success(self, txid: int) -> None:
        with _LOCK:
            MOVED_SUCCEEDED[self.tag] = max(MOVED_SUCCEEDED.get(self.tag, 0), txid)


class MovingSpout(OpaquePartitionedSpout):
    outputs = ["part"]
    tag = ""

    def get_coordinator(self, conf: dict[str, Any], context: Any) -> Any:
        return GrowingCoordinator()

    def get_emitter(self, conf: dict[str, Any], context: Any) -> Any:
        return RangeEmitter(self.tag)


def test_an_opaque_spout_counts_once_while_its_partitions_move_between_tasks(
        cluster: LocalCluster) -> None:
    """A partition's new task continues after the batches its old task emitted (it used to
    start after the last committed one, reading again the rows of the batches in flight)."""
    tag = uuid.uuid4().hex
    spout = MovingSpout()
    spout.tag = tag
    t = TridentTopology()
    (t.new_stream("moving", spout).parallelism_hint(2)
     .group_by(["part"])
     .persistent_aggregate(MemoryMapState.opaque(f"mv-{tag}"), Count(), ["count"]))
    # no interval: batches are in flight whenever a partition moves
    cluster.submit_topology("trident-moving", {**CONF, "topology.max.spout.pending": 5,
                                               "topology.trident.batch.emit.interval.millis":
                                               0}, t.build())

    def finished() -> bool:
        # both partitions read to their end after the last move, and that batch committed
        with _LOCK:
            done = MOVED_DONE.get(tag, {})
            return len(done) == 2 and MOVED_SUCCEEDED.get(tag, 0) >= max(done.values())
    wait_until(finished, timeout=60, message=lambda: f"read to the end: {MOVED_DONE.get(tag)}")
    counts = {k[0]: v[2] for k, v in _stored(cluster, "trident-moving", f"mv-{tag}").items()}
    assert counts == {"p1": MOVING_ROWS, "p2": MOVING_ROWS}


def test_a_trident_topology_without_ackers_is_refused(cluster: LocalCluster) -> None:
    from squall import TopologyError
    t = TridentTopology()
    t.new_stream("s", _spout("noack")).partition_persist(MemoryMapState(), ["sentence"],
                                                         RecordCommits())
    with pytest.raises(TopologyError, match="needs ackers"):
        cluster.submit_topology("noack", {"topology.acker.executors": 0}, t.build())


class FailOnceOn(Function):
    """Emits [1] per tuple, raising once for the tag's first tuple (ARMED)."""
    tag = ""

    def execute(self, tup: Any, collector: Any) -> None:
        with _LOCK:
            armed = self.tag in ARMED
            ARMED.discard(self.tag)
        if armed:
            raise RuntimeError("injected failure, once")
        collector.emit([1])


@pytest.mark.parametrize("pending", [1, 4])
def test_a_failure_after_a_state_replays_once_and_the_chained_state_commits(
        cluster: LocalCluster, pending: int) -> None:
    """A state fed by another state's new values commits in the same commit: an attempt of
    it that failed once gave way to the next attempt (the topology had stopped committing,
    every later attempt of that txid failing at its commit)."""
    tag = uuid.uuid4().hex
    ARMED.add(tag)
    words = [[w] for (s,) in SENTENCES for w in s.split()]
    t = TridentTopology()
    counts = t.new_stream("w", FixedBatchSpout(["word"], 4, words)).group_by(
        ["word"]).persistent_aggregate(MemoryMapState(f"first-{tag}"), Count(), ["count"])
    fail_once = FailOnceOn()
    fail_once.tag = tag
    counts.new_values_stream().each(["word"], fail_once, ["one"]).group_by(
        ["word"]).persistent_aggregate(MemoryMapState(f"second-{tag}"), Count(), ["n"])
    cluster.submit_topology(f"chained-{pending}", {**CONF, "topology.max.spout.pending":
                                                   pending}, t.build())
    expected = Counter(w for (w,) in words)
    name = f"chained-{pending}"
    wait_until(lambda: _counts(cluster, name, f"first-{tag}") == expected, timeout=60,
               message=lambda: f"first state {_counts(cluster, name, f'first-{tag}')}")
    # the second counts the batches that changed each word's count, the failed one once
    changed = Counter(w for i in range(0, len(words), 4) for (w,) in
                      {tuple(r) for r in words[i:i + 4]})
    wait_until(lambda: _counts(cluster, name, f"second-{tag}") == changed, timeout=30,
               message=lambda: f"second state {_counts(cluster, name, f'second-{tag}')}")
    assert tag not in ARMED


class SplitSentence(Function):
    """API.md's Split, as written there: it reads ``tup["sentence"]``."""

    def execute(self, tup: Any, collector: Any) -> None:
        for w in tup["sentence"].split():
            collector.emit([w])


def test_the_contracts_example_serves_drpc_with_one_split_for_both_streams(
        cluster: LocalCluster, caplog: pytest.LogCaptureFixture) -> None:
    # the same Split reads "sentence" on the spout's stream and "args" on the DRPC stream:
    # every request failed its batch with KeyError ("no field 'sentence' ... ['args']")
    tag = uuid.uuid4().hex
    with LocalDRPC({"drpc.request.timeout.secs": 60}) as drpc:
        t = TridentTopology()
        counts = (t.new_stream("sentences", _spout(tag))
                  .each(["sentence"], SplitSentence(), ["word"])
                  .group_by(["word"])
                  .persistent_aggregate(MemoryMapState(f"api-{tag}"), Count(), ["count"]))
        t.new_drpc_stream("count", drpc).each(["args"], SplitSentence(), ["word"]) \
            .group_by(["word"]) \
            .state_query(counts, ["word"], MapGet(), ["count"]).aggregate(["count"], Sum(), ["sum"])
        cluster.submit_topology("api-example", CONF, t.build())
        expected = _expected()
        wait_until(lambda: _counts(cluster, "api-example", f"api-{tag}") == expected, timeout=60)
        assert json.loads(drpc.execute("count", "the cow")) == [
            [expected["the"] + expected["cow"]]]
    said = [r.getMessage() for r in caplog.records if "whose one field is 'args'" in
            r.getMessage()]
    assert len(said) == 1, said


def test_a_field_an_input_of_several_fields_lacks_is_still_a_key_error() -> None:
    from squall.trident.tuple import TridentTuple
    tup = TridentTuple(("a", 1), {"word": 0, "n": 1})
    with pytest.raises(KeyError, match="no field 'sentence'.*fields: \\['word', 'n'\\]"):
        tup["sentence"]
    assert TridentTuple(("a b",), {"args": 0})["sentence"] == "a b"


#: tag -> the txids an AckedSpout was told every state wrote
ACKED_TXIDS: dict[str, set[int]] = {}


class AckedSpout(FixedBatchSpout):
    tag = ""

    def ack(self, txid: int) -> None:
        with _LOCK:
            ACKED_TXIDS.setdefault(self.tag, set()).add(txid)


def _acked_count(state_id: str) -> tuple[str, Any]:
    """A tag and a Trident word count of SENTENCES from an :class:`AckedSpout` with that tag
    into ``MemoryMapState(state_id)``, built."""
    tag = uuid.uuid4().hex
    spout = AckedSpout(["sentence"], 2, SENTENCES)
    spout.tag = tag
    t = TridentTopology()
    (t.new_stream("sentences", spout)
     .each(["sentence"], SplitSentence(), ["word"])
     .group_by(["word"])
     .persistent_aggregate(MemoryMapState(state_id), Count(), ["count"]))
    return tag, t.build()


def test_a_memory_state_goes_with_its_topology_and_its_local_cluster() -> None:
    """A MemoryMapState lives as long as its topology in its LocalCluster: in another
    topology after its kill, and in a second LocalCluster of the process, the same state id
    starts from nothing (the process kept it: the counts doubled), and a kill drops it."""
    state_id = f"again-{uuid.uuid4().hex}"
    batches = set(range(1, (len(SENTENCES) + 1) // 2 + 1))
    for _ in range(2):
        with LocalCluster() as cluster:
            for name in ("again-1", "again-2"):
                tag, topology = _acked_count(state_id)
                cluster.submit_topology(name, CONF, topology)
                wait_until(lambda tag=tag: batches <= ACKED_TXIDS.get(tag, set()), timeout=60,
                           message="not every batch committed")
                assert _counts(cluster, name, state_id) == _expected()
                stores = cluster.workers(name)[0].memory_stores
                cluster.kill_topology(name)
                assert memory.stored(stores, state_id) == {}


def test_a_topology_of_memory_states_submitted_again_under_its_name_starts_afresh() -> None:
    """Its memory states die with it, so the kill drops what its coordinator kept: the next
    run under the same name starts at txid 1 and counts its spout's batches again."""
    name = f"resubmit-{uuid.uuid4().hex[:8]}"
    batches = set(range(1, (len(SENTENCES) + 1) // 2 + 1))
    with LocalCluster() as cluster:
        for run in range(2):
            state_id = f"m-{uuid.uuid4().hex}"
            tag, topology = _acked_count(state_id)
            cluster.submit_topology(name, CONF, topology)
            wait_until(lambda tag=tag: ACKED_TXIDS.get(tag), timeout=60,
                       message=f"run {run}: no batch committed")
            assert min(ACKED_TXIDS[tag]) == 1, f"run {run} did not start at txid 1"
            wait_until(lambda tag=tag: batches <= ACKED_TXIDS.get(tag, set()), timeout=60,
                       message=f"run {run}: not every batch committed")
            assert _counts(cluster, name, state_id) == _expected()
            assert cluster.state.store.exists(f"/trident/{name}")
            cluster.kill_topology(name)
            assert not cluster.state.store.exists(f"/trident/{name}")
