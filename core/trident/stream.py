"""The fluent Trident API: :class:`Stream`, :class:`GroupedStream`, :class:`TridentState`.

Each method records a node in the topology's graph (see :mod:`.graph`) and returns the stream
of its output; nothing runs until ``TridentTopology.build()`` compiles the graph into an
ordinary topology. Argument order is Storm's (``each(in_fields, function, out_fields)``,
``persistent_aggregate(state, in_fields, aggregator, out_fields)``, ...).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from squall.errors import TopologyError
from squall.trident.aggregators import Aggregator, CombinerAggregator, ReducerAggregator
from squall.trident.graph import Node
from squall.trident.operations import (
    Consumer, Filter, FlatMapFunction, Function, MapFunction, Operation,
)
from squall.trident.query import QueryFunction, StateUpdater
from squall.trident.state.factory import MapStateFactory

if TYPE_CHECKING:
    from squall.trident.topology import TridentTopology

_AGGREGATORS = (CombinerAggregator, ReducerAggregator, Aggregator)


def field_names(value: Any, what: str) -> list[str]:
    """``value`` as a list of field names; TopologyError naming ``what`` otherwise."""
    if isinstance(value, str):
        return [value]
    if not isinstance(value, Sequence) or not all(isinstance(f, str) for f in value):
        raise TopologyError(f"{what}: expected a list of field names, got {value!r}")
    return list(value)


def check_input_fields(node: Node, fields: list[str], what: str) -> None:
    """TopologyError naming ``what`` unless every field is one of ``node``'s."""
    for f in fields:
        if f not in node.fields:
            raise TopologyError(f"{what}: no field {f!r} in the stream; its fields: "
                                f"{node.fields}")


def _check_new(node: Node, fields: list[str], what: str) -> None:
    clash = [f for f in fields if f in node.fields]
    if clash or len(set(fields)) != len(fields):
        raise TopologyError(f"{what}: output fields {fields} repeat a field of the stream "
                            f"{node.fields}")


def _check_op(op: Any, kind: type | tuple[type, ...], what: str) -> None:
    if not isinstance(op, kind):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise TopologyError(f"{what}: expected a {names} instance, got {op!r}")


def _check_unshared(nodes: Sequence[Node], state: MapStateFactory, group: list[str],
                    mode: str, what: str) -> None:
    """TopologyError when an earlier persist node of the graph keeps its values where
    ``state`` would, so surely by mistake: any other state in the same memory map (its
    writes would be taken for this one's replays, or overwrite them), or a Redis
    ``persistent_aggregate`` by the same group fields under the same key prefix (the same
    keys). Redis states whose keys may differ (other group fields, ``partition_persist``)
    may share a prefix."""
    for n in nodes:
        if n.kind != "persist" or n.state.store != state.store:
            continue
        earlier = "persistent_aggregate" if n.params["mode"] == "aggregate" \
            else "partition_persist"
        if state.backend == "memory":
            raise TopologyError(
                f"{what}: {state.describe()} already holds the state of an earlier {earlier} "
                "of this topology (one would drop or overwrite the other's writes): give "
                "each state an id of its own, or none; to read a state from another stream, "
                "state_query the TridentState its persist returned")
        if mode == "aggregate" and earlier == "persistent_aggregate" \
                and n.params["group"] == group:
            raise TopologyError(
                f"{what}: {state.describe()} already holds the state of an earlier "
                f"persistent_aggregate by {group} of this topology, with the same keys (one "
                "would drop or overwrite the other's writes): give each state a key_prefix "
                "of its own")


