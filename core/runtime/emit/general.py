"""The general emit path: every emit the fast paths (:mod:`.fast`) do not shortcut.

Several subscribers, direct streams, ``need_task_ids``, several anchors, undeclared streams
and values that do not match the stream's fields (which raise), ``stream=None`` (the default
stream) and tracked spout tuples without a one-target shortcut all come here. Runs on
the worker's loop thread.
"""
from __future__ import annotations

import random
from array import array
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any, NoReturn

from squall.api.tuple import Source, Tuple
from squall.errors import TopologyError

if TYPE_CHECKING:
    from squall.runtime.emit import Wiring
    from squall.runtime.routing import Route
    from squall.runtime.task import TaskState

_rand64 = random.SystemRandom().getrandbits  # seeds only; per-tuple ids use the fast PRNG below
#: edge and root ids: random 64-bit values from a PRNG seeded from the system's
_fast = random.Random(_rand64(64))
fast_random = _fast.getrandbits
_fast_bytes = _fast.randbytes


def fast_edges(n: int) -> list[int]:
    """``n`` random 64-bit edge ids from the same PRNG, made in C (eight random bytes
    each): at ten ids 16 % less than ``n`` calls of ``fast_random`` in a list
    comprehension, 37 % less at a hundred, 34 % more at one (timeit, 2026-11-28)."""
    return array("Q", _fast_bytes(n << 3)).tolist()


def _route_failed(ts: TaskState, w: Wiring, stream: str, route: Route,
                  exc: Exception) -> NoReturn:
    """Raise what routing one emit to ``route`` raised: on a direct route (no grouping; its
    misuses were refused by :func:`routes_of` before) as it is; anything a grouping raised
    (or a choice that is no list of task ids) as a TopologyError naming the emitting
    component, the stream and the grouping's class, recorded now as the component's error
    (it may catch what its emit raises) and once only (see
    :class:`squall.runtime.errors.ErrorLog`). Off the emit paths: called from their
    ``except`` clauses, which cost nothing while nothing raises."""
    if route.grouping is None:
        raise exc
    g = type(route.grouping)
    err = TopologyError(f"component {ts.component_id!r} stream {stream!r}: grouping "
                        f"{g.__module__}.{g.__qualname__} (subscriber {route.component!r}) "
                        f"failed choosing tasks: {type(exc).__name__}: {exc}")
    err.__cause__ = exc
    w.report(ts, err)
    raise err


def _fail_tree(ts: TaskState, w: Wiring, root: int, tup_id: Any, xor: int) -> None:
    """A spout's new tree whose emit raised while routing: subscribers before the failing
    route may have the tuple, so the tree fails as a whole and the spout gets
    fail(tup_id) (its replay decision), as a bolt's input fails when its emit raises. The
    fail goes first; the init (``xor``: the edges delivered) then completes the tree."""
    ts.pending_new[root] = (tup_id, w.clock.turn)
    acker = w.acks.acker_of(root)
    w.acks.fail_tree(acker, root)
    w.acks.init_tree(ts, acker, root, xor)


def fail_new_tree(ts: TaskState, w: Wiring, tup_id: Any) -> None:
    """A spout's tracked emit that delivered nothing (values :mod:`.round_trip` refused): a
    tree of its own that fails at once, so the spout gets ``fail(tup_id)``."""
    bits, mul, home = ts.root_plan
    _fail_tree(ts, w, fast_random(bits) * mul + home, tup_id, 0)


def grouping_failed(ts: TaskState, w: Wiring, stream: str, exc: Exception,
                    spout_tree: tuple[int, Any] | None = None) -> NoReturn:
    """What the fast paths (:mod:`.fast`, streams with one subscriber) do when its grouping
    raised: as the general path does, fail the spout's new tree ``(root, tup_id)`` if there
    is one, and raise the error naming the grouping."""
    if spout_tree is not None:
        _fail_tree(ts, w, spout_tree[0], spout_tree[1], 0)
    _route_failed(ts, w, stream, ts.routes[stream][0], exc)


