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
>>> sorted(result.tuples("upper")), sorted(result.acked), sorted(result.acked_by("lines"))
([('A',), ('B',)], [0, 1], [0, 1])
"""
from __future__ import annotations

import itertools
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any

from squall.api.component import Spout
from squall.api.topology import ComponentSpec, Topology
from squall.errors import TopologyError
from squall.testing.ids import param_id
from squall.testing.waiting import WaitTimeout, wait_until

if TYPE_CHECKING:
    from squall.runtime.task import TaskState

__all__ = ["CompletedTopology", "FixedTupleSpout", "WaitTimeout", "complete_topology", "param_id",
           "wait_until"]

_runs: dict[str, _Run] = {}
_ids = itertools.count(1)


#: how much of each list a timeout message names before "and N more"
_NAMED = 10


def _listed(names: list[str]) -> str:
    more = len(names) - _NAMED
    return ", ".join(names[:_NAMED]) + (f" and {more} more" if more > 0 else "")


class _Run:
    """One run's sources and what became of their tuples (written by the fixed spouts'
    tasks under ``lock``), and the emits of its tasks."""

    def __init__(self, sources: dict[str, list[tuple[Any, ...]]], topology: Topology,
                 message_timeout: Any) -> None:
        self.sources = sources
        #: source spout -> indexes of its tuples emitted, acked, failed
        self.emitted_ids: dict[str, set[int]] = {s: set() for s in sources}
        self.acked: dict[str, set[int]] = {s: set() for s in sources}
        self.failed: dict[str, set[int]] = {s: set() for s in sources}
        #: source tuples acked or failed (each counted once)
        self.completed = 0
        own = {c: spec for c, spec in topology.components.items()
               if spec.kind in ("spout", "bolt") and not c.startswith("__")}
        #: the topology's own components -> the streams each declares
        self.streams = {c: [s for s in spec.streams if not s.startswith("__")]
                        for c, spec in own.items()}
        #: its spouts that run as they are (not in ``sources``)
        self.unmocked = [c for c, spec in sorted(own.items())
                         if spec.kind == "spout" and c not in sources]
        #: topology.message.timeout.secs of the run (what fails a tuple never acked); None
        #: where message timeouts are off
        self.message_timeout = message_timeout
        #: (component, stream, task) -> the values that task emitted on that stream, in order
        self.emitted: dict[tuple[str, str, int], list[tuple[Any, ...]]] = {}
        self.lock = threading.Lock()
        self.total = sum(len(v) for v in sources.values())
        #: the fixed spouts emit once this is set (where stateful tasks must recover first)
        self.released = False

    def done(self) -> bool:
        return self.completed >= self.total

    def sent(self, source: str, index: int) -> None:
        with self.lock:
            self.emitted_ids[source].add(index)

    def complete(self, source: str, index: int, acked: bool) -> None:
        """Record the ack (or fail) of tuple ``index`` of ``source``."""
        with self.lock:
            if index not in self.acked[source] and index not in self.failed[source]:
                self.completed += 1
            (self.acked if acked else self.failed)[source].add(index)

    def pending(self) -> str:
        """What is not done yet, for a timeout message: how many source tuples are done,
        which are in flight and which not emitted, and the spouts not mocked."""
        with self.lock:
            flying = [f"{s}[{i}]" for s in self.sources
                      for i in sorted(self.emitted_ids[s] - self.acked[s] - self.failed[s])]
            unsent = [f"{s}[{i}]" for s, rows in self.sources.items()
                      for i in range(len(rows)) if i not in self.emitted_ids[s]]
            parts = [f"{self.completed} of {self.total} source tuples acked or failed"]
        if flying:
            parts.append(f"in flight (emitted, not acked or failed yet): {_listed(flying)}; "
                         + (f"a tuple never acked or failed is failed after "
                            f"topology.message.timeout.secs ({self.message_timeout} s here)"
                            if self.message_timeout is not None else
                            "topology.enable.message.timeouts is off: one never acked or "
                            "failed stays in flight"))
        if unsent:
            parts.append(f"not emitted yet: {_listed(unsent)}")
        parts.extend(self.unmocked_note())
        return "; ".join(parts)

    def unmocked_note(self) -> list[str]:
        """A timeout message's part on the spouts not mocked, if any."""
        if not self.unmocked:
            return []
        return [f"spouts not mocked (they run as they are; name them in sources to replace "
                f"them): {', '.join(self.unmocked)}"]

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
        self.source: str = conf["squall.testing.source"]
        rows = self.run.sources[self.source]
        n = len(context.component_tasks(context.component_id))
        me = context.task_index
        self.todo = [(i, row) for i, row in enumerate(rows) if i % n == me]
        self.pos = 0

    def next_tuple(self) -> None:
        if self.pos < len(self.todo) and self.run.released:
            i, row = self.todo[self.pos]
            self.pos += 1
            self.run.sent(self.source, i)
            self.emit(row, tup_id=i)

    def ack(self, tup_id: Any) -> None:
        self.run.complete(self.source, tup_id, acked=True)

    def fail(self, tup_id: Any) -> None:
        self.run.complete(self.source, tup_id, acked=False)


