"""TridentTopology.build(): the topology it compiles to and the errors it gives."""
from __future__ import annotations

from typing import Any

import pytest

from squall import LocalDRPC, TopologyError
from squall.trident import (
    Count, FixedBatchSpout, Function, MapFunction, MapGet, Max, MemoryMapState, Min,
    RedisMapState, StateUpdater, Sum, TridentTopology,
)
from squall.trident.runtime.evaluate import Evaluator


class Split(Function):
    def execute(self, tup: Any, collector: Any) -> None:
        for w in tup[0].split():
            collector.emit([w])


class Same(MapFunction):
    def execute(self, tup: Any) -> Any:
        return tup.values


def _spout() -> FixedBatchSpout:
    return FixedBatchSpout(["sentence"], 2, [["a b"], ["b c"]])


def test_a_chain_of_operations_is_one_bolt_and_grouping_starts_another() -> None:
    t = TridentTopology()
    (t.new_stream("s", _spout()).each(["sentence"], Split(), ["word"])
     .group_by(["word"]).persistent_aggregate(MemoryMapState(), Count(), ["count"])
     .parallelism_hint(3))
    topo = t.build()
    assert sorted(topo.components) == ["$mastercoord-bg0", "b-1", "spout-s"]
    assert topo.components["b-1"].parallelism == 3
    kinds = {(i.component, i.stream, i.grouping) for i in topo.components["b-1"].inputs}
    assert kinds == {("spout-s", "$e0", "direct"), ("$mastercoord-bg0", "$commit", "all")}
    assert topo.to_json()           # travels as JSON: no object is pickled


def test_a_drpc_stream_ends_in_a_return_bolt() -> None:
    with LocalDRPC() as drpc:
        t = TridentTopology()
        counts = t.new_stream("s", _spout()).group_by(["sentence"]).persistent_aggregate(
            MemoryMapState(), Count(), ["count"])
        t.new_drpc_stream("f", drpc).state_query(counts, ["args"], MapGet(), ["count"]) \
            .aggregate(["count"], Sum(), ["sum"])
        topo = t.build()
    # a coordinator per batch group; the DRPC stream's aggregate (b-3) and return (b-4)
    assert sorted(topo.components) == ["$mastercoord-bg0", "$mastercoord-bg1", "b-1", "b-3",
                                       "b-4", "spout-drpc-f", "spout-s"]
    assert topo.components["b-4"].config["trident.plan"]["nodes"][-1]["kind"] == "return"


def test_each_coordinator_says_whether_a_state_of_its_batch_group_outlives_the_topology(
        ) -> None:
    """What a batch group's coordinator keeps survives a kill only when one of the group's
    states does (Redis), not when they all die with the topology (memory, or none)."""
    t = TridentTopology()
    t.new_stream("mem", _spout()).group_by(["sentence"]).persistent_aggregate(
        MemoryMapState(), Count(), ["count"])
    t.new_stream("both", _spout()).group_by(["sentence"]).persistent_aggregate(
        MemoryMapState(), Count(), ["count"]).new_values_stream().global_() \
        .persistent_aggregate(RedisMapState(key_prefix="p:"), Count(), ["n"])
    t.new_stream("none", _spout()).each(["sentence"], Split(), ["word"])
    coords = {c.config["trident.coordinator"]["key"]: c.config["trident.coordinator"]
              for name, c in t.build().components.items() if name.startswith("$mastercoord")}
    assert {k: (c["streams"], c["outlives"]) for k, c in coords.items()} == {
        "mem": (["mem"], False), "both": (["both"], True), "none": (["none"], False)}


class Local(Function):
    pass


