"""Running a bolt's operations on a batch: one call per node, over all the batch's rows.

An :class:`Evaluator` is built per task from the bolt's plan (the nodes of :mod:`..graph`
this bolt runs, parents first). A batch runs in two stages:

- ``process``: every node not downstream of a ``persist`` node, once all the batch's rows
  are here; ``persist`` nodes prepare what they will write (combined values per key);
- ``commit``: inside the commit of the txid, ``persist`` nodes write their state and the
  nodes after them (the new values stream) run.

Rows are plain tuples. Operations raise to fail the batch. Runs on the worker's loop thread.
"""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from itertools import chain
from operator import itemgetter
from typing import Any

from squall import drivers
from squall.trident import plan
from squall.trident.aggregators import (
    Aggregator, CombinerAggregator, Count, ReducerAggregator, Sum,
)
from squall.trident.operations import Filter
from squall.trident.state.factory import MapStateFactory
from squall.trident.state.map_state import MapState
from squall.trident.keys import GroupKey, equal_as_routed
from squall.trident.tuple import TridentCollector, TridentTuple

Row = tuple[Any, ...]
Rows = list[Row]


def projector(index: list[int]) -> Callable[[Row], Row]:
    """A function picking ``index`` positions of a row as a tuple."""
    if not index:
        return lambda r: ()
    if len(index) == 1:
        i = index[0]
        return lambda r: (r[i],)
    return itemgetter(*index)  # type: ignore[return-value]


def batch_task(txid: int, tasks: int) -> int:
    """The index, among a bolt's ``tasks`` tasks, of the one that gets every row of batch
    ``txid`` sent ``batch_global``."""
    return txid % tasks


def group_keys(group: Callable[[Row], Row], src: Rows) -> list[Row]:
    """The group key of each row of ``src``: keys group as the fields grouping routes them,
    wherever the row is. They are plain tuples where Python's equality is the routing's
    (:func:`~squall.trident.keys.equal_as_routed`: str, int, bytes, None); with other values
    (a list, which a tuple turns into when its row crosses workers, a NaN, which is a new
    one after crossing, 1.0 or True beside 1) they are :class:`~squall.trident.keys.GroupKey`
    s, compared by their canonical form."""
    return keys_alike(list(map(group, src)))[0]


def keys_alike(*keys: list[Row]) -> list[list[Row]]:
    """The lists of keys ``keys``, all in one form (see :func:`group_keys`), decided over
    every key of every list: keys meant to find each other (a join's two sides) are all
    plain tuples or all :class:`~squall.trident.keys.GroupKey` s, never some of each (a
    ``GroupKey`` hashes by its canonical form, a plain tuple by its values)."""
    if equal_as_routed(list(chain.from_iterable(keys))):
        return list(keys)
    return [list(map(GroupKey, ks)) for ks in keys]


class NodeRun:
    """One node of the plan in one task: its operation and how it reads its parent."""

    def __init__(self, d: dict[str, Any], fields_of: dict[int, list[str]]) -> None:
        self.id: int = d["id"]
        self.kind: str = d["kind"]
        self.fields: list[str] = d["fields"]
        self.parents: list[int] = d["parents"]
        self.params: dict[str, Any] = d["params"]
        self.op: Any = plan.from_json(d["op"]) if "op" in d else None
        self.factory = MapStateFactory.from_json(d["state"]) if "state" in d else None
        self.state: MapState | None = None
        parent = fields_of.get(self.parents[0], []) if self.parents else []
        ins = self.params.get("in", [])
        self.in_index = {f: i for i, f in enumerate(ins)}
        self.proj = projector([parent.index(f) for f in ins])
        self.group = projector([parent.index(f) for f in self.params.get("group", [])])
        self.grouped = bool(self.params.get("group"))
        self.single_emit = bool(self.params.get("single_emit"))


