"""Testing helpers: run a topology to completion on fixed input, and contract suites.

>>> from squall import TopologyBuilder, Spout, Bolt
>>> from squall.testing import complete_topology
>>> class Lines(Spout):
...     outputs = ["line"]
>>> class Upper(Bolt):
...     outputs = ["line"]
...     def process(self, tup):
...         self.emit([tup.values[0].upper()])
>>> b = TopologyBuilder()
>>> _ = b.set_spout("lines", Lines)
>>> _ = b.set_bolt("upper", Upper).shuffle_grouping("lines")
>>> result = complete_topology(b.create_topology(), sources={"lines": [["a"], ["b"]]})
>>> sorted(result.tuples("upper")), sorted(result.acked)
([('A',), ('B',)], [0, 1])
"""
from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any

from squall.api.component import Spout
from squall.api.topology import ComponentSpec, Topology
from squall.errors import TopologyError
from squall.testing.waiting import WaitTimeout, wait_until

if TYPE_CHECKING:
    from squall.runtime.task import TaskState

__all__ = ["CompletedTopology", "FixedTupleSpout", "WaitTimeout", "complete_topology", "wait_until"]

_runs: dict[str, _Run] = {}
_ids = itertools.count(1)


class _Run:
    def __init__(self, sources: dict[str, list[tuple[Any, ...]]]) -> None:
        self.sources = sources
        self.acked: set[int] = set()
        self.failed: set[int] = set()
        #: (component, stream, task) -> the values that task emitted on that stream, in order
        self.emitted: dict[tuple[str, str, int], list[tuple[Any, ...]]] = {}
        self.lock = threading.Lock()
        self.total = sum(len(v) for v in sources.values())
        #: the fixed spouts emit once this is set (where stateful tasks must recover first)
        self.released = False

    def done(self) -> bool:
        return len(self.acked | self.failed) >= self.total

    def recorder(self, ts: TaskState) -> Any:
        """What records the emits of a task (``squall.runtime.emit.tap``); None for the
        system components."""
        if ts.component_id.startswith("__"):
            return None
        emitted, cid, task = self.emitted, ts.component_id, ts.task

        def record(stream: str, values_list: Sequence[Sequence[Any]]) -> None:
            if stream.startswith("__"):       # checkpoints a bolt forwards are not its emits
                return
            key = (cid, stream, task)
            out = emitted.get(key)
            if out is None:
                out = emitted.setdefault(key, [])
            out.extend(map(tuple, values_list))
        return record


class FixedTupleSpout(Spout):
    """Emits each listed tuple once (index as ``tup_id``) once its run releases it (at once,
    or after every stateful task recovered); records acks and fails, no replay.

    Configured by ``squall.testing.run`` and ``squall.testing.source`` in its component config;
    the tuples are split between its tasks by index."""

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.run = _runs[conf["squall.testing.run"]]
        rows = self.run.sources[conf["squall.testing.source"]]
        n = len(context.component_tasks(context.component_id))
        me = context.task_index
        self.todo = [(i, row) for i, row in enumerate(rows) if i % n == me]
        self.pos = 0

    def next_tuple(self) -> None:
        if self.pos < len(self.todo) and self.run.released:
            i, row = self.todo[self.pos]
            self.pos += 1
            self.emit(row, tup_id=i)

    def ack(self, tup_id: Any) -> None:
        with self.run.lock:
            self.run.acked.add(tup_id)

    def fail(self, tup_id: Any) -> None:
        with self.run.lock:
            self.run.failed.add(tup_id)


class CompletedTopology:
    """What :func:`complete_topology` returns."""

    def __init__(self, run: _Run) -> None:
        self._run = run
        self.acked = set(run.acked)
        self.failed = set(run.failed)

    def tuples(self, component: str, stream: str = "default") -> list[tuple[Any, ...]]:
        """Every tuple ``component`` emitted on ``stream``, each task's in emit order."""
        emitted = self._run.emitted
        keys = sorted(k for k in list(emitted) if k[0] == component and k[1] == stream)
        return [v for k in keys for v in emitted[k]]


#: what neither a source nor one of its tuples may be: a str or bytes (iterated, it gives
#: characters or ints: ``"abc"`` for ``[["abc"]]``), a mapping (its keys) or a set (no order)
_NOT_ROWS = (str, bytes, bytearray, memoryview, Mapping, AbstractSet)


def _rows(name: str, rows: Any) -> list[tuple[Any, ...]]:
    """The tuples of source ``name`` as a list of value tuples; TopologyError for a source,
    or a tuple of it, that is a str, bytes, a mapping, a set or not iterable."""
    if isinstance(rows, _NOT_ROWS) or not isinstance(rows, Iterable):
        raise TopologyError(f"complete_topology: the source for {name!r} is a "
                            f"{type(rows).__name__} ({rows!r:.60}); give a list of tuples, "
                            f"each a list of values, e.g. [['a b'], ['c']]")
    out = []
    for i, row in enumerate(rows):
        if isinstance(row, _NOT_ROWS) or not isinstance(row, Iterable):
            raise TopologyError(f"complete_topology: tuple {i} of the source for {name!r} is "
                                f"a {type(row).__name__} ({row!r:.60}); each tuple is a list "
                                f"of values, one per field, e.g. [{row!r:.40}]")
        out.append(tuple(row))
    return out


