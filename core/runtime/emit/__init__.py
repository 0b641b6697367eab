"""Emitting: the ``emit`` and ``emit_many`` installed on each component instance.

:func:`make_emit` chooses a task's emit once, from the shape of its topology (the table
below); the paths themselves are in :mod:`.fast` (the shortcuts, and every inline Tuple
build) and :mod:`.general` (everything else). Each emit puts a tuple for a task of this
worker straight into that task's queue, and one for a task elsewhere into the outbox of its
worker (:mod:`squall.runtime.wire.outbox`): no locks, no logging, no hook calls.

=============================================  =================================  =========
the task, and its default stream               emit                               module
=============================================  =================================  =========
a spout                                        :func:`.fast.stream_emit`          fast
a bolt whose default stream has no single-     :func:`.fast.stream_emit`          fast
target subscriber (several, direct, none)
a bolt in a topology with ackers               :func:`.fast.anchored_default`     fast
a bolt without ackers, one subscriber task     :func:`.fast.plain_one`            fast
in this worker
a bolt without ackers, otherwise               :func:`.fast.plain_default`        fast
=============================================  =================================  =========

Every one of them hands a call it does not shortcut to the one before it in its chain
(``plain_*``/``anchored_default`` → ``stream_emit`` → :func:`.general.emit_general`). Those of
a task whose component may call from threads of its own (a spout, a bolt that acks itself:
``Executor.checks_threads``) are built ``checked``: another thread's call is handed to the
loop (:mod:`squall.runtime.executors.handoff`).
``emit_many`` is :func:`.fast.many_emit` for every task. The tasks of a topology that
:func:`squall.testing.complete_topology` runs get the two wrapped, to record what they emit
(:mod:`.tap`), and so do those of a task whose conf sets
``topology.testing.always.try.serialize``, to pass every value through the serializer
(:mod:`.round_trip`); every other task gets the choice as it is.
"""
from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from squall.api.tuple import Source
from squall.runtime.emit import fast, round_trip, tap
from squall.runtime.routing import Route, choose_many_of, make_grouping
from squall.runtime.task import LocalTasks, TaskState

if TYPE_CHECKING:
    from squall.api.topology import Topology
    from squall.runtime.acks import AckLedger
    from squall.runtime.streams import Sources
    from squall.runtime.wire.outbox import Outbox

log = logging.getLogger(__name__)


class Clock:
    """The loop's clock (``time.monotonic()``): ``now``, set once per loop pass, when it
    began; and ``turn``, what a spout's new tree is stamped with (its complete latency runs
    from it): set with ``now``, and again as each spout executor's turn of the pass begins,
    so a tree emitted after the bolts of this worker ran in the same pass is not stamped
    with the pass's start (``max.spout.pending`` 1 and a 5 ms bolt read 10 ms)."""

    __slots__ = ("now", "turn")

    def __init__(self, now: float) -> None:
        self.now = now
        self.turn = now


def _unreported(ts: TaskState, exc: BaseException | str) -> None:
    log.error("component %s task %d: %s", ts.component_id, ts.task, exc)


class Wiring:
    """What every emit of one worker reaches: this worker's queues, the outbox, the ack
    ledger, the loop's clock, the list of tasks holding emit_many values, and ``report(ts,
    exc)``, which records an error of the emitting task's component (a grouping's, off the
    emit paths)."""

    __slots__ = ("acking", "acks", "batch_size", "clock", "holding", "lazy", "outbox",
                 "queues", "report")

    def __init__(self, tasks: LocalTasks, outbox: Outbox, acks: AckLedger, clock: Clock,
                 batch_size: int,
                 report: Callable[[TaskState, BaseException | str], None] = _unreported
                 ) -> None:
        self.report = report
        self.queues: dict[int, deque[Any]] = tasks.queues
        self.lazy: dict[int, TaskState] = tasks.lazy
        self.outbox = outbox
        self.acks = acks
        self.acking = acks.acking
        self.clock = clock
        self.batch_size = batch_size
        #: release functions of tasks holding emit_many values (fast.Hold); the
        #: loop calls and empties it after each executor's pass
        self.holding: list[Callable[[], None]] = []