class Evaluator:
    """The nodes of one bolt, for one task (see the module docstring)."""

    def __init__(self, nodes: list[dict[str, Any]],
                 deliver: Callable[[dict[str, Any], Rows], None]) -> None:
        fields_of: dict[int, list[str]] = {}
        self.nodes: list[NodeRun] = []
        for d in nodes:
            # only entry nodes (partition, merge, join) have parents in another bolt, and
            # they read no fields by name
            self.nodes.append(NodeRun(d, fields_of))
            fields_of[d["id"]] = d["fields"]
        post: set[int] = set()
        for n in self.nodes:
            if n.kind == "persist" or any(p in post for p in n.parents):
                post.add(n.id)
        self.pre = [n for n in self.nodes if n.id not in post]
        self.post = [n for n in self.nodes if n.id in post]
        self.persists = [n for n in self.nodes if n.kind == "persist"]
        self._deliver = deliver
        #: this task's place among its bolt's tasks (see :func:`batch_task`)
        self.task_index, self.tasks = 0, 1

    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        self.task_index = context.task_index
        self.tasks = len(context.component_tasks(context.component_id))
        serializer = None       # the topology's: a Redis state stores its values with it
        for n in self.nodes:
            if n.op is not None and hasattr(n.op, "prepare"):
                n.op.prepare(conf, context)
            if n.factory is not None:
                if serializer is None:
                    serializer = drivers.driver("serializer", conf)
                n.state = n.factory.make_state(context.memory_stores, serializer)

    def cleanup(self) -> None:
        for n in self.nodes:
            if n.op is not None and hasattr(n.op, "cleanup"):
                n.op.cleanup()
            if n.state is not None:
                n.state.close()

    # -- stages ------------------------------------------------------------------------------
    def process(self, rows: dict[int, Rows], slots: dict[int, list[Rows]], txid: int,
                meta: dict[str, Any], prepared: dict[int, Any]) -> None:
        """Run the pre-commit nodes; ``rows`` has the sources' rows and receives every node's
        output; ``prepared`` receives what persist nodes will write."""
        for n in self.pre:
            rows[n.id] = self._run(n, rows, slots, txid, meta)
        for n in self.persists:
            if all(p in rows for p in n.parents):
                prepared[n.id] = self._prepare(n, rows[n.parents[0]])

    def commit(self, rows: dict[int, Rows], prepared: dict[int, Any], txid: int,
               meta: dict[str, Any]) -> None:
        """Write the states (in txid order, the caller guarantees it) and run the nodes
        after them; their outputs land in ``rows``."""
        for n in self.post:
            if n.kind == "persist":
                if n.id not in prepared:    # it writes what an earlier write put out
                    prepared[n.id] = self._prepare(n, rows[n.parents[0]])
                rows[n.id] = self._write(n, prepared[n.id], txid)
            else:
                rows[n.id] = self._run(n, rows, {}, txid, meta)

    # -- one node ----------------------------------------------------------------------------
    def _run(self, n: NodeRun, rows: dict[int, Rows], slots: dict[int, list[Rows]], txid: int,
             meta: dict[str, Any]) -> Rows:
        kind = n.kind
        if kind in ("spout", "drpc"):
            return rows[n.id]
        if kind in ("partition", "merge"):
            return [r for part in slots.get(n.id, ()) for r in part]
        if kind == "join":
            return _join(n, slots.get(n.id, [[], []]))
        src = rows[n.parents[0]]
        if kind == "each":
            return _each(n, src)
        if kind == "filter":
            return _filter(n, src)
        if kind == "map":
            return _map(n, src)
        if kind == "project":
            return [n.proj(r) for r in src]
        if kind == "peek":
            for r in src:
                n.op.accept(TridentTuple(n.proj(r), n.in_index))
            return src
        if kind == "aggregate":
            if n.single_emit and not src and batch_task(txid, self.tasks) != self.task_index:
                return []       # the batch went to another task: it gives the result
            return _aggregate(n, src, txid)
        if kind == "state_query":
            return _query(n, src)
        if kind == "return":
            self._deliver(meta, src)
            return []
        raise RuntimeError(f"unknown Trident node kind {kind!r}")

    def _prepare(self, n: NodeRun, src: Rows) -> Any:
        op, idx = n.op, n.in_index
        if n.params.get("mode") == "updater":
            return [TridentTuple(n.proj(r), idx) for r in src]
        if isinstance(op, CombinerAggregator):
            return _combine(n, src)
        groups: dict[Row, list[TridentTuple]] = {}
        for k, r in zip(group_keys(n.group, src), src):
            groups.setdefault(k, []).append(TridentTuple(n.proj(r), idx))
        return groups

    def _write(self, n: NodeRun, prepared: Any, txid: int) -> Rows:
        state = n.state
        assert state is not None
        op = n.op
        state.begin_commit(txid)
        try:
            if n.params.get("mode") == "updater":
                collector = TridentCollector()
                op.update_state(state, prepared, collector)
                return collector.out
            keys = list(prepared)
            if isinstance(op, CombinerAggregator):
                def combined(v: Any) -> Callable[[Any], Any]:
                    return lambda old: v if old is None else op.combine(old, v)
                updaters = [combined(prepared[k]) for k in keys]
            else:
                def reduced(ts: list[TridentTuple]) -> Callable[[Any], Any]:
                    def fold(old: Any) -> Any:
                        cur = op.init() if old is None else old
                        for t in ts:
                            cur = op.reduce(cur, t)
                        return cur
                    return fold
                updaters = [reduced(prepared[k]) for k in keys]
            new = state.multi_update(keys, updaters)
            return [k + (v,) for k, v in zip(keys, new)]
        finally:
            state.commit(txid)


def _width(n: NodeRun, out: Rows, added: int) -> Rows:
    """``out`` if every row has the node's fields; ValueError (the batch fails) naming the
    operation otherwise. ``added``: how many of them the operation gives per row."""
    width = len(n.fields)
    if out and set(map(len, out)) != {width}:
        bad = next(r for r in out if len(r) != width)
        raise ValueError(f"{type(n.op).__name__} gave {len(bad) - width + added} values for "
                         f"the {added} output fields {n.fields[width - added:]}: "
                         f"{bad[width - added:]!r:.80}")
    return out