class Stream:
    """A Trident stream: a node of the graph and the topology recording it."""

    def __init__(self, topology: TridentTopology, node: Node) -> None:
        self._topology = topology
        self.node = node

    @property
    def fields(self) -> list[str]:
        return list(self.node.fields)

    def _add(self, kind: str, fields: list[str], **kw: Any) -> Stream:
        return Stream(self._topology, self._topology.graph.add(kind, fields, [self.node], **kw))

    # -- parallelism -------------------------------------------------------------------------
    def parallelism_hint(self, n: int) -> Stream:
        """How many tasks run the bolt holding this stream's operation."""
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise TopologyError(f"parallelism_hint: a positive integer, got {n!r}")
        self.node.parallelism = n
        return self

    # -- operations on rows ------------------------------------------------------------------
    def each(self, in_fields: Sequence[str], op: Function | Filter,
             out_fields: Sequence[str] | None = None) -> Stream:
        """``each(in_fields, function, out_fields)`` appends the function's output fields to
        every row it emits for; ``each(in_fields, filter)`` keeps the rows it accepts."""
        ins = field_names(in_fields, "each")
        check_input_fields(self.node, ins, "each")
        if isinstance(op, Filter):
            if out_fields:
                raise TopologyError("each: a Filter takes no output fields")
            return self._add("filter", self.node.fields, params={"in": ins}, op=op)
        _check_op(op, Function, "each")
        outs = field_names(out_fields or [], "each")
        _check_new(self.node, outs, "each")
        return self._add("each", self.node.fields + outs, params={"in": ins}, op=op)

    def filter(self, *args: Any) -> Stream:
        """``filter(filter)`` on every field, or ``filter(in_fields, filter)``."""
        if len(args) == 1:
            ins, op = self.node.fields, args[0]
        elif len(args) == 2:
            ins, op = field_names(args[0], "filter"), args[1]
            check_input_fields(self.node, ins, "filter")
        else:
            raise TopologyError("filter takes (filter) or (in_fields, filter)")
        _check_op(op, Filter, "filter")
        return self._add("filter", self.node.fields, params={"in": ins}, op=op)

    def map(self, function: MapFunction, out_fields: Sequence[str] | None = None) -> Stream:
        """One row per input: the function's return value (``out_fields``: its field names,
        by default the stream's)."""
        _check_op(function, MapFunction, "map")
        outs = field_names(out_fields, "map") if out_fields is not None else self.node.fields
        return self._add("map", outs, params={"in": self.node.fields, "flat": False},
                         op=function)

    def flat_map(self, function: FlatMapFunction,
                 out_fields: Sequence[str] | None = None) -> Stream:
        """Zero or more rows per input: the iterable the function returns."""
        _check_op(function, FlatMapFunction, "flat_map")
        outs = field_names(out_fields, "flat_map") if out_fields is not None else self.node.fields
        return self._add("map", outs, params={"in": self.node.fields, "flat": True},
                         op=function)

    def project(self, fields: Sequence[str]) -> Stream:
        """Keep only ``fields``, in that order."""
        fs = field_names(fields, "project")
        check_input_fields(self.node, fs, "project")
        return self._add("project", fs, params={"in": fs})

    def peek(self, consumer: Consumer) -> Stream:
        """Show every row to ``consumer.accept(tup)``; the rows pass on unchanged."""
        _check_op(consumer, Consumer, "peek")
        return self._add("peek", self.node.fields, params={"in": self.node.fields}, op=consumer)

    # -- repartitioning ----------------------------------------------------------------------
    def _partition(self, how: str, fields: Sequence[str] = ()) -> Stream:
        return self._add("partition", self.node.fields,
                         params={"how": how, "fields": list(fields)})

    def partition_by(self, fields: Sequence[str]) -> Stream:
        """Rows with equal values of ``fields`` go to the same task."""
        fs = field_names(fields, "partition_by")
        check_input_fields(self.node, fs, "partition_by")
        return self._partition("fields", fs)

    def shuffle(self) -> Stream:
        return self._partition("shuffle")

    def global_(self) -> Stream:
        """Every row of every batch to one task (the lowest)."""
        return self._partition("global")

    def batch_global(self) -> Stream:
        """Every row of a batch to one task, chosen per batch."""
        return self._partition("batch_global")

    def broadcast(self) -> Stream:
        """Every row to every task."""
        return self._partition("broadcast")

    # -- grouping and aggregation ------------------------------------------------------------
    def group_by(self, fields: Sequence[str]) -> GroupedStream:
        fs = field_names(fields, "group_by")
        check_input_fields(self.node, fs, "group_by")
        return GroupedStream(self, fs)

    def _agg_args(self, args: tuple[Any, ...], what: str
                  ) -> tuple[list[str], Any, list[str]]:
        if len(args) == 3:
            ins, agg, outs = field_names(args[0], what), args[1], field_names(args[2], what)
        elif len(args) == 2:
            ins, agg, outs = [], args[0], field_names(args[1], what)
        else:
            raise TopologyError(f"{what} takes (in_fields, aggregator, out_fields) or "
                                "(aggregator, out_fields)")
        check_input_fields(self.node, ins, what)
        _check_op(agg, _AGGREGATORS, what)
        need = getattr(agg, "min_input_fields", 0)
        if len(ins) < need:
            name = type(agg).__name__
            raise TopologyError(f"{what}: {name} reads {need} input field(s), got {ins}: "
                                f"give them first, e.g. ([\"n\"], {name}(), [\"total\"])")
        if not isinstance(agg, Aggregator) and len(outs) != 1:
            raise TopologyError(f"{what}: a {type(agg).__name__} gives one output field, "
                                f"got {outs}")
        return ins, agg, outs

    def _aggregate_node(self, group: list[str], args: tuple[Any, ...], what: str,
                        single_emit: bool = False) -> Stream:
        ins, agg, outs = self._agg_args(args, what)
        if set(outs) & set(group) or len(set(outs)) != len(outs):
            raise TopologyError(f"{what}: output fields {outs} clash with the group fields "
                                f"{group}")
        # single_emit: the batch's one result comes from the task its rows went to (the
        # batch_global target); every other task gives nothing for it, not an empty result
        return self._add("aggregate", group + outs,
                         params={"group": group, "in": ins, "out": outs,
                                 "single_emit": single_emit}, op=agg)

    def aggregate(self, *args: Any) -> Stream:
        """``aggregate([in_fields,] aggregator, out_fields)``: one result row per batch over
        every task's rows (a combiner gives ``zero()`` for an empty batch). Each batch is
        aggregated in one task (as by :meth:`batch_global`): with ``parallelism_hint(n)``
        the batches take turns on the n tasks, still one result row each."""
        return self.batch_global()._aggregate_node([], args, "aggregate", single_emit=True)

    def partition_aggregate(self, *args: Any) -> Stream:
        """Like :meth:`aggregate`, per task: one row per batch and task."""
        return self._aggregate_node([], args, "partition_aggregate")

    def persistent_aggregate(self, state: MapStateFactory, *args: Any) -> TridentState:
        """``persistent_aggregate(state, [in_fields,] aggregator, out_fields)``: fold every
        batch into one value held in ``state`` (a combiner or reducer aggregator)."""
        return self.global_()._persist([], state, args, "persistent_aggregate")

    def _persist(self, group: list[str], state: MapStateFactory, args: tuple[Any, ...],
                 what: str) -> TridentState:
        _check_op(state, MapStateFactory, what)
        ins, agg, outs = self._agg_args(args, what)
        if isinstance(agg, Aggregator):
            raise TopologyError(f"{what} takes a CombinerAggregator or a ReducerAggregator, "
                                f"not the Aggregator {type(agg).__name__}")
        _check_unshared(self._topology.graph.nodes, state, group, "aggregate", what)
        node = self._topology.graph.add(
            "persist", group + outs, [self.node], op=agg, state=state,
            params={"group": group, "in": ins, "out": outs, "mode": "aggregate"})
        return TridentState(self._topology, node)

    def partition_persist(self, state: MapStateFactory, in_fields: Sequence[str],
                          updater: StateUpdater,
                          out_fields: Sequence[str] = ()) -> TridentState:
        """Hand every task's rows of a batch to ``updater.update_state(state, tuples,
        collector)`` at commit; what it emits (``out_fields``) is the new values stream."""
        _check_op(state, MapStateFactory, "partition_persist")
        _check_op(updater, StateUpdater, "partition_persist")
        ins = field_names(in_fields, "partition_persist")
        check_input_fields(self.node, ins, "partition_persist")
        outs = field_names(out_fields, "partition_persist")
        _check_unshared(self._topology.graph.nodes, state, [], "updater", "partition_persist")
        node = self._topology.graph.add(
            "persist", outs, [self.node], op=updater, state=state,
            params={"group": [], "in": ins, "out": outs, "mode": "updater"})
        return TridentState(self._topology, node)

    def state_query(self, state: TridentState, in_fields: Sequence[str],
                    query: QueryFunction, out_fields: Sequence[str]) -> Stream:
        """Append ``query``'s output for every row, read from ``state`` (e.g. ``MapGet``)."""
        if not isinstance(state, TridentState):
            raise TopologyError(f"state_query: expected a TridentState (what "
                                f"persistent_aggregate returns), got {state!r}")
        _check_op(query, QueryFunction, "state_query")
        ins = field_names(in_fields, "state_query")
        check_input_fields(self.node, ins, "state_query")
        outs = field_names(out_fields, "state_query")
        _check_new(self.node, outs, "state_query")
        return self._add("state_query", self.node.fields + outs,
                         params={"in": ins, "state_node": state.node.id}, op=query,
                         state=state.factory)


