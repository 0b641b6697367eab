"""Every kind of Trident operation in LocalCluster, on one batch of two spouts sharing a
coordinator: the rows each one outputs."""
from __future__ import annotations

import threading
import uuid
from collections import Counter
from typing import Any

from squall import LocalCluster
from squall.testing.waiting import wait_until
from squall.trident import (
    Aggregator, Consumer, Count, Filter, FixedBatchSpout, FlatMapFunction, MapFunction,
    MemoryMapState, ReducerAggregator, StateUpdater, TridentTopology,
)

_LOCK = threading.Lock()
SEEN: dict[str, list[tuple[Any, ...]]] = {}


class Record(Consumer):
    def __init__(self, tag: str, name: str) -> None:
        self.key = f"{tag}:{name}"

    def accept(self, tup: Any) -> None:
        with _LOCK:
            SEEN.setdefault(self.key, []).append(tuple(tup.values))


class Commits(StateUpdater):
    def __init__(self, tag: str) -> None:
        self.key = f"{tag}:commits"

    def update_state(self, state: Any, tuples: Any, collector: Any) -> None:
        with _LOCK:
            SEEN.setdefault(self.key, []).append((state.txid,))


class Written(StateUpdater):
    """Records the rows it is given to write, under ``name``."""

    def __init__(self, tag: str, name: str) -> None:
        self.key = f"{tag}:{name}"

    def update_state(self, state: Any, tuples: Any, collector: Any) -> None:
        with _LOCK:
            SEEN.setdefault(self.key, []).extend(tuple(t.values) for t in tuples)


class Upper(MapFunction):
    def execute(self, tup: Any) -> Any:
        return [tup["x"].upper()]


class Twice(FlatMapFunction):
    def execute(self, tup: Any) -> Any:
        return [[tup["x"]], [tup["x"]]]


class NotB(Filter):
    def is_keep(self, tup: Any) -> bool:
        return bool(tup["x"] != "b")


class Concat(ReducerAggregator):
    def init(self) -> str:
        return ""

    def reduce(self, curr: str, tup: Any) -> str:
        return curr + tup["x"]


class FirstLast(Aggregator):
    def init(self, batch_id: Any, collector: Any) -> list[str]:
        return []

    def aggregate(self, state: list[str], tup: Any, collector: Any) -> None:
        state.append(tup["x"])

    def complete(self, state: list[str], collector: Any) -> None:
        if state:
            collector.emit([min(state), max(state)])


def test_operations_on_a_batch() -> None:
    tag = uuid.uuid4().hex
    t = TridentTopology()
    s1 = t.new_stream("a", FixedBatchSpout(["k", "x"], 10, [[1, "a"], [2, "b"], [1, "c"]]))
    s2 = t.new_stream("b", FixedBatchSpout(["k2", "y"], 10, [[1, "p"], [3, "q"]]))

    def rec(stream: Any, name: str) -> None:
        stream.peek(Record(tag, name))
    rec(t.join(s1, ["k"], s2, ["k2"], ["k", "x", "y"]), "join")
    rec(t.join(s1, ["k"], s1, ["k"], ["k", "x", "x2"]), "self-join")
    rec(t.merge(s1.project(["x"]), s2.project(["y"]), s1.map(Upper(), ["X"])), "merge")
    rec(s1.map(Upper(), ["X"]), "map")
    rec(s1.flat_map(Twice(), ["x"]), "flat_map")
    rec(s1.filter(["x"], NotB()), "filter")
    rec(s1.each(["x"], NotB()), "each-filter")
    rec(s1.group_by(["k"]).aggregate(["x"], Concat(), ["xs"]), "grouped-reducer")
    rec(s1.aggregate(["x"], FirstLast(), ["first", "last"]), "aggregator")
    rec(s1.broadcast().parallelism_hint(2).partition_aggregate(Count(), ["n"]), "broadcast")
    rec(s1.shuffle().parallelism_hint(2).global_().partition_aggregate(Count(), ["n"]),
        "global")
    rec(s1.batch_global().parallelism_hint(2).partition_aggregate(Count(), ["n"]),
        "batch_global")
    rec(s1.group_by(["k"]).partition_aggregate(["x"], Concat(), ["xs"]), "partition-grouped")
    rec(s1.group_by(["k"]).persistent_aggregate(MemoryMapState(), Count(), ["c"])
        .new_values_stream(), "new-values")
    moved = s1.group_by(["k"]).persistent_aggregate(MemoryMapState(), Count(), ["c"])
    rec(t.new_values_stream(moved).global_(), "new-values-moved")
    # a write of what a write put out, in the same bolt
    s1.group_by(["k"]).persistent_aggregate(MemoryMapState(), Count(), ["c"]) \
        .new_values_stream().partition_persist(MemoryMapState(), ["k", "c"],
                                               Written(tag, "new-values-written"))
    s1.partition_persist(MemoryMapState(), ["k"], Commits(tag))
    expected = {
        "join": Counter([(1, "a", "p"), (1, "c", "p")]),
        "self-join": Counter([(1, "a", "a"), (1, "a", "c"), (1, "c", "a"), (1, "c", "c"),
                              (2, "b", "b")]),
        "merge": Counter([("a",), ("b",), ("c",), ("p",), ("q",), ("A",), ("B",), ("C",)]),
        "map": Counter([("A",), ("B",), ("C",)]),
        "flat_map": Counter([("a",), ("a",), ("b",), ("b",), ("c",), ("c",)]),
        "filter": Counter([(1, "a"), (1, "c")]),
        "each-filter": Counter([(1, "a"), (1, "c")]),
        "grouped-reducer": Counter([(1, "ac"), (2, "b")]),
        # an Aggregator runs once per batch even when it is empty: only batch 1 has rows
        "aggregator": Counter([("a", "c")]),
        "broadcast": Counter([(3,), (3,)]),
        "global": Counter([(3,)]),
        "batch_global": Counter([(3,)]),
        "partition-grouped": Counter([(1, "ac"), (2, "b")]),
        "new-values": Counter([(1, 2), (2, 1)]),
        # made at commit, they travel to another bolt inside the commit
        "new-values-moved": Counter([(1, 2), (2, 1)]),
        "new-values-written": Counter([(1, 2), (2, 1)]),
    }

    def seen() -> dict[str, Counter[tuple[Any, ...]]]:
        with _LOCK:
            return {name: Counter(rows) for name in expected
                    for rows in [[r for r in SEEN.get(f"{tag}:{name}", [])
                                  if r not in ((0,),)]]}
    with LocalCluster() as cluster:
        cluster.submit_topology("ops", {"topology.trident.batch.emit.interval.millis": 5},
                                t.build())
        wait_until(lambda: seen() == expected, timeout=60,
                   message=lambda: f"operation outputs: {seen()}")
        # the batches after it commit too, in order (every commit tree completes)
        wait_until(lambda: len(SEEN.get(f"{tag}:commits", [])) >= 5, timeout=60)
        with _LOCK:
            commits = [txid for (txid,) in SEEN[f"{tag}:commits"]]
        assert commits == list(range(1, len(commits) + 1))
        assert not any(cluster.get_topology_info("ops")["errors"].values())