def _each(n: NodeRun, src: Rows) -> Rows:
    op, proj, idx = n.op, n.proj, n.in_index
    if isinstance(op, Filter):
        return [r for r in src if op.is_keep(TridentTuple(proj(r), idx))]
    collector = TridentCollector()
    execute = op.execute
    for r in src:
        collector.set_prefix(r)
        execute(TridentTuple(proj(r), idx), collector)
    return _width(n, collector.out, len(n.fields) - (len(src[0]) if src else 0))


def _filter(n: NodeRun, src: Rows) -> Rows:
    keep, proj, idx = n.op.is_keep, n.proj, n.in_index
    return [r for r in src if keep(TridentTuple(proj(r), idx))]


def _values(v: Any, n: NodeRun) -> tuple[Any, ...]:
    """One output row's values as a MapFunction or FlatMapFunction gave them; ValueError
    for a str or bytes (a row's values go in a list or tuple)."""
    if v.__class__ is tuple:
        return v  # type: ignore[no-any-return]
    if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__"):
        raise ValueError(f"{type(n.op).__name__} gave {v!r:.60} for a row; give its values "
                         f"as a list or tuple, one per field of {n.fields}")
    return tuple(v)


def _map(n: NodeRun, src: Rows) -> Rows:
    execute, proj, idx = n.op.execute, n.proj, n.in_index
    if n.params.get("flat"):
        out = [_values(v, n) for r in src for v in execute(TridentTuple(proj(r), idx))]
    else:
        out = [_values(execute(TridentTuple(proj(r), idx)), n) for r in src]
    return _width(n, out, len(n.fields))


def _aggregate(n: NodeRun, src: Rows, txid: int) -> Rows:
    op, proj, idx, group = n.op, n.proj, n.in_index, n.group
    if isinstance(op, CombinerAggregator):
        acc = _combine(n, src)
        if not n.grouped and not acc:
            return [(op.zero(),)]
        return [k + (v,) for k, v in acc.items()]
    if isinstance(op, ReducerAggregator):
        red: dict[Row, Any] = {}
        for k, r in zip(group_keys(group, src), src):
            red[k] = op.reduce(red[k] if k in red else op.init(), TridentTuple(proj(r), idx))
        if not n.grouped and not red:
            return [(op.init(),)]
        return [k + (v,) for k, v in red.items()]
    assert isinstance(op, Aggregator)
    collector = TridentCollector()
    states: dict[Row, Any] = {}
    if not n.grouped:
        states[()] = op.init(txid, collector)
    for k, r in zip(group_keys(group, src), src):
        collector.set_prefix(k)
        if k not in states:
            states[k] = op.init(txid, collector)
        new = op.aggregate(states[k], TridentTuple(proj(r), idx), collector)
        if new is not None:
            states[k] = new
    for k, st in states.items():
        collector.set_prefix(k)
        op.complete(st, collector)
    return collector.out


def _combine(n: NodeRun, src: Rows) -> dict[Row, Any]:
    """A combiner's value per group over ``src``. ``Count`` and ``Sum`` themselves (not
    subclasses, which may change them) are folded without a call per row."""
    op, group = n.op, n.group
    kind = type(op)
    keys = group_keys(group, src)
    if kind is Count:
        return dict(Counter(keys))
    if kind is Sum:
        first = n.proj
        sums: dict[Row, Any] = {}
        get = sums.get
        for k, r in zip(keys, src):
            v = first(r)[0]
            sums[k] = get(k, 0) + (0 if v is None else v)
        return sums
    proj, idx = n.proj, n.in_index
    acc: dict[Row, Any] = {}
    for k, r in zip(keys, src):
        v = op.init(TridentTuple(proj(r), idx))
        acc[k] = op.combine(acc[k], v) if k in acc else v
    return acc


def _query(n: NodeRun, src: Rows) -> Rows:
    op, proj, idx = n.op, n.proj, n.in_index
    views = [TridentTuple(proj(r), idx) for r in src]
    results = op.batch_retrieve(n.state, views) if views else []
    collector = TridentCollector()
    for r, view, res in zip(src, views, results):
        collector.set_prefix(r)
        op.execute(view, res, collector)
    return collector.out


def _join(n: NodeRun, sides: list[Rows]) -> Rows:
    left, right = (sides + [[], []])[:2]
    if not left or not right:
        return []
    i1, i2 = n.params["index"]
    key1, key2 = projector(i1), projector(i2)
    rest1 = projector([i for i in range(len(left[0])) if i not in i1])
    rest2 = projector([i for i in range(len(right[0])) if i not in i2])
    keys1, keys2 = keys_alike(list(map(key1, left)), list(map(key2, right)))
    index: dict[Row, list[Row]] = {}
    for k, r in zip(keys2, right):
        index.setdefault(k, []).append(rest2(r))
    return [key1(r) + rest1(r) + other
            for k, r in zip(keys1, left) for other in index.get(k, ())]


def result_json(rows: Rows) -> str:
    """A DRPC result: the JSON of the result rows (a value JSON has no type for, bytes or
    a date say, as its ``str``)."""
    return json.dumps([list(r) for r in rows], default=str)