class GroupedStream:
    """``stream.group_by(fields)``: aggregations per group (the group fields come first in
    their output)."""

    def __init__(self, stream: Stream, group: list[str]) -> None:
        self.stream = stream
        self.group = group

    def aggregate(self, *args: Any) -> Stream:
        """One row per group and batch, over every task's rows of the group."""
        return self.stream.partition_by(self.group)._aggregate_node(
            self.group, args, "aggregate")

    def partition_aggregate(self, *args: Any) -> Stream:
        """One row per group, batch and task (no repartitioning)."""
        return self.stream._aggregate_node(self.group, args, "partition_aggregate")

    def persistent_aggregate(self, state: MapStateFactory, *args: Any) -> TridentState:
        """Fold every batch into one value per group, held in ``state`` by group key."""
        return self.stream.partition_by(self.group)._persist(
            self.group, state, args, "persistent_aggregate")

    def state_query(self, state: TridentState, in_fields: Sequence[str],
                    query: QueryFunction, out_fields: Sequence[str]) -> Stream:
        return self.stream.partition_by(self.group).state_query(state, in_fields, query,
                                                                out_fields)

    def each(self, in_fields: Sequence[str], op: Function | Filter,
             out_fields: Sequence[str] | None = None) -> GroupedStream:
        return GroupedStream(self.stream.each(in_fields, op, out_fields), self.group)


class TridentState:
    """What ``persistent_aggregate`` / ``partition_persist`` return: query it with
    ``state_query``; ``new_values_stream()`` gives the values each commit wrote."""

    def __init__(self, topology: TridentTopology, node: Node) -> None:
        self._topology = topology
        self.node = node

    @property
    def factory(self) -> MapStateFactory:
        return self.node.state  # type: ignore[no-any-return]

    def new_values_stream(self) -> Stream:
        return Stream(self._topology, self.node)

    def parallelism_hint(self, n: int) -> TridentState:
        Stream(self._topology, self.node).parallelism_hint(n)
        return self


__all__ = ["GroupedStream", "Operation", "Stream", "TridentState"]