@pytest.mark.parametrize("make, message", [
    (lambda t: t.new_stream("s", _spout()).each(["nope"], Split(), ["w"]), "no field 'nope'"),
    (lambda t: t.new_stream("s", _spout()).each(["sentence"], Split(), ["sentence"]),
     "repeat a field"),
    (lambda t: t.new_stream("s", _spout()).parallelism_hint(2), "runs in one task"),
    (lambda t: t.new_stream("s", _spout()).group_by(["sentence"]).aggregate(
        Count(), ["a", "b"]), "one output field"),
    (lambda t: t.new_drpc_stream("f", object()), "expected a LocalDRPC"),
    (lambda t: t.new_drpc_stream(None), "DRPC function name"),
    (lambda t: t.new_stream("s", _spout()).map(Same(), ["a", "a"]), r"\['a'\] appear twice"),
    (lambda t: t.new_stream("s", _spout()).group_by(["sentence"]).persistent_aggregate(
        MemoryMapState(), Count(), ["sentence"]), r"\['sentence'\] appear twice"),
    (lambda t: t.new_stream("s", _spout()).group_by(["sentence"]).persistent_aggregate(
        MemoryMapState(), Sum(), ["total"]), r"Sum reads 1 input field\(s\), got \[\]"),
    (lambda t: t.new_stream("s", _spout()).aggregate(Max(), ["m"]), "Max reads 1 input"),
    (lambda t: t.new_stream("s", _spout()).partition_aggregate(Min(), ["m"]),
     "Min reads 1 input"),
    (lambda t: t.join(t.new_stream("s", _spout()), ["sentence"], "x", ["sentence"], ["a"]),
     "s1 and s2 must be streams"),
    (lambda t: t.merge(t.new_stream("s", _spout()),
                       TridentTopology().new_stream("o", _spout())),
     "a stream of another TridentTopology"),
])
def test_bad_declarations_fail_with_a_clear_error(make: Any, message: str) -> None:
    t = TridentTopology()
    with pytest.raises(TopologyError, match=message):
        make(t)
        t.build()


class Keep(StateUpdater):
    def update_state(self, state: Any, tuples: Any, collector: Any) -> None:
        pass


def _words(t: TridentTopology) -> Any:
    return t.new_stream("s", FixedBatchSpout(["word", "n"], 2, [["a", 1]]))


@pytest.mark.parametrize("first, second", [
    (MemoryMapState("stats"), MemoryMapState("stats")),
    (MemoryMapState.opaque("stats"), MemoryMapState.non_transactional("stats")),
])
def test_two_states_in_one_memory_map_are_refused(first: Any, second: Any) -> None:
    # Count and Sum with MemoryMapState("stats") shared one map: the sums read the counts
    t = TridentTopology()
    words = _words(t)
    counts = words.group_by(["word"]).persistent_aggregate(first, Count(), ["count"])
    with pytest.raises(TopologyError, match="persistent_aggregate: MemoryMapState 'stats' "
                       "already holds the state of an earlier persistent_aggregate"):
        words.group_by(["word"]).persistent_aggregate(second, ["n"], Sum(), ["total"])
    with pytest.raises(TopologyError, match="partition_persist: MemoryMapState 'stats'"):
        words.partition_persist(second, ["word"], Keep())
    # the state itself is read from anywhere: state_query takes what persist returned
    words.group_by(["word"]).state_query(counts, ["word"], MapGet(), ["c"])
    t.build()


def test_one_memory_state_factory_twice_is_two_states_in_one_map_too() -> None:
    t = TridentTopology()
    state = MemoryMapState()            # an id of its own, made up: both would have it
    words = _words(t)
    words.partition_persist(state, ["word"], Keep())
    with pytest.raises(TopologyError, match="earlier partition_persist"):
        words.group_by(["word"]).persistent_aggregate(state, Count(), ["count"])
    words.group_by(["word"]).persistent_aggregate(MemoryMapState(), Count(), ["count"])
    words.group_by(["word"]).persistent_aggregate(MemoryMapState("x"), ["n"], Sum(), ["t"])
    t.build()