def _fixed(spec: ComponentSpec, run_id: str, rows: list[tuple[Any, ...]]) -> ComponentSpec:
    streams = spec.streams
    if "default" not in streams:
        raise TopologyError(f"complete_topology: spout {spec.id!r} has no default stream")
    width = len(streams["default"].fields)
    for row in rows:
        if len(row) != width:
            raise TopologyError(f"complete_topology: source for {spec.id!r} has a tuple of "
                                f"{len(row)} values, but its default stream has fields "
                                f"{list(streams['default'].fields)}")
    return ComponentSpec(id=spec.id, kind="spout", cls=FixedTupleSpout,
                         ref="squall.testing:FixedTupleSpout", parallelism=spec.parallelism,
                         num_tasks=spec.num_tasks,
                         config={**spec.config, "squall.testing.run": run_id,
                                 "squall.testing.source": spec.id},
                         resources=spec.resources, inputs=[], streams=streams)


def _quiet(workers: list[Any], timeout: float) -> bool:
    """Nothing queued, nothing between workers, and every worker then completed two loop
    passes without work: a batch on the wire or a bolt in the middle of a pass is seen."""
    def idle() -> tuple[list[int], int, int] | None:
        if any(w.queued() for w in workers):
            return None
        sent = sum(w.outbox.sent_batches for w in workers)
        got = sum(w.inbox.received_batches for w in workers)
        return ([w.passes for w in workers], sent, got) if sent == got else None

    first = idle()
    if first is None:
        return False
    passes = first[0]
    wait_until(lambda: all(not w.running or w.passes >= p + 2
                           for w, p in zip(workers, passes)), timeout,
               message="worker loops to go round")
    second = idle()
    return (second is not None and second[1:] == first[1:]
            and all(w.last_busy_pass <= p for w, p in zip(workers, passes)))


def _recovered(workers: list[Any]) -> bool:
    """Whether every stateful task of ``workers`` has its state (until then it fails what
    it gets, and a fixed spout does not replay)."""
    from squall.stateful.executor import CheckpointedBoltExecutor
    return all(ex.recovered() for w in workers for ex in w.executors
               if isinstance(ex, CheckpointedBoltExecutor))


def complete_topology(topology: Topology, sources: dict[str, Sequence[Sequence[Any]]],
                      conf: dict[str, Any] | None = None, timeout: float = 30) -> CompletedTopology:
    """Run ``topology`` in a LocalCluster with the named spouts replaced by fixed tuples.

    With stateful bolts, the fixed spouts start once every stateful task has recovered its
    state. Returns once every listed tuple was acked or failed and the topology went quiet;
    raises TimeoutError (:class:`WaitTimeout`) after ``timeout`` seconds. The stop is within
    the same deadline (at least half a second a worker for it); a component still in a call
    then is not interrupted, and may go on running in its thread after the return."""
    from squall.runtime.emit import tap
    from squall.runtime.local_cluster import LocalCluster
    from squall.stateful.checkpoint import CHECKPOINT

    if not isinstance(topology, Topology):
        raise TopologyError(f"complete_topology needs a Topology (from create_topology(); "
                            f"load_target for a streamparse Topology class), got "
                            f"{topology!r}")
    if timeout.__class__ is bool or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"complete_topology: timeout must be a number of seconds > 0, got "
                         f"{timeout!r}")
    deadline = time.monotonic() + timeout

    def left() -> float:
        return max(0.0, deadline - time.monotonic())

    for name in sources:
        spec = topology.components.get(name)
        if spec is None or spec.kind != "spout":
            raise TopologyError(f"complete_topology: {name!r} is not a spout of the topology; "
                                f"spouts: {', '.join(topology.spouts)}")
    run_id = f"run-{next(_ids)}"
    run = _Run({k: _rows(k, v) for k, v in sources.items()})
    comps = [(_fixed(s, run_id, run.sources[cid]) if cid in run.sources else s)
             for cid, s in topology.components.items()]
    patched = Topology(comps, topology.conf)
    run.released = CHECKPOINT not in patched.components
    _runs[run_id] = run
    tap.TAPS[run_id] = run.recorder            # the topology's name: its emits are recorded
    try:
        cluster = LocalCluster()
        try:
            cluster.submit_topology(run_id, dict(conf or {}), patched)
            if not run.released:
                wait_until(lambda: _recovered(cluster.workers(run_id)), left(),
                           message="every stateful task to recover its state")
                run.released = True
            workers = cluster.workers(run_id)
            wait_until(run.done, left(), message="every source tuple acked or failed")
            wait_until(lambda: _quiet(workers, left()), left(),
                       message="the topology to go quiet")
        finally:
            # one deadline: what is left of it bounds the stop too (LocalCluster gives each
            # worker at least half a second)
            cluster.shutdown(timeout=left())
        return CompletedTopology(run)
    finally:
        tap.TAPS.pop(run_id, None)
        _runs.pop(run_id, None)