class CompletedTopology:
    """What :func:`complete_topology` returns.

    ``acked`` and ``failed`` are the indexes of the source tuples acked and failed; with
    several sources an index is in them if it is so in any source (each source numbers its
    tuples from 0): :meth:`acked_by` and :meth:`failed_by` tell one source's."""

    def __init__(self, run: _Run) -> None:
        self._run = run
        self.acked: set[int] = set().union(*run.acked.values())
        self.failed: set[int] = set().union(*run.failed.values())

    def acked_by(self, spout: str) -> set[int]:
        """The indexes of the tuples of source ``spout`` that were acked; KeyError naming
        the sources for a spout that is not one."""
        return set(self._run.acked[self._source(spout)])

    def failed_by(self, spout: str) -> set[int]:
        """The indexes of the tuples of source ``spout`` that were failed; KeyError naming
        the sources for a spout that is not one."""
        return set(self._run.failed[self._source(spout)])

    def _source(self, spout: str) -> str:
        if spout not in self._run.sources:
            raise KeyError(f"{spout!r} is not a source of this run; its sources: "
                           f"{', '.join(sorted(self._run.sources)) or 'none'}")
        return spout

    def tuples(self, component: str, stream: str = "default") -> list[tuple[Any, ...]]:
        """Every tuple ``component`` emitted on ``stream``, each task's in emit order ([]
        for a declared stream it emitted nothing on); KeyError naming what there is for a
        component that is not one of the topology's, or a stream it does not declare."""
        streams = self._run.streams.get(component)
        if streams is None:
            raise KeyError(f"{component!r} is not a component of the topology; its "
                           f"components: {', '.join(sorted(self._run.streams))}")
        if stream not in streams:
            raise KeyError(f"component {component!r} has no stream {stream!r}; "
                           + (f"its streams: {', '.join(streams)}" if streams
                              else "it declares no output streams"))
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


def _quiet(workers: list[Any], timeout: float, message: Callable[[], str]) -> bool:
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
                           for w, p in zip(workers, passes)), timeout, message=message)
    second = idle()
    return (second is not None and second[1:] == first[1:]
            and all(w.last_busy_pass <= p for w, p in zip(workers, passes)))


def _recovered(workers: list[Any]) -> bool:
    """Whether every stateful task of ``workers`` has its state (until then it fails what
    it gets, and a fixed spout does not replay)."""
    from squall.stateful.executor import CheckpointedBoltExecutor
    return all(ex.recovered() for w in workers for ex in w.executors
               if isinstance(ex, CheckpointedBoltExecutor))


def _refuse_trident(topology: Topology) -> None:
    """TopologyError for a topology built by ``TridentTopology.build()``: its sources are
    batches its coordinator spouts drive, not spouts a fixed one could replace."""
    from squall.api.topology import class_ref
    from squall.trident.runtime.coordinator import TridentCoordinator
    ref = class_ref(TridentCoordinator)
    coordinators = [c for c, spec in sorted(topology.components.items())
                    if spec.kind == "spout" and spec.ref == ref]
    if coordinators:
        raise TopologyError(f"complete_topology runs plain topologies, and this one was built "
                            f"by TridentTopology.build() (its batches come from "
                            f"{', '.join(coordinators)}, not from spouts it could replace); "
                            f"test a Trident topology in a LocalCluster, feeding it a "
                            f"FixedBatchSpout and reading its state with a LocalDRPC query "
                            f"(README, Trident and DRPC)")


#: the key of the time after which a tuple never acked or failed is failed
_MESSAGE_TIMEOUT = "topology.message.timeout.secs"


def _run_conf(topology: Topology, conf: dict[str, Any] | None, timeout: float
              ) -> dict[str, Any]:
    """The run's conf: ``conf`` and, unless it or the topology sets it, a message timeout of
    a third of ``timeout``, so a tuple a bolt never acks is failed (rotated out after one to
    two message timeouts) before the run gives up; at least what the topology's bolts hold
    their inputs for (see :func:`_least_message_timeout`)."""
    out = dict(conf or {})
    if _MESSAGE_TIMEOUT in out or _MESSAGE_TIMEOUT in topology.conf:
        return out
    out[_MESSAGE_TIMEOUT] = max(_least_message_timeout(topology, {**topology.conf, **out}),
                                int(timeout / 3))
    return out