class Plans:
    """What a task's emits need of each stream with one subscriber whose grouping picks
    one task (the fast paths' streams), worked out once."""

    __slots__ = ("by_stream", "choose_many", "run_streams", "source_of_single", "tree_streams")

    def __init__(self, ts: TaskState, w: Wiring) -> None:
        queues_get = w.queues.get
        #: stream -> (choose_one, source, the queue of its one task here or None, the
        #: keyed entry (field index, str key -> queue or task id) or None, the number of
        #: fields an emit's values must have)
        self.by_stream: dict[str, tuple[Callable[[tuple], int], Source, Any, Any, int]] = {}
        self.choose_many: dict[str, Callable[[Sequence[Sequence[Any]]], list[int]]] = {}
        self.source_of_single: dict[str, Source] = {}
        #: streams with a target that takes runs (a lazy_batch task here, or any remote task)
        self.run_streams: set[str] = set()
        #: streams with a target in another worker: a batch bolt's anchored emit_many
        #: values on them are held and routed together, by tree (fast.Hold)
        self.tree_streams: set[str] = set()
        for name, routes in ts.routes.items():
            if len(routes) != 1 or routes[0].one is None or routes[0].direct:
                continue
            route = routes[0]
            src = ts.sources[name]
            fixed = queues_get(route.targets[0]) if len(route.targets) == 1 else None
            keyed: tuple[int, dict[str, Any]] | None = \
                (route.key_index, {}) if len(route.targets) != 1 \
                and route.key_index is not None else None
            self.by_stream[name] = (route.one, src, fixed, keyed, len(src.fields))
            self.choose_many[name] = choose_many_of(route)
            self.source_of_single[name] = src
            if any(t in w.lazy or t not in w.queues for t in route.targets):
                self.run_streams.add(name)
            if any(t not in w.queues for t in route.targets):
                self.tree_streams.add(name)


def build_routes(ts: TaskState, topology: Topology, sources: Sources, context: Any) -> None:
    """Fill ``ts.routes`` (stream -> one Route per subscriber, groupings prepared) and
    ``ts.sources`` from the topology."""
    spec = topology.components[ts.component_id]
    for name, stream in spec.streams.items():
        ts.sources[name] = sources.get(ts.component_id, name)
        routes = []
        for sub_id, inp in topology.subscribers(ts.component_id, name):
            grouping = make_grouping(inp, stream.fields, ts.conf)
            targets = topology.tasks(sub_id)
            if grouping is not None:
                grouping.prepare(context, (ts.component_id, name), targets)
            routes.append(Route(sub_id, grouping, inp.grouping == "direct", targets))
        ts.routes[name] = routes


def make_emit(ts: TaskState, w: Wiring, *, spout: bool) -> tuple[fast.Emit, fast.EmitMany]:
    """The ``emit`` and ``emit_many`` of one task (see :meth:`squall.Component.emit`),
    chosen by the table in this module's docstring; recorded where
    :func:`squall.testing.complete_topology` runs the topology (:mod:`.tap`); through the
    serializer with ``topology.testing.always.try.serialize`` (:mod:`.round_trip`)."""
    emit, emit_many = _choose(ts, w, spout=spout)
    if tap.TAPS:
        emit, emit_many = tap.tapped(ts, emit, emit_many)
    if ts.conf.get(round_trip.KEY):     # outermost: a refused value is neither sent nor tapped
        emit, emit_many = round_trip.checked(ts, w, emit, emit_many, spout)
    return emit, emit_many


def _choose(ts: TaskState, w: Wiring, *, spout: bool) -> tuple[fast.Emit, fast.EmitMany]:
    ts.root_plan = w.acks.root_plan(ts.task)
    plans = Plans(ts, w)
    route = fast.route_many(ts, w, plans)
    hold = fast.Hold(w.holding, route, fast.route_trees(ts, w, plans),
                     plans.source_of_single.__getitem__)
    assert ts.executor is not None
    checked = ts.executor.checks_threads
    general = fast.stream_emit(ts, w, plans, hold.values, hold.release, spout, checked)
    emit_many = fast.many_emit(ts, w, plans, general, hold, route, spout, checked)
    default = plans.by_stream.get("default")
    if spout or default is None:
        return general, emit_many
    choose0, src0, _, _, _ = default
    route0 = ts.routes["default"][0]
    if w.acking:
        emit = fast.anchored_default(ts, w, general, choose0, src0, route0.targets,
                                     route0.key_index, hold.values, checked)
    elif len(route0.targets) == 1 and route0.targets[0] in w.queues:
        emit = fast.plain_one(ts, general, w.queues[route0.targets[0]], src0, hold.values,
                              checked)
    else:
        key = route0.key_index if len(route0.targets) != 1 else None
        emit = fast.plain_default(ts, w, general, choose0, src0, key, hold.values, checked)
    return emit, emit_many