def _targets(route: Route, src_task: int, values: tuple, direct_task: int | None
             ) -> Sequence[int]:
    if route.direct:
        # several components may subscribe to one direct stream: only the one owning
        # direct_task gets the tuple (routes_of checks that one does, and that it is given)
        return (direct_task,) if direct_task is not None and direct_task in route.targets \
            else ()
    if route.one is not None:
        return (route.one(values),)
    assert route.many is not None      # only direct routes have no grouping
    return route.many(src_task, values)


def routes_of(ts: TaskState, stream: str, direct_task: int | None) -> list[Route]:
    """The routes of ``stream``; raises for an undeclared stream, a direct stream's emit
    without ``direct_task`` or with a task that none of its subscribers has (or that is no
    ``int``: ``True`` or ``2.0`` equal to one is refused too), and ``direct_task`` on a stream
    not declared direct (subscribed to or not). Every emit path calls it before it sends
    anything or starts a spout's tree, so an emit refused here is not failed: the caller gets
    the error alone. Every route of a direct stream is direct (the builder refuses other
    groupings on it); an emit without ``direct_task`` pays one test of the first route."""
    routes = ts.routes.get(stream)
    if routes is None:
        raise TopologyError(f"component {ts.component_id!r} emitted on undeclared stream "
                            f"{stream!r}; declared: {', '.join(sorted(ts.routes)) or 'none'}")
    if direct_task is not None:
        if not ts.sources[stream].direct:
            raise TopologyError(f"component {ts.component_id!r}: direct_task given on stream "
                                f"{stream!r}, which is not declared direct=True")
        if direct_task.__class__ is not int or routes and not any(
                direct_task in r.targets for r in routes):
            kind = "" if direct_task.__class__ is int else \
                f" (a {type(direct_task).__name__}, not an int)"
            subscribers = ", ".join(f"{r.component}: {r.targets}" for r in routes)
            raise TopologyError(f"component {ts.component_id!r}: direct_task {direct_task!r}"
                                f"{kind} is not a task of a component subscribed to stream "
                                f"{stream!r} ({subscribers or 'none'})")
    elif routes and routes[0].direct:
        raise TopologyError(f"component {ts.component_id!r}: stream {stream!r} is direct; "
                            "emit with direct_task=")
    return routes


def arity_error(ts: TaskState, stream: str, fields: Sequence[str], n: int) -> TopologyError:
    """The error for an emit of ``n`` values on a stream that declares ``fields``."""
    return TopologyError(f"component {ts.component_id!r} emitted {n} value(s) on stream "
                         f"{stream!r}, which declares {len(fields)} field(s) {list(fields)}")


#: what an emit's values may not be: one value whose items are not the values meant (a str
#: split into its characters, bytes into ints: ``emit(word)`` for ``emit([word])``), a
#: mapping (its keys) or a set (no order)
NOT_VALUES = (str, bytes, bytearray, memoryview, Mapping, AbstractSet)


def values_of(ts: TaskState, stream: str, values: Any) -> tuple:
    """The values of an emit given neither as a tuple nor as a list, as a tuple: any other
    sequence or iterable, in its order. Raises TopologyError for a str, bytes, a mapping, a
    set (:data:`NOT_VALUES`) or something not iterable. Off the emit paths: each takes a
    tuple as it is and turns a list into one inline, and calls this for anything else."""
    if not isinstance(values, NOT_VALUES):
        try:
            it = iter(values)
        except TypeError:
            pass
        else:
            return tuple(it)
    raise TopologyError(f"component {ts.component_id!r} emitted a {type(values).__name__} "
                        f"on stream {stream!r} ({values!r:.60}): emit takes a list or tuple "
                        "of values, one per declared field, e.g. emit([value])")