class BatchCount(Aggregator):
    """Counts a batch's rows, emitting ``(txid, count)``."""

    def init(self, batch_id: Any, collector: Any) -> list[int]:
        return [batch_id, 0]

    def aggregate(self, state: list[int], tup: Any, collector: Any) -> None:
        state[1] += 1

    def complete(self, state: list[int], collector: Any) -> None:
        collector.emit(state)


class ByTxid(StateUpdater):
    """Records ``(txid, row)`` for every row it is given to write, under ``name``."""

    def __init__(self, tag: str, name: str) -> None:
        self.key = f"{tag}:{name}"

    def update_state(self, state: Any, tuples: Any, collector: Any) -> None:
        with _LOCK:
            SEEN.setdefault(self.key, []).extend((state.txid, tuple(t.values))
                                                 for t in tuples)


def test_an_aggregate_gives_one_row_per_batch_whatever_its_parallelism() -> None:
    """An ungrouped aggregate over several tasks: each batch (3, 3 and 1 rows, then empty
    ones) has one result row, not one per task."""
    tag = uuid.uuid4().hex
    t = TridentTopology()
    s = t.new_stream("w", FixedBatchSpout(["w"], 3, [[w] for w in "abacabd"]))
    s.aggregate(BatchCount(), ["txid", "n"]).parallelism_hint(3).peek(Record(tag, "agg"))
    s.aggregate(Count(), ["n"]).parallelism_hint(2) \
        .partition_persist(MemoryMapState(), ["n"], ByTxid(tag, "count"))

    def per_txid(name: str) -> dict[int, list[tuple[Any, ...]]]:
        with _LOCK:
            rows = list(SEEN.get(f"{tag}:{name}", []))
        out: dict[int, list[tuple[Any, ...]]] = {}
        for r in rows:
            out.setdefault(r[0], []).append(r[1:] if name == "agg" else r[1])
        return out
    with LocalCluster() as cluster:
        cluster.submit_topology("agg", {"topology.trident.batch.emit.interval.millis": 5},
                                t.build())
        wait_until(lambda: {1, 2, 3, 4, 5, 6} <= set(per_txid("agg"))
                   and {1, 2, 3, 4, 5, 6} <= set(per_txid("count")), timeout=60,
                   message=lambda: f"rows: {per_txid('agg')} {per_txid('count')}")
        agg, count = per_txid("agg"), per_txid("count")
        assert [agg[txid] for txid in range(1, 7)] == [[(3,)], [(3,)], [(1,)], [(0,)],
                                                       [(0,)], [(0,)]]
        assert [count[txid] for txid in range(1, 7)] == [[(3,)], [(3,)], [(1,)], [(0,)],
                                                         [(0,)], [(0,)]]
        assert not any(cluster.get_topology_info("agg")["errors"].values())