def _least_message_timeout(topology: Topology, conf: dict[str, Any]) -> int:
    """The shortest message timeout (whole seconds) under which ``topology`` acks what it is
    given: 1, three checkpoint intervals with stateful bolts (their inputs are acked once a
    checkpoint commits), a second more than window plus slide with duration windows (their
    tuples are acked as they leave their last window; shorter is refused at submit)."""
    from squall.config import component_conf
    from squall.stateful.checkpoint import CHECKPOINT
    from squall.windowing.spec import WindowSpec
    from squall.windowing.topology import is_windowed
    least = 1
    if CHECKPOINT in topology.components:
        interval_ms = conf.get("topology.state.checkpoint.interval.ms")
        if not isinstance(interval_ms, (int, float)) or not 0 < interval_ms < math.inf:
            interval_ms = 1000          # a bad value: the submit refuses it
        least = math.ceil(3 * interval_ms / 1000)
    for spec in topology.components.values():
        if spec.kind == "bolt" and is_windowed(spec.cls):
            assert spec.cls is not None
            hold = WindowSpec.of(spec.id, spec.cls, component_conf(conf, spec.config)).hold_ms()
            if hold is not None:
                least = max(least, math.ceil(hold / 1000) + 1)
    return least


def complete_topology(topology: Topology, sources: dict[str, Sequence[Sequence[Any]]],
                      conf: dict[str, Any] | None = None, timeout: float = 30) -> CompletedTopology:
    """Run ``topology`` in a LocalCluster with the named spouts replaced by fixed tuples.

    With stateful bolts, the fixed spouts start once every stateful task has recovered its
    state. Returns once every listed tuple was acked or failed and the topology went quiet;
    raises TimeoutError (:class:`WaitTimeout`) after ``timeout`` seconds, saying what was
    not done. The stop is within the same deadline (at least half a second a worker for it);
    a component still in a call then is not interrupted, and may go on running in its thread
    after the return. Unless ``conf`` or the topology sets ``topology.message.timeout.secs``,
    the run's is a third of ``timeout`` (or what its stateful or windowed bolts need, if
    more), so a tuple never acked is failed in time. A Trident topology is refused
    (TopologyError)."""
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
    _refuse_trident(topology)
    deadline = time.monotonic() + timeout

    def left() -> float:
        return max(0.0, deadline - time.monotonic())

    for name in sources:
        spec = topology.components.get(name)
        if spec is None or spec.kind != "spout":
            raise TopologyError(f"complete_topology: {name!r} is not a spout of the topology; "
                                f"spouts: {', '.join(topology.spouts)}")
    run_id = f"run-{next(_ids)}"
    rows = {k: _rows(k, v) for k, v in sources.items()}
    patched = Topology([(_fixed(s, run_id, rows[cid]) if cid in rows else s)
                        for cid, s in topology.components.items()], topology.conf)
    run_conf = _run_conf(topology, conf, timeout)
    merged = {**topology.conf, **run_conf}
    run = _Run(rows, patched, merged[_MESSAGE_TIMEOUT]
               if merged.get("topology.enable.message.timeouts", True) else None)
    run.released = CHECKPOINT not in patched.components
    within = f"within {timeout:g} s"

    def not_done() -> str:
        return f"complete_topology: not every source tuple was acked or failed {within}: " \
               f"{run.pending()}"

    def not_quiet() -> str:
        return "; ".join([f"complete_topology: every source tuple was acked or failed, but the "
                          f"topology did not go quiet {within} (a component still emits, or "
                          f"is stuck in a call)", *run.unmocked_note()])

    _runs[run_id] = run
    tap.TAPS[run_id] = run.recorder            # the topology's name: its emits are recorded
    try:
        cluster = LocalCluster()
        try:
            cluster.submit_topology(run_id, run_conf, patched)
            if not run.released:
                wait_until(lambda: _recovered(cluster.workers(run_id)), left(),
                           message=lambda: f"complete_topology: a stateful task did not "
                                           f"recover its state {within}")
                run.released = True
            workers = cluster.workers(run_id)
            wait_until(run.done, left(), message=not_done)
            wait_until(lambda: _quiet(workers, left(), not_quiet), left(), message=not_quiet)
        finally:
            # one deadline: what is left of it bounds the stop too (LocalCluster gives each
            # worker at least half a second)
            cluster.shutdown(timeout=left())
        return CompletedTopology(run)
    finally:
        tap.TAPS.pop(run_id, None)
        _runs.pop(run_id, None)