def values_list_of(ts: TaskState, stream: str, values_list: Any) -> Sequence[Any]:
    """The ``values_list`` of one ``emit_many`` as something ``len`` and a second reading
    take: a sized collection as it is, any other iterable (a generator, a ``map``) as the
    list of what it yields, read once. Raises TopologyError naming the component for
    something not iterable. Off the fast path: it calls this only where ``len`` failed."""
    if hasattr(values_list, "__len__"):
        return values_list      # type: ignore[no-any-return]
    try:
        it = iter(values_list)
    except TypeError:
        pass
    else:
        return list(it)
    raise TopologyError(f"component {ts.component_id!r} called emit_many on stream "
                        f"{stream!r} with a {type(values_list).__name__} "
                        f"({values_list!r:.60}): it takes a list (or another iterable) of "
                        "values, e.g. emit_many([[a], [b]])")


def as_values(ts: TaskState, stream: str, values: Any) -> tuple:
    """``values`` as the tuple an emit sends (a list copied), or the error of
    :func:`values_of`: for emits checked in one thread and made in another."""
    if values.__class__ is tuple:
        return values
    if values.__class__ is list:
        return tuple(values)
    return values_of(ts, stream, values)


def check_arity(ts: TaskState, stream: str, values: Sequence[Any]) -> None:
    """Raise :func:`arity_error` unless ``values`` has one value per field of ``stream``
    (a declared stream: check it with :func:`check_emit` first)."""
    fields = ts.sources[stream].fields
    if len(values) != len(fields):
        raise arity_error(ts, stream, fields, len(values))


def check_emit(ts: TaskState, stream: str, direct_task: int | None) -> None:
    """Raise what an emit on ``stream`` with ``direct_task`` would raise, without emitting:
    for emits checked in one thread and made in another (squall.runtime.executors.threaded)."""
    routes_of(ts, stream, direct_task)


#: the shapes the emit paths read ``anchors`` in as they are; each hands anything else to
#: :func:`anchors_of` (one class test, only where ``anchors`` is given)
ANCHOR_SEQUENCES = (list, tuple)


def anchors_of(ts: TaskState, anchors: Any) -> Sequence[Any]:
    """``anchors`` of one emit (not ``None``) as a list or tuple: a list or a tuple as it
    is, any other iterable (a generator, an iterator, a set, a TupleBatch) as the list of
    what it yields, read once. Raises TopologyError naming the component for a lone Tuple,
    a str or bytes, or something not iterable. Off the emit paths: each reads a list or
    tuple as it is and calls this, once per call, for anything else, before anything reads
    the anchors (an iterator read twice would be empty the second time)."""
    if anchors.__class__ in ANCHOR_SEQUENCES:
        return anchors      # type: ignore[no-any-return]
    if isinstance(anchors, Tuple):
        raise TopologyError(f"component {ts.component_id!r}: anchors takes a list of Tuples, "
                            "got a lone Tuple: write anchors=[tup]")
    if not isinstance(anchors, (str, bytes, bytearray, memoryview)):
        try:
            it = iter(anchors)
        except TypeError:
            pass
        else:
            return list(it)
    raise TopologyError(f"component {ts.component_id!r}: anchors takes a list (or another "
                        "iterable) of Tuples this bolt received, got "
                        f"{type(anchors).__name__} {anchors!r:.60}")


def check_anchors(ts: TaskState, anchors: Sequence[Any]) -> None:
    """Raise what an emit anchored to ``anchors`` would raise for an anchor not a Tuple."""
    for a in anchors:
        if not isinstance(a, Tuple):
            raise TopologyError(f"component {ts.component_id!r}: anchors must be Tuples "
                                f"received by this bolt, got {type(a).__name__}")


