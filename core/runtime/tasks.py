"""Per-task state and the emit functions installed on component instances.

Everything here runs on the worker's loop thread. ``make_emit`` builds one closure per task
with the task's routes, source descriptors and delivery function bound as locals: the emit of
a tuple to a task in the same worker is a grouping choice, one :class:`Tuple` allocation and a
``deque.append`` — no locks, no logging, no hook calls.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from squall.api.tuple import Source, Tuple, TupleRun
from squall.runtime.emit_general import _emit_general, _fast
from squall.runtime.emit_paths import KEYED_QUEUES, KEYWORDS, anchored_default, positional_options
from squall.runtime.routing import Route, choose_many_of, make_grouping

if TYPE_CHECKING:
    from squall.runtime.worker import Worker

ACK_INIT, ACK_ACK, ACK_FAIL = "__ack_init", "__ack_ack", "__ack_fail"
#: untracked ``emit_many`` values a task holds before routing them (see ``make_emit``)
HOLD_CAP = 1024
METRICS_STREAM = "__metrics"


class TaskState:
    """One task: its component instance, inbound queue, routes and counters."""

    def __init__(self, worker: Worker, component_id: str, task: int, instance: Any,
                 conf: dict[str, Any]) -> None:
        self.worker = worker
        self.component_id = component_id
        self.task = task
        self.instance = instance
        self.conf = conf
        self.queue: deque[Tuple] = deque()
        self.routes: dict[str, list[Route]] = {}
        self.sources: dict[str, Source] = {}
        self.current: Tuple | None = None
        #: tick tuples that may be queued: counted down as a bolt runs them (a batch takes
        #: them all); while 0, a bolt's pass need not look for them
        self.ticks = 0
        self.run_extra = 0           # tuples in queued TupleRuns beyond one per run
        self.pass_cap = 0            # most tuples one pass may take (set from measured cost)
        # counters, folded into stats on a timer
        self.emitted = 0
        #: transferred = emitted + transfer_extra: an emit to one task (every fast path) is
        #: counted once, by ``emitted``; the general path adds its targets beyond one here
        self.transfer_extra = 0
        self.acked = 0
        self.failed = 0
        self.executed = 0
        self.exec_ms = 0.0
        self.exec_n = 0
        #: process latency: (ms, samples); see BoltExecutor.run_once and ack_function
        self.proc_ms = 0.0
        self.proc_n = 0
        #: tuples of a bolt without auto_ack sampled for process latency: id -> (tuple, start)
        self.samples: dict[int, tuple[Any, float]] = {}
        self.complete_ms = 0.0
        self.complete_n = 0
        #: how this task (a spout) draws root ids: ``rand(bits) * mul + home`` (see
        #: Acking.root_plan); set by make_emit
        self.root_plan = (64, 1, 0)

    @property
    def transferred(self) -> int:
        """Tuples sent to tasks by this task's emits (one per target task, local or remote)."""
        return self.emitted + self.transfer_extra

    def build_routes(self, context: Any) -> None:
        topo = self.worker.topology
        spec = topo.components[self.component_id]
        for name, stream in spec.streams.items():
            self.sources[name] = self.worker.source(self.component_id, name)
            routes = []
            for sub_id, inp in topo.subscribers(self.component_id, name):
                grouping = make_grouping(inp, stream.fields, self.conf)
                targets = topo.tasks(sub_id)
                if grouping is not None:
                    grouping.prepare(context, (self.component_id, name), targets)
                routes.append(Route(sub_id, grouping, inp.grouping == "direct", targets))
            self.routes[name] = routes

    def counters(self) -> dict[str, Any]:
        return {"emitted": self.emitted, "transferred": self.transferred, "acked": self.acked,
                "failed": self.failed, "executed": self.executed,
                "execute_ms": (self.exec_ms, self.exec_n),
                "process_ms": (self.proc_ms, self.proc_n),
                "complete_ms": (self.complete_ms, self.complete_n)}