def test_redis_states_are_refused_a_key_prefix_only_where_their_keys_are_the_same() -> None:
    t = TridentTopology()
    words = _words(t)
    words.group_by(["word"]).persistent_aggregate(RedisMapState(), Count(), ["count"])
    with pytest.raises(TopologyError, match=r"RedisMapState at 127.0.0.1:6379 db 0 with "
                       r"key_prefix 'trident:' already holds .* by \['word'\]"):
        words.group_by(["word"]).persistent_aggregate(RedisMapState.opaque(), ["n"], Sum(),
                                                       ["total"])
    # other keys ([word, n] pairs, what an updater writes), another prefix, db or server
    words.group_by(["word", "n"]).persistent_aggregate(RedisMapState(), Count(), ["count"])
    words.partition_persist(RedisMapState(), ["word"], Keep())
    for other in (RedisMapState(key_prefix="lengths:"), RedisMapState(db=1),
                  RedisMapState(port=6380)):
        words.group_by(["word"]).persistent_aggregate(other, ["n"], Sum(), ["total"])
    t.build()


def test_an_operation_that_cannot_travel_is_refused_at_build() -> None:
    class Inner(Function):
        def execute(self, tup: Any, collector: Any) -> None: ...
    t = TridentTopology()
    t.new_stream("s", _spout()).each(["sentence"], Inner(), ["w"])
    with pytest.raises(TopologyError, match="define Trident operations at module level"):
        t.build()


def test_join_and_merge_of_one_batch() -> None:
    t = TridentTopology()
    s1 = t.new_stream("a", FixedBatchSpout(["k", "x"], 5, []))
    s2 = t.new_stream("b", FixedBatchSpout(["y", "k"], 5, []))
    joined = t.join(s1, ["k"], s2, ["k"], ["k", "x", "y"])
    plan = t.build().components["b-2"].config["trident.plan"]
    ev = Evaluator(plan["nodes"], lambda meta, rows: None)
    rows: dict[int, Any] = {}
    ev.process(rows, {joined.node.id: [[(1, "a"), (2, "b"), (1, "c")], [("p", 1), ("q", 3)]]},
               1, {}, {})
    assert rows[joined.node.id] == [(1, "a", "p"), (1, "c", "p")]


@pytest.mark.parametrize("left, right, joined", [
    # one side's keys plain floats, the other's with a 0.0, a NaN, an int, ...
    ([(1.5, "a")], [(1.5, "p"), (0.0, "z")], [(1.5, "a", "p")]),
    ([(2.5, "a")], [(2.5, "p"), (float("nan"), "z")], [(2.5, "a", "p")]),
    ([(1.5, "a")], [(1.5, "p"), (2, "z")], [(1.5, "a", "p")]),
    ([(1.5, "a"), (0.0, "b")], [(1.5, "p")], [(1.5, "a", "p")]),
    # True and 1 are two keys (routed apart), each found on the other side
    ([(True, "a")], [(True, "p"), (1, "z")], [(True, "a", "p")]),
    ([(1, "a"), (True, "b")], [(1, "p")], [(1, "a", "p")]),
    # a tuple value that stayed in its worker meets the list it became on another
    ([((1, 2), "a")], [([1, 2], "p")], [((1, 2), "a", "p")]),
], ids=repr)
def test_a_join_finds_keys_whatever_else_each_side_holds(left: Any, right: Any,
                                                         joined: Any) -> None:
    t = TridentTopology()
    s1 = t.new_stream("a", FixedBatchSpout(["k", "x"], 5, []))
    s2 = t.new_stream("b", FixedBatchSpout(["k", "y"], 5, []))
    join = t.join(s1, ["k"], s2, ["k"], ["k", "x", "y"])
    plan = t.build().components["b-2"].config["trident.plan"]
    rows: dict[int, Any] = {}
    Evaluator(plan["nodes"], lambda meta, rows: None).process(
        rows, {join.node.id: [left, right]}, 1, {}, {})
    assert rows[join.node.id] == joined


@pytest.mark.parametrize("args, message", [
    ((["a"], "2", [[1]]), "batch_size must be an int >= 1"),
    ((["a"], 0, [[1]]), "batch_size must be an int >= 1"),
    ((["a"], 2, [1, 2]), "values must be a list of rows"),
])
def test_a_fixed_batch_spout_refuses_bad_arguments(args: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        FixedBatchSpout(*args)
