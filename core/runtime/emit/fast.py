"""The emit fast paths: the shortcuts of :mod:`.general` for the commonest topology shapes,
and every place the emit paths build a :class:`~squall.api.tuple.Tuple` inline.

Which path a task gets is decided once, when its emit is built (the table in
:func:`squall.runtime.emit.make_emit`); each path re-checks only what a single call may
change (the stream, the options) and hands everything else to the general path. All of it
runs on the worker's loop thread. The tasks whose components may call from threads of their
own (``Executor.checks_threads``: spouts, bolts that ack themselves) get their paths built
with ``checked``: each call compares the calling thread with the loop's, and another's goes
to :func:`stream_emit`, which hands it to the loop (:mod:`squall.runtime.executors.handoff`).
Other tasks skip the compare on one flag: in every emit it cost word count 5 to 7 % more
instructions per word, per-tuple (2026-11-30).

Measured choices kept here (CPython 3.11; instructions per word from ``bench.instructions``):

* Tuples are built as ``new(T)`` and six slot stores (every slot of Tuple: keep them in step
  with ``Tuple.__slots__``). Calling ``T(...)`` runs ``__init__`` through CPython's generic slot
  path (about 900 instructions more per Tuple): per-tuple word count ran 5.6 % fewer
  instructions without it.
* The emit options are ordinary parameters after a marker (:data:`KEYWORDS`), not
  keyword-only ones: see :class:`_Keywords` (-5.1 % instructions per word, acking off).
* Closures with their collaborators bound as locals, not methods reading ``self``.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import reduce
from operator import itemgetter, xor
from threading import get_ident
from typing import TYPE_CHECKING, Any

from squall.api.tuple import Source, Tuple, TupleRun
from squall.runtime.emit.general import (
    ANCHOR_SEQUENCES, anchors_of, arity_error, emit_general, fast_edges, fast_random,
    grouping_failed, settled, values_list_of, values_of, without_settled,
)

if TYPE_CHECKING:
    from squall.runtime.emit import Plans, Wiring
    from squall.runtime.executors.handoff import Handoff
    from squall.runtime.task import TaskState

#: str keys an emitter remembers the local queue of (fields grouping on one field)
KEYED_QUEUES = 65536
#: ``emit_many`` values a task holds before routing them (see :class:`Hold`)
HOLD_CAP = 1024

Emit = Callable[..., "list[int] | None"]
EmitMany = Callable[..., None]


class _Keywords:
    """The default of the marker parameter that keeps the emit options keyword-only.

    CPython 3.11 fills each keyword-only parameter a call leaves out by looking it up in the
    function's ``__kwdefaults__`` dict, which made every ``emit(values)`` cost about 650
    machine instructions more than a call to the same function with positional defaults
    (about 5 % of a word's whole path in word count). So the loop's emit functions take their
    options as ordinary parameters after ``_kw``: a third positional argument lands in
    ``_kw`` and is refused, and the options still work only by keyword, as documented.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "<keyword arguments only>"


KEYWORDS = _Keywords()


def positional_options(fn: str = "emit", first: str = "values",
                       options: str = "anchors, tup_id, direct_task and need_task_ids"
                       ) -> TypeError:
    """The error for options passed by position to an emit function."""
    return TypeError(f"{fn}() takes at most 2 positional arguments ({first} and stream); "
                     f"pass {options} by keyword")


def handoff_of(ts: TaskState) -> Handoff:
    """How calls of ``ts``'s component from other threads reach the loop (its executor's)."""
    assert ts.executor is not None
    return ts.executor.handoff


# -- any stream: the task's emit -------------------------------------------------------------
def stream_emit(ts: TaskState, w: Wiring, plans: Plans, held: list[Any],
                release: Callable[[], None], spout: bool, checked: bool) -> Emit:
    """The emit of a spout, and of a bolt on any stream: streams with one subscriber and a
    single-target grouping (``plans``) take the inlined path; everything else goes through
    :func:`~.general.emit_general`. ``checked``: a call from another thread than the loop's
    is handed to the loop (:mod:`squall.runtime.executors.handoff`)."""
    queues_get = w.queues.get
    remote_values = w.outbox.send_values
    remote_tracked = w.outbox.send_tracked
    src_task = ts.task
    acking = w.acking
    rand = fast_random
    T = Tuple
    new = object.__new__
    clock = w.clock
    init_tree = w.acks.init_tree
    acker_tasks = w.acks.acker_tasks
    n_ackers = len(acker_tasks)
    root_bits, root_mul, root_home = ts.root_plan
    plans_get = plans.by_stream.get
    seqs = ANCHOR_SEQUENCES
    gate = handoff_of(ts)

    def emit(values: Sequence[Any], stream: str = "default", _kw: object = KEYWORDS,
             anchors: Any = None, tup_id: Any = None, direct_task: int | None = None,
             need_task_ids: bool = False) -> list[int] | None:
        if checked and get_ident() != gate.ident and not gate.here():  # another thread's
            return gate.emit(ts, emit, values, stream, _kw, anchors, tup_id, direct_task,
                             need_task_ids)
        if held:
            release()
        plan = plans_get(stream)
        if plan is None or direct_task is not None or need_task_ids or _kw is not KEYWORDS:
            if _kw is not KEYWORDS:
                raise positional_options()
            return emit_general(ts, w, values, stream, anchors, tup_id, direct_task,
                                need_task_ids, spout)
        choose, src, q, keyed, arity = plan
        if values.__class__ is not tuple:
            values = tuple(values) if values.__class__ is list else \
                values_of(ts, stream, values)
        if len(values) != arity:
            raise arity_error(ts, stream, src.fields, len(values))
        if spout:
            if tup_id is not None:
                if not acking:
                    return emit_general(ts, w, values, stream, anchors, tup_id, None, False,
                                        True)
                # a tracked tuple to one task: its edge is the whole tree's initial XOR
                ts.emitted += 1
                root = rand(root_bits) * root_mul + root_home
                edge = rand(64)
                try:                # costs nothing while nothing raises (CPython 3.11)
                    t = choose(values)
                except Exception as exc:
                    grouping_failed(ts, w, stream, exc, (root, tup_id))
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
                    remote_tracked(t, values, src_task, src, edge, (root,))
                ts.pending_new[root] = (tup_id, clock.turn)
                init_tree(ts, acker_tasks[root % n_ackers], root, edge)
                return None
            anchor = None
        elif not acking:
            anchor = None
        elif anchors is None:
            anchor = ts.current
        elif anchors.__class__ not in seqs:     # a generator, a set...: read once there
            return emit_general(ts, w, values, stream, anchors, None, None, False, False)
        elif len(anchors) == 1 and anchors[0].__class__ is T:
            anchor = anchors[0]
            if not anchor.roots:
                anchor = None
        elif not anchors:
            anchor = None
        else:
            return emit_general(ts, w, values, stream, anchors, None, None, False, False)
        if anchor is None:
            edge = roots = None
        elif anchor.id or not settled(ts, w, anchor, stream):
            edge = rand(64)
            anchor.ackval ^= edge
            roots = anchor.roots
        else:                   # acked or failed already: reported, and left out
            edge = roots = None
        ts.emitted += 1
        # the target: its queue in this worker, or its task id in another (a Tuple is built
        # only for a local queue; a remote one takes the values into its open run)
        if q is None:
            if keyed is not None:       # see plain_default below
                k = values[keyed[0]]
                if k.__class__ is str:
                    q = keyed[1].get(k)
                if q is None:
                    try:
                        t = choose(values)
                    except Exception as exc:
                        grouping_failed(ts, w, stream, exc)
                    q = queues_get(t)
                    if q is None:
                        q = t
                    if k.__class__ is str and len(keyed[1]) < KEYED_QUEUES:
                        keyed[1][k] = q
            else:
                try:
                    t = choose(values)
                except Exception as exc:
                    grouping_failed(ts, w, stream, exc)
                q = queues_get(t)
                if q is None:
                    q = t
            if q.__class__ is int:
                if roots is None:
                    remote_values(q, values, src_task, src)
                else:
                    remote_tracked(q, values, src_task, src, edge, roots)
                return None
        tup = new(T)
        tup.values = values
        tup.task = src_task
        tup.src = src
        tup.id = edge
        tup.roots = roots
        tup.ackval = 0
        q.append(tup)
        return None

    return emit


# -- emit_many -------------------------------------------------------------------------------
def route_many(ts: TaskState, w: Wiring, plans: Plans
               ) -> Callable[[Sequence[Any], str, Source, Tuple | None], None]:
    """How a task's ``emit_many`` routes a list of values (tuples) to its targets: runs
    where they take runs (a lazy_batch task here, any task elsewhere), a Tuple each in the
    queues of other tasks here."""
    queues_get = w.queues.get
    lazy_get = w.lazy.get
    remote = w.outbox.send_tuple
    remote_values = w.outbox.send_values
    send_values_run = w.outbox.send_values_run
    send_anchored = w.outbox.send_anchored
    run_cap = w.batch_size
    src_task = ts.task
    rand = fast_random
    T = Tuple
    new = object.__new__
    manys = plans.choose_many
    run_streams = plans.run_streams

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
                send_values_run(t, vals, src_task, src)
            else:
                send_anchored(t, vals, src_task, src, edge, anchor.roots)  # type: ignore[arg-type]
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

    def route(values_list: Sequence[Any], stream: str, src: Source,
              anchor: Tuple | None) -> None:
        n = len(values_list)
        try:
            targets = manys[stream](values_list)
        except Exception as exc:
            grouping_failed(ts, w, stream, exc)
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
                    remote_values(t, values, src_task, src)
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
                remote(t, T(values, src_task, src, edge, roots))
        anchor.ackval ^= xor

    return route


def route_trees(ts: TaskState, w: Wiring, plans: Plans
                ) -> Callable[[list[Any], list[int], list[int], str, Source], None]:
    """How a task routes held anchored values of several trees (``ids[i]`` and ``roots[i]``
    the edge and the one root of ``values[i]``): one grouping pass for all, then per target
    one run by tree (a lazy_batch task here, or a task in another worker) or a Tuple each.
    The lists are the hold's: what is queued here is a copy."""
    queues_get = w.queues.get
    lazy_get = w.lazy.get
    send_trees = w.outbox.send_trees
    src_task = ts.task
    manys = plans.choose_many
    by_tree = TupleRun.by_tree

    def deliver(t: int, vals: Sequence[Any], ids: Sequence[int], roots: Sequence[int],
                src: Source) -> None:
        lazy = lazy_get(t)
        if lazy is not None:
            lazy.queue.append(by_tree(list(vals), src_task, src, list(ids), list(roots)))
            lazy.run_extra += len(vals) - 1
            return
        q = queues_get(t)
        if q is None:
            send_trees(t, vals, src_task, src, ids, roots)    # type: ignore[arg-type]
        else:                       # a bolt here without lazy_batch: a Tuple each
            q.extend(by_tree(vals, src_task, src, ids, roots).tuples())  # type: ignore[arg-type]

    def route(values: list[Any], ids: list[int], roots: list[int], stream: str,
              src: Source) -> None:
        try:
            targets = manys[stream](values)
        except Exception as exc:
            grouping_failed(ts, w, stream, exc)
        first = targets[0]
        if targets.count(first) == len(targets):
            deliver(first, values, ids, roots, src)
            return
        buckets: dict[int, list[int]] = {}
        for i, t in enumerate(targets):
            bucket = buckets.get(t)
            if bucket is None:
                buckets[t] = [i]
            else:
                bucket.append(i)
        for t, at in buckets.items():
            if len(at) == 1:
                i = at[0]
                deliver(t, (values[i],), (ids[i],), (roots[i],), src)
            else:
                pick = itemgetter(*at)
                deliver(t, pick(values), pick(ids), pick(roots), src)

    return route


class Hold:
    """``emit_many`` values a task holds and routes together: a batch bolt's one call per
    input (about ten words each in word count) then costs one grouping pass and one run per
    target for all its inputs. :func:`many_emit` adds to ``values`` inline (a method call
    per ``emit_many`` measured 1 % of a batch word's instructions).

    Untracked values, or anchored ones on a stream that reaches another worker (each with
    its own edge, XORed into its anchor when it was held, and its anchor's one root, in
    ``ids`` and ``roots``): anchored values routed per call cost a run per anchor and
    target, about one word each once a sentence's words spread over many count tasks.
    The hold holds one kind at a time (``ids`` empty: untracked).

    Held values go out before anything else the task emits (every emit path calls
    :meth:`release` first while ``values`` is not empty, so each target sees them in emit
    order), when HOLD_CAP of them wait, and when the task's executor ends its pass (the
    loop). While ``values`` is not empty, ``release`` is in the worker's ``holding`` list:
    put there when ``values`` fills, taken out only by the loop, after emptying it."""

    __slots__ = ("holding", "ids", "release", "roots", "stream", "values")

    def __init__(self, holding: list[Callable[[], None]], route: Callable[..., None],
                 route_trees: Callable[..., None], source_of: Callable[[str], Source]) -> None:
        self.values: list[Any] = []
        self.ids: list[int] = []
        self.roots: list[int] = []
        self.stream = ""
        self.holding = holding
        values, ids, roots = self.values, self.ids, self.roots

        def release() -> None:
            if values:
                if ids:
                    route_trees(values, ids, roots, self.stream, source_of(self.stream))
                    ids.clear()
                    roots.clear()
                else:
                    route(values, self.stream, source_of(self.stream), None)
                values.clear()
        #: a closure, so that the emit paths call it without a bound-method allocation
        self.release = release


def many_emit(ts: TaskState, w: Wiring, plans: Plans, emit: Emit, hold: Hold,
              route: Callable[..., None], spout: bool, checked: bool) -> EmitMany:
    """A task's ``emit_many``: one grouping pass for the whole list on a stream with one
    single-target subscriber; else ``emit`` per item. ``checked``: as :func:`stream_emit`."""
    acking = w.acking
    singles_get = plans.source_of_single.get
    tree_streams = plans.tree_streams
    held = hold.values
    held_ids = hold.ids
    held_roots = hold.roots
    release = hold.release
    holding_append = hold.holding.append
    T = Tuple
    seqs = ANCHOR_SEQUENCES
    gate = handoff_of(ts)

    def emit_many(values_list: Sequence[Sequence[Any]], stream: str = "default",
                  _kw: object = KEYWORDS, anchors: Any = None) -> None:
        if checked and get_ident() != gate.ident and not gate.here():  # another thread's
            gate.emit_many(ts, emit_many, values_list, stream, _kw, anchors)
            return
        if _kw is not KEYWORDS:
            raise positional_options("emit_many", "values_list", "anchors")
        src = singles_get(stream)
        if src is None:
            if acking and not spout:    # anchors acked or failed already: reported once
                anchors = without_settled(ts, w, anchors, stream)
            for values in values_list_of(ts, stream, values_list):
                emit(values, stream, anchors=anchors)
            return
        if spout or not acking:     # a spout's emit_many is untracked (no tup_id)
            anchor = None
        elif anchors is None:
            anchor = ts.current
        elif anchors.__class__ not in seqs:     # a generator, a set...: as a list
            # the test costs given anchors 5 bytecodes a call: batch-on 137.5 -> 138.1 a
            # word, emits without anchors none (bench.bytecodes, 2026-12-01)
            emit_many(values_list, stream, _kw, anchors_of(ts, anchors))
            return
        elif len(anchors) == 1 and anchors[0].__class__ is T:
            anchor = anchors[0] if anchors[0].roots else None
        elif not anchors:
            anchor = None
        else:
            anchors = without_settled(ts, w, anchors, stream)     # reported once
            for values in values_list_of(ts, stream, values_list):
                emit(values, stream, anchors=anchors)
            return
        if anchor is not None and not anchor.id and settled(ts, w, anchor, stream):
            anchor = None           # acked or failed already: reported, and left out
        try:
            n = len(values_list)
        except TypeError:           # a generator, a map...: read once, as a list (the try
            # costs a sized values_list nothing: CPython 3.11's exceptions are zero-cost)
            values_list = values_list_of(ts, stream, values_list)
            n = len(values_list)
        if not n:
            return
        arity = len(src.fields)
        if list(map(len, values_list)).count(arity) != n:
            bad = next(v for v in values_list if len(v) != arity)
            if bad.__class__ is not tuple and bad.__class__ is not list:
                values_of(ts, stream, bad)      # a str, a dict...: raises what it is
            raise arity_error(ts, stream, src.fields, len(bad))
        if list(map(type, values_list)).count(tuple) != n:     # runs and held values: tuples
            values_list = [v if v.__class__ is tuple else tuple(v) if v.__class__ is list
                           else values_of(ts, stream, v) for v in values_list]
        ts.emitted += n
        if n < HOLD_CAP:
            # untracked values, and anchored ones on a stream that reaches another worker,
            # wait in the hold (one kind at a time)
            if anchor is None:
                holds = True
            else:
                roots = anchor.roots
                holds = stream in tree_streams and roots.__class__ is tuple and len(roots) == 1
            if holds:
                tracked = anchor is not None
                if anchor is not None:
                    # each value's own edge, all XORed into the anchor now: it may be acked
                    # before the loop routes what is held
                    edges = fast_edges(n)
                    anchor.ackval ^= reduce(xor, edges)
                if not held:
                    holding_append(release)
                elif hold.stream != stream or bool(held_ids) is not tracked:
                    release()               # still registered: the loop has not run since
                hold.stream = stream
                held.extend(values_list)
                if tracked:
                    held_ids.extend(edges)
                    held_roots.extend(roots * n)
                if len(held) >= HOLD_CAP:
                    release()
                return
        if held:
            release()
        route(values_list, stream, src, anchor)

    return emit_many


# -- a bolt's default stream with one single-target subscriber --------------------------------
def plain_one(ts: TaskState, general: Emit, q0: Any, src0: Source, held: list[Any],
              checked: bool) -> Emit:
    """A bolt without ackers whose default stream's one subscriber has one task, in this
    worker: every grouping picks it, so an emit is a Tuple and an append. ``checked``: a call
    from another thread than the loop's goes to ``general``, which hands it over."""
    src_task = ts.task
    arity = len(src0.fields)
    T = Tuple
    new = object.__new__
    gate = handoff_of(ts)

    def emit_one(values: Sequence[Any], stream: str = "default", _kw: object = KEYWORDS,
                 anchors: Any = None, tup_id: Any = None, direct_task: int | None = None,
                 need_task_ids: bool = False) -> list[int] | None:
        if (stream != "default" or direct_task is not None or need_task_ids or held
                or _kw is not KEYWORDS or checked and get_ident() != gate.ident):
            return general(values, stream, _kw, anchors, tup_id, direct_task, need_task_ids)
        if values.__class__ is not tuple:
            values = tuple(values) if values.__class__ is list else \
                values_of(ts, stream, values)
        if len(values) != arity:
            raise arity_error(ts, stream, src0.fields, len(values))
        ts.emitted += 1
        tup = new(T)
        tup.values = values
        tup.task = src_task
        tup.src = src0
        tup.id = tup.roots = None
        tup.ackval = 0
        q0.append(tup)
        return None

    return emit_one


def plain_default(ts: TaskState, w: Wiring, general: Emit, choose0: Callable[[tuple], int],
                  src0: Source, key: int | None, held: list[Any], checked: bool) -> Emit:
    """A bolt without ackers emitting on a default stream with one single-target
    subscriber: the commonest hot path, with nothing else to check. With a fields grouping
    on one field (``key``), a str key seen before finds its task's queue (a task in this
    worker) or its task id (another worker's) in one lookup; other keys, and other
    groupings, choose through the grouping. ``checked``: as :func:`plain_one`."""
    queues_get = w.queues.get
    remote_values = w.outbox.send_values
    flush_task = w.outbox.flush_task
    run_cap = w.outbox.run_cap
    runs: dict[int, Any] = {}       # remote task -> the open run it last joined
    runs_get = runs.get
    src_task = ts.task
    T = Tuple
    new = object.__new__
    keyed: dict[str, Any] = {}
    keyed_get = keyed.get
    arity = len(src0.fields)
    gate = handoff_of(ts)

    def emit_default(values: Sequence[Any], stream: str = "default", _kw: object = KEYWORDS,
                     anchors: Any = None, tup_id: Any = None, direct_task: int | None = None,
                     need_task_ids: bool = False) -> list[int] | None:
        if (stream != "default" or direct_task is not None or need_task_ids or held
                or _kw is not KEYWORDS or checked and get_ident() != gate.ident):
            return general(values, stream, _kw, anchors, tup_id, direct_task, need_task_ids)
        if values.__class__ is not tuple:
            values = tuple(values) if values.__class__ is list else \
                values_of(ts, stream, values)
        if len(values) != arity:
            raise arity_error(ts, stream, src0.fields, len(values))
        ts.emitted += 1
        k = None
        if key is not None:
            k = values[key]
            if k.__class__ is str:
                q = keyed_get(k)
                if q is not None:
                    if q.__class__ is int:
                        # another worker's task: straight into the open run this emit last
                        # joined while the outbox keeps it open (Outbox.open_run), not a
                        # call per tuple: CPU per word W = 2 1.065 -> 1.02 us, W = 4 1.48
                        # -> 1.385, W = 8 1.585 -> 1.52 (bench.scale, per-tuple off, 4
                        # alternated pairs each); the same for anchored tuples was dearer
                        # at W = 8 and not kept
                        run = runs_get(q)
                        if run is not None and run.open:
                            vals = run.values
                            vals.append(values)
                            if len(vals) >= run_cap:
                                flush_task(q)
                        else:
                            runs[q] = remote_values(q, values, src_task, src0)
                    else:
                        tup = new(T)
                        tup.values = values
                        tup.task = src_task
                        tup.src = src0
                        tup.id = tup.roots = None
                        tup.ackval = 0
                        q.append(tup)
                    return None
        try:
            t = choose0(values)
        except Exception as exc:
            grouping_failed(ts, w, stream, exc)
        q = queues_get(t)
        if k.__class__ is str and len(keyed) < KEYED_QUEUES:
            keyed[k] = t if q is None else q        # type: ignore[index]
        if q is not None:
            tup = new(T)
            tup.values = values
            tup.task = src_task
            tup.src = src0
            tup.id = tup.roots = None
            tup.ackval = 0
            q.append(tup)
        else:
            runs[t] = remote_values(t, values, src_task, src0)
        return None

    return emit_default


def anchored_default(ts: TaskState, w: Wiring, general: Emit, choose0: Callable[[tuple], int],
                     src0: Source, targets0: list[int], key: int | None,
                     held: list[Any], checked: bool) -> Emit:
    """A bolt in a topology with ackers whose default stream has one single-target
    subscriber: an emit anchored to one tuple (the one in process, or ``anchors=[tup]``) on
    that stream skips the general emit's per-stream lookups and checks. ``checked``: as
    :func:`plain_one`."""
    queues_get = w.queues.get
    remote_tracked = w.outbox.send_tracked
    src_task = ts.task
    rand = fast_random
    T = Tuple
    new = object.__new__
    q0 = queues_get(targets0[0]) if len(targets0) == 1 else None
    keyed: dict[str, Any] = {}      # as plain_default's: str key -> queue or task id
    keyed_get = keyed.get
    arity = len(src0.fields)
    seqs = ANCHOR_SEQUENCES
    gate = handoff_of(ts)

    def emit_anchored(values: Sequence[Any], stream: str = "default", _kw: object = KEYWORDS,
                      anchors: Any = None, tup_id: Any = None, direct_task: int | None = None,
                      need_task_ids: bool = False) -> list[int] | None:
        if (stream != "default" or direct_task is not None or need_task_ids or held
                or _kw is not KEYWORDS or checked and get_ident() != gate.ident):
            return general(values, stream, _kw, anchors, tup_id, direct_task, need_task_ids)
        if anchors is None:
            anchor = ts.current
        elif anchors.__class__ not in seqs:     # a generator, a set...: the general path's
            anchor = None
        elif len(anchors) == 1 and anchors[0].__class__ is T:
            anchor = anchors[0]
        else:
            anchor = None
        if anchor is None or not anchor.roots:
            return general(values, stream, _kw, anchors, tup_id, direct_task, need_task_ids)
        if not anchor.id and settled(ts, w, anchor, stream):
            # acked or failed already: reported, and the emit goes out without it. The
            # test costs 3 bytecodes, about 60 instructions an emit (callgrind), 0.4 % of
            # per-tuple word count's (bench.bytecodes: 98 -> 101 here, 2026-11-30)
            return general(values, stream, _kw, (), tup_id, direct_task, need_task_ids)
        if values.__class__ is not tuple:
            values = tuple(values) if values.__class__ is list else \
                values_of(ts, stream, values)
        if len(values) != arity:
            raise arity_error(ts, stream, src0.fields, len(values))
        ts.emitted += 1
        edge = rand(64)
        anchor.ackval ^= edge
        roots = anchor.roots
        q = q0
        if q is None:
            k = values[key] if key is not None else None
            if k.__class__ is str:
                q = keyed_get(k)
            if q is None:
                try:
                    t = choose0(values)
                except Exception as exc:
                    grouping_failed(ts, w, stream, exc)
                q = queues_get(t)
                if q is None:
                    q = t
                if k.__class__ is str and len(keyed) < KEYED_QUEUES:
                    keyed[k] = q        # type: ignore[index]
            if q.__class__ is int:
                remote_tracked(q, values, src_task, src0, edge, roots)
                return None
        tup = new(T)
        tup.values = values
        tup.task = src_task
        tup.src = src0
        tup.id = edge
        tup.roots = roots
        tup.ackval = 0
        q.append(tup)  # type: ignore[union-attr]
        return None

    return emit_anchored