def make_emit(ts: TaskState, *, spout: bool) -> Callable[..., list[int] | None]:
    """The ``emit`` of one task (see :meth:`squall.Component.emit`).

    Streams with one subscriber and a single-target grouping (shuffle, fields, global, ...)
    take an inlined fast path; everything else goes through :func:`_emit_general`.
    """
    worker = ts.worker
    queues_get = worker.queues.get
    remote = worker.send_remote
    remote_values = worker.transfer.send_values
    remote_tracked = worker.transfer.send_tracked
    src_task = ts.task
    acking = worker.acking
    rand = _fast
    T = Tuple
    # Tuples are built as ``new(T)`` and six slot stores (every slot of Tuple: keep them in
    # step with Tuple.__slots__). Calling ``T(...)`` runs ``__init__`` through CPython 3.11's
    # generic slot path (about 900 instructions more per Tuple): per-tuple word count ran
    # 5.6 % fewer instructions without it.
    new = object.__new__
    acker_tasks = worker.acker_tasks
    n_ackers = len(acker_tasks)
    init_tree = worker.init_tree
    root_bits, root_mul, root_home = ts.root_plan = worker.root_plan(src_task)
    singles: dict[str, tuple[Callable[[tuple], int], Source]] = {}
    manys: dict[str, Callable[[Sequence[Sequence[Any]]], list[int]]] = {}
    #: streams whose one subscriber has one task, in this worker: its queue (no choosing)
    fixed: dict[str, Any] = {}
    #: streams whose one subscriber is fields-grouped on one field: (that field's index, str
    #: key -> its task's queue in this worker, or its task id in another worker)
    keyed_of: dict[str, tuple[int, dict[str, Any]]] = {}
    for name, routes in ts.routes.items():
        if len(routes) == 1 and routes[0].one is not None and not routes[0].direct:
            singles[name] = (routes[0].one, ts.sources[name])
            manys[name] = choose_many_of(routes[0])
            if len(routes[0].targets) == 1:
                fixed[name] = queues_get(routes[0].targets[0])
            elif routes[0].key_index is not None:
                keyed_of[name] = (routes[0].key_index, {})
    singles_get = singles.get
    #: what emit needs of a stream in one lookup: (choose_one, source, the fixed queue or
    #: None, the keyed entry or None)
    plans = {name: (one, src, fixed.get(name), keyed_of.get(name))
             for name, (one, src) in singles.items()}
    plans_get = plans.get
    lazy_tasks = worker.lazy_tasks
    lazy_get = lazy_tasks.get
    run_cap = worker.batch_size
    send_values_run = worker.transfer.send_values_run
    send_anchored = worker.transfer.send_anchored
    #: streams with a target that takes runs (a lazy_batch task here, or any remote task)
    run_streams = {name for name, routes in ts.routes.items() if name in singles and any(
        t in lazy_tasks or t not in worker.queues for t in routes[0].targets)}

    def to_run(t: int, vals: list[Any], src: Source, anchor: Tuple | None) -> bool:
        """Queue ``vals`` (tuples) for task ``t`` as one TupleRun; False if ``t`` takes no
        runs."""
        lazy = lazy_get(t)
        if lazy is None and queues_get(t) is not None:
            return False
        if anchor is not None:
            # one random edge for the whole run; TupleRun.tuples() splits it if needed
            edge = rand(64)
            anchor.ackval ^= edge
        if lazy is None:            # another worker's task
            if anchor is None:
                send_values_run(ts, t, vals, src_task, src)
            else:
                send_anchored(t, vals, src_task, src, edge, anchor.roots)
            return True
        q = lazy.queue
        if anchor is None:
            if q:
                last = q[-1]
                if (last.__class__ is TupleRun and last.roots is None and last.src is src
                        and last.task == src_task and len(last.values) < run_cap):
                    last.values.extend(vals)
                    lazy.run_extra += len(vals)
                    return True
            run = TupleRun(vals, src_task, src)
        else:
            run = TupleRun(vals, src_task, src, anchor.roots, edge)
        q.append(run)
        lazy.run_extra += len(vals) - 1
        return True

    def emit(values: Sequence[Any], stream: str = "default", _kw: object = KEYWORDS,
             anchors: Any = None, tup_id: Any = None, direct_task: int | None = None,
             need_task_ids: bool = False) -> list[int] | None:
        if held:
            release()
        plan = plans_get(stream)
        if plan is None or direct_task is not None or need_task_ids or _kw is not KEYWORDS:
            if _kw is not KEYWORDS:
                raise positional_options()
            return _emit_general(ts, values, stream, anchors, tup_id, direct_task,
                                 need_task_ids, spout)
        choose, src, q, keyed = plan
        if values.__class__ is not tuple:
            values = tuple(values)
        if spout:
            if tup_id is not None:
                if not acking:
                    return _emit_general(ts, values, stream, anchors, tup_id, None, False, True)
                # a tracked tuple to one task: its edge is the whole tree's initial XOR
                ts.emitted += 1
                root = rand(root_bits) * root_mul + root_home
                edge = rand(64)
                t = choose(values)
                q = queues_get(t)
                if q is not None:
                    tup = new(T)
                    tup.values = values
                    tup.task = src_task
                    tup.src = src
                    tup.id = edge
                    tup.roots = (root,)
                    tup.ackval = 0
                    q.append(tup)
                else:
                    remote_tracked(ts, t, values, src_task, src, edge, (root,))
                ts.pending_new[root] = (tup_id, worker.now)  # type: ignore[attr-defined]
                init_tree(ts, acker_tasks[root % n_ackers], root, edge)
                return None
            anchor = None
        elif not acking:
            anchor = None
        elif anchors is None:
            anchor = ts.current
        elif len(anchors) == 1 and anchors[0].__class__ is T:
            anchor = anchors[0]
            if not anchor.roots:
                anchor = None
        elif not anchors:
            anchor = None
        else:
            return _emit_general(ts, values, stream, anchors, None, None, False, False)
        ts.emitted += 1
        if anchor is None:
            edge = roots = None
        else:
            edge = rand(64)
            anchor.ackval ^= edge
            roots = anchor.roots
        # the target: its queue in this worker, or its task id in another (a Tuple is built
        # only for a local queue; a remote one takes the values into its open run)
        if q is None:
            if keyed is not None:       # see emit_default below
                k = values[keyed[0]]
                if k.__class__ is str:
                    q = keyed[1].get(k)
                if q is None:
                    t = choose(values)
                    q = queues_get(t)
                    if q is None:
                        q = t
                    if k.__class__ is str and len(keyed[1]) < KEYED_QUEUES:
                        keyed[1][k] = q
            else:
                t = choose(values)
                q = queues_get(t)
                if q is None:
                    q = t
            if q.__class__ is int:
                if roots is None:
                    remote_values(ts, q, values, src_task, src)
                else:
                    remote_tracked(ts, q, values, src_task, src, edge, roots)
                return None
        tup = new(T)
        tup.values = values
        tup.task = src_task
        tup.src = src
        tup.id = edge
        tup.roots = roots
        tup.ackval = 0
        q.append(tup)  # type: ignore[union-attr]
        return None

    # Untracked emit_many values are held and routed together: a batch bolt's one call per
    # input (about ten words each in word count) then costs one grouping pass and one run per
    # target for all its inputs. Held values go out before anything else this task emits
    # (every emit path calls release first, so each target sees them in emit order), when
    # HOLD_CAP of them wait, and when the task's executor ends its pass (Worker._loop).
    # While held is not empty, release is in worker.held_emits: it is put there when held
    # fills, and only the loop takes it out, after emptying held.
    held: list[Any] = []
    held_stream = ""
    holding = worker.held_emits

    def release() -> None:
        if held:
            route_many(held, held_stream, singles[held_stream][1], None)
            held.clear()

    def emit_many(values_list: Sequence[Sequence[Any]], stream: str = "default",
                  _kw: object = KEYWORDS, anchors: Any = None) -> None:
        nonlocal held_stream
        if _kw is not KEYWORDS:
            raise positional_options("emit_many", "values_list", "anchors")
        single = singles_get(stream)
        if single is None:
            for values in values_list:
                emit(values, stream, anchors=anchors)
            return
        if spout or not acking:     # a spout's emit_many is untracked (no tup_id)
            anchor = None
        elif anchors is None:
            anchor = ts.current
        elif len(anchors) == 1 and anchors[0].__class__ is T:
            anchor = anchors[0] if anchors[0].roots else None
        elif not anchors:
            anchor = None
        else:
            for values in values_list:
                emit(values, stream, anchors=anchors)
            return
        n = len(values_list)
        if not n:
            return
        ts.emitted += n
        if list(map(type, values_list)).count(tuple) != n:     # runs and held values: tuples
            values_list = [v if v.__class__ is tuple else tuple(v) for v in values_list]
        if anchor is None and n < HOLD_CAP:
            if not held:
                holding.append(release)
            elif held_stream != stream:
                release()               # still registered: the loop has not run since
            held_stream = stream
            held.extend(values_list)
            if len(held) >= HOLD_CAP:
                release()
            return
        if held:
            release()
        route_many(values_list, stream, single[1], anchor)

    def route_many(values_list: Sequence[Any], stream: str, src: Source,
                   anchor: Tuple | None) -> None:
        """Route ``values_list`` (tuples) to its targets: runs where they take runs."""
        n = len(values_list)
        targets = manys[stream](values_list)
        if stream in run_streams:
            first = targets[0]
            if targets.count(first) == n:
                if to_run(first, list(values_list), src, anchor):
                    return
            else:
                buckets: dict[int, list[Any]] = {}
                for values, t in zip(values_list, targets):
                    bucket = buckets.get(t)
                    if bucket is None:
                        buckets[t] = [values]
                    else:
                        bucket.append(values)
                rest = [(t, vals) for t, vals in buckets.items()
                        if not to_run(t, vals, src, anchor)]
                if not rest:
                    return
                # local tasks of bolts without lazy_batch: one Tuple each, below
                values_list = [values for _, vals in rest for values in vals]
                targets = [t for t, vals in rest for _ in vals]
        if anchor is None:
            for values, t in zip(values_list, targets):
                q = queues_get(t)
                if q is not None:
                    tup = new(T)
                    tup.values = values
                    tup.task = src_task
                    tup.src = src
                    tup.id = tup.roots = None
                    tup.ackval = 0
                    q.append(tup)
                else:
                    remote_values(ts, t, values, src_task, src)
            return
        roots = anchor.roots
        xor = 0
        for values, t in zip(values_list, targets):
            edge = rand(64)
            xor ^= edge
            q = queues_get(t)
            if q is not None:
                tup = new(T)
                tup.values = values
                tup.task = src_task
                tup.src = src
                tup.id = edge
                tup.roots = roots
                tup.ackval = 0
                q.append(tup)
            else:
                remote(ts, t, T(values, src_task, src, edge, roots))
        anchor.ackval ^= xor

    default = singles.get("default")
    if spout or default is None:
        emit.many = emit_many  # type: ignore[attr-defined]
        return emit
    general = emit
    choose0, src0 = default
    if acking:
        return anchored_default(ts, general, emit_many, choose0, src0, held)
    # a bolt in a topology without ackers, emitting on a default stream with one
    # single-target subscriber: the commonest hot path, with nothing else to check
    targets0 = ts.routes["default"][0].targets
    if len(targets0) == 1 and queues_get(targets0[0]) is not None:
        # one task to choose from, in this worker: every grouping picks it
        q0 = queues_get(targets0[0])

        def emit_one(values: Sequence[Any], stream: str = "default", _kw: object = KEYWORDS,
                     anchors: Any = None, tup_id: Any = None, direct_task: int | None = None,
                     need_task_ids: bool = False) -> list[int] | None:
            if (stream != "default" or direct_task is not None or need_task_ids or held
                    or _kw is not KEYWORDS):
                return general(values, stream, _kw, anchors, tup_id, direct_task, need_task_ids)
            ts.emitted += 1
            tup = new(T)
            tup.values = values if values.__class__ is tuple else tuple(values)
            tup.task = src_task
            tup.src = src0
            tup.id = tup.roots = None
            tup.ackval = 0
            q0.append(tup)
            return None

        emit_one.many = emit_many  # type: ignore[attr-defined]
        return emit_one

    # a fields grouping on one field: a str key seen before finds its task's queue (a task in
    # this worker) or its task id (another worker's) in one lookup; other keys, and other
    # groupings, choose through the grouping
    key, keyed = keyed_of.get("default", (None, {}))
    keyed_get = keyed.get

    def emit_default(values: Sequence[Any], stream: str = "default", _kw: object = KEYWORDS,
                     anchors: Any = None, tup_id: Any = None, direct_task: int | None = None,
                     need_task_ids: bool = False) -> list[int] | None:
        if (stream != "default" or direct_task is not None or need_task_ids or held
                or _kw is not KEYWORDS):
            return general(values, stream, _kw, anchors, tup_id, direct_task, need_task_ids)
        if values.__class__ is not tuple:
            values = tuple(values)
        ts.emitted += 1
        k = None
        if key is not None:
            k = values[key]
            if k.__class__ is str:
                q = keyed_get(k)
                if q is not None:
                    if q.__class__ is int:
                        remote_values(ts, q, values, src_task, src0)
                    else:
                        tup = new(T)
                        tup.values = values
                        tup.task = src_task
                        tup.src = src0
                        tup.id = tup.roots = None
                        tup.ackval = 0
                        q.append(tup)
                    return None
        t = choose0(values)
        q = queues_get(t)
        if k.__class__ is str and len(keyed) < KEYED_QUEUES:
            keyed[k] = t if q is None else q
        if q is not None:
            tup = new(T)
            tup.values = values
            tup.task = src_task
            tup.src = src0
            tup.id = tup.roots = None
            tup.ackval = 0
            q.append(tup)
        else:
            remote_values(ts, t, values, src_task, src0)
        return None

    emit_default.many = emit_many  # type: ignore[attr-defined]
    return emit_default