def settled(ts: TaskState, w: Wiring, anchor: Tuple, stream: str) -> bool:
    """Whether ``anchor``, a tracked Tuple, was acked or failed already: both zero its ``id``
    and ``ackval`` (BoltExecutor.ack_function, AckLedger.fail_tuple), and its tree no longer
    waits for anything XORed into it. If so, one error of the component (:func:`_report`):
    the emit goes out without that anchor, as a multi-lang or streamparse bolt's emit
    anchored to an id not in flight. The fast paths call it only for an anchor whose ``id``
    is 0 (one load and one test on theirs); an ``id`` 0 alone is a live tuple's (one edge in
    2**64)."""
    if anchor.id or anchor.ackval:
        return False
    _report(ts, w, stream, [anchor])
    return True


def _is_settled(a: Any) -> bool:
    return isinstance(a, Tuple) and bool(a.roots) and not (a.id or a.ackval)


def without_settled(ts: TaskState, w: Wiring, anchors: Any, stream: str) -> Any:
    """``anchors`` of one emit (``None``: the tuple in process) without those acked or
    failed already (:func:`settled`), reported in one error line: for the general path, and
    for ``emit_many`` calls that emit item by item, so that each item does not report them
    again. ``None`` stays ``None`` unless the tuple in process is settled (then ``()``);
    what is not a tracked Tuple is kept, for :func:`check_anchors`. Anchors given as any
    other iterable than a list or tuple come back as a list (:func:`anchors_of`)."""
    if anchors is None:
        cur = ts.current
        return () if cur is not None and settled(ts, w, cur, stream) else None
    anchors = anchors_of(ts, anchors)
    gone = [a for a in anchors if _is_settled(a)]
    if not gone:
        return anchors
    _report(ts, w, stream, gone)
    return [a for a in anchors if not _is_settled(a)]


def _report(ts: TaskState, w: Wiring, stream: str, gone: list[Tuple]) -> None:
    first = gone[0]
    what = "a tuple" if len(gone) == 1 else f"{len(gone)} tuples"
    w.report(ts, f"component {ts.component_id!r} emitted on stream {stream!r} anchored to "
                 f"{what} it acked or failed already ({first.src.component}:"
                 f"{first.src.stream} {tuple(first.values)!r:.80}); the emit goes out "
                 f"without {'that anchor' if len(gone) == 1 else 'those anchors'}")


def _several_anchors(w: Wiring, values: tuple, task: int, src: Source, anchors: list[Tuple],
                     edge: int) -> Tuple:
    """A tuple anchored to several tracked tuples: one edge, XORed into every anchor, and
    every root of them, so it is a tuple like any other (its children, its acks, the wire).
    A root that an even number of anchors share would see the edge cancel out: the edge is
    folded into its acker now instead, so its tree still waits for this tuple."""
    count: dict[int, int] = {}
    for a in anchors:
        a.ackval ^= edge
        for r in a.roots:   # type: ignore[union-attr]
            count[r] = count.get(r, 0) + 1
    folded = w.acks.folded
    for r, n in count.items():
        if not n & 1:
            folded[r] = folded.get(r, 0) ^ edge
    return Tuple(values, task, src, edge, tuple(count))


def deliver(w: Wiring, task: int, tup: Tuple) -> None:
    """Put ``tup`` in ``task``'s queue here, or in the outbox of its worker."""
    q = w.queues.get(task)
    if q is not None:
        q.append(tup)
    else:
        w.outbox.send_tuple(task, tup)


def emit_general(ts: TaskState, w: Wiring, values: Sequence[Any], stream: str, anchors: Any,
                 tup_id: Any, direct_task: int | None, need_task_ids: bool,
                 spout: bool) -> list[int] | None:
    if stream is None:                  # as pystorm and streamparse spell the default stream
        stream = "default"
    routes = routes_of(ts, stream, direct_task)
    if values.__class__ is not tuple:
        values = tuple(values) if values.__class__ is list else values_of(ts, stream, values)
    src = ts.sources[stream]
    if len(values) != len(src.fields):
        raise arity_error(ts, stream, src.fields, len(values))
    ts.emitted += 1
    sent: list[int] | None = [] if need_task_ids else None
    if spout:
        tracked = tup_id is not None
    elif anchors is None:
        tracked = ts.current is not None
    else:
        if w.acking and anchors.__class__ not in ANCHOR_SEQUENCES:
            anchors = anchors_of(ts, anchors)   # read once: a generator, a set...
        tracked = bool(anchors)
    if w.acking and tracked:
        if spout:
            return _emit_spout_tracked(ts, w, values, stream, src, routes, tup_id, direct_task,
                                       sent)
        anchor_list = (ts.current,) if anchors is None else anchors
        return _emit_anchored(ts, w, values, stream, src, routes, anchor_list, direct_task,
                              sent, fast_random)
    n = 0
    try:
        for route in routes:
            for t in _targets(route, ts.task, values, direct_task):
                deliver(w, t, Tuple(values, ts.task, src))
                n += 1
                if sent is not None:
                    sent.append(t)
    except Exception as exc:
        ts.transfer_extra += n - 1
        if spout and tup_id is not None:
            ts.deferred_fails.append(tup_id)    # failed once next_tuple returns
        _route_failed(ts, w, stream, route, exc)
    ts.transfer_extra += n - 1
    if spout and tup_id is not None:
        ts.deferred.append(tup_id)      # acked once next_tuple returns (SpoutExecutor)
    return sent


def _emit_spout_tracked(ts: TaskState, w: Wiring, values: tuple, stream: str, src: Source,
                        routes: list[Route], tup_id: Any, direct_task: int | None,
                        sent: list[int] | None) -> list[int] | None:
    rand = fast_random
    bits, mul, home = ts.root_plan
    root = rand(bits) * mul + home
    xor = 0
    n = 0
    try:
        for route in routes:
            for t in _targets(route, ts.task, values, direct_task):
                edge = rand(64)
                xor ^= edge
                deliver(w, t, Tuple(values, ts.task, src, edge, (root,)))
                n += 1
                if sent is not None:
                    sent.append(t)
    except Exception as exc:
        ts.transfer_extra += n - 1
        _fail_tree(ts, w, root, tup_id, xor)
        _route_failed(ts, w, stream, route, exc)
    ts.transfer_extra += n - 1
    ts.pending_new[root] = (tup_id, w.clock.turn)
    w.acks.init_tree(ts, w.acks.acker_of(root), root, xor)
    return sent


def _emit_anchored(ts: TaskState, w: Wiring, values: tuple, stream: str, src: Source,
                   routes: list[Route], anchors: Sequence[Tuple], direct_task: int | None,
                   sent: list[int] | None, rand: Callable[[int], int]) -> list[int] | None:
    check_anchors(ts, anchors)
    tracked = [a for a in anchors if a.roots]
    for a in tracked:
        if not (a.id or a.ackval):      # acked or failed already: left out, reported
            tracked = without_settled(ts, w, tracked, stream)
            break
    n = 0
    try:
        for route in routes:
            for t in _targets(route, ts.task, values, direct_task):
                n += 1
                if not tracked:
                    tup = Tuple(values, ts.task, src)
                elif len(tracked) == 1:
                    a = tracked[0]
                    edge = rand(64)
                    a.ackval ^= edge
                    tup = Tuple(values, ts.task, src, edge, a.roots)
                else:
                    tup = _several_anchors(w, values, ts.task, src, tracked, rand(64))
                deliver(w, t, tup)
                if sent is not None:
                    sent.append(t)
    except Exception as exc:
        # what was delivered is anchored: raised out of process, the input tuple fails with
        # auto_fail (its tree with it), as in Storm
        ts.transfer_extra += n - 1
        _route_failed(ts, w, stream, route, exc)
    ts.transfer_extra += n - 1
    return sent
