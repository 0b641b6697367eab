"""The wire format of squall's tuples between workers, as pure functions.

A batch for one worker is a list of transport messages ``(task, payload)``:

* ``task == CONTROL`` (0): ``payload`` is the serialized ``[kind, who, value]`` of a
  worker-to-worker control message (``"throttle"``, ``"load"``; ``who`` is the sender's
  ``host:port``);
* ``task > 0``: ``payload`` is the serialized list of ``task``'s entries, in emit order.

Every entry is ``[src_task, stream, block, ids, roots]``, a run of tuples from one source
task on one stream. ``block`` holds the run's values by column: ``[n, column of field 0,
column of field 1, ...]``, each column a list of ``n`` values (:func:`columns`,
:func:`rows`). By column, a run of one-field tuples is one flat list for the serializer to
write and read, where a list per tuple cost it about four times as much (a list object per
word made and read back); the receiver zips the columns back into value tuples in C. The
run's shape is told by ``ids``:

=====  ===========================  ==============================  ==========================
shape  ``ids``                      ``roots``                       delivered as
=====  ===========================  ==============================  ==========================
RUN    an int: the run's one edge   None (untracked; edge 0) or     one :class:`TupleRun`
       (0 when untracked)           the root ids the run shares     (``emit_many``)
ONES   a list: one id per tuple     a list: each tuple's root ids,  one :class:`Tuple` each
                                    ``0`` = the tuple before's      (single emits)
RUNS   a list of ``[edge, count]``  a list: each run's root ids,    one :class:`TupleRun` per
       pairs, run after run         ``0`` = the run before's        pair (anchored emit_many)
TREES  a list: one id per tuple     a list of ints: each tuple's    one TupleRun by tree
                                    one root id                     (held anchored emit_many)
=====  ===========================  ==============================  ==========================

ONES and TREES differ by their first roots item: a list (root ids) or an int (the root).

Single tuples are folded into runs as they are queued, so a batch of single emits costs the
serializer a few flat lists instead of an entry (or a list) per tuple.

What arrives is checked whole before anything of it is delivered (:func:`check_entries`):
every entry's source task is a task of the topology (or 0, the system), its (source
component, stream) is one the receiving task subscribes to (:data:`Accepts`), its block holds
one column per field of the stream, each of the count it announces, and its ids and roots
have the shape its ``ids`` column announces; anything else raises ValueError and the message
is dropped.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from itertools import chain
from operator import itemgetter
from typing import Any

from squall.api.tuple import Source, Tuple, TupleRun, zip_columns
from squall.errors import SerializationError

CONTROL = 0
RUN, ONES, RUNS, TREES = "run", "ones", "runs", "trees"
_NOTHING = object()

#: (task, payload) messages of one batch
Messages = list[tuple[int, bytes]]
#: what one task takes from the wire: (source component, stream) -> the stream's arity;
#: a ``None`` component takes the stream from any task of the topology (the system streams)
Accepts = Mapping[tuple[str | None, str], int]
#: streams whose values are ints only (the acker's)
INT_STREAMS = frozenset(("__ack_init", "__ack_ack", "__ack_fail", "__ack_reset"))
#: most tuples one entry may announce (a run is capped far below: see the outbox's run cap);
#: a block of a stream without fields carries only its count, which must not ask for more
MAX_ROWS = 1 << 20


class OpenRun:
    """Outbound: one entry being filled, column by column, before it is encoded.

    ``ids``/``roots`` are None for an untracked RUN; lists for ONES, for RUNS when the ids
    are ``[edge, count]`` pairs, or for TREES (``by_tree``: an int id and an int root per
    tuple). ``last_roots`` is the roots the last non-0 roots entry holds (a ``0`` stands for
    it). ``open`` is True while the run is the one its task's next tuples of this source join
    (the outbox clears it once the run is sent or another entry follows it)."""

    __slots__ = ("by_tree", "ids", "last_roots", "open", "roots", "src", "task", "values")

    def __init__(self, task: int, src: Source, tracked: bool, by_tree: bool = False) -> None:
        self.task = task
        self.src = src
        self.values: list[Any] = []
        self.ids: list[Any] | None = [] if tracked else None
        self.roots: list[Any] | None = [] if tracked else None
        self.last_roots: Any = _NOTHING
        self.by_tree = by_tree
        self.open = True

    def add_roots(self, roots: Any) -> None:
        """Append a roots entry (``0`` when it repeats the last one)."""
        if roots is self.last_roots:
            self.roots.append(0)            # type: ignore[union-attr]
        else:
            self.roots.append(roots)        # type: ignore[union-attr]
            self.last_roots = roots


# -- encoding -------------------------------------------------------------------------------
def columns(values: list[Any]) -> list[Any]:
    """The block of ``values`` (a run's value tuples, all of one stream's arity): ``[n,
    column 0, column 1, ...]``, each column made in one C pass. SerializationError if the
    tuples are not all of one arity (the emit paths check each against its stream)."""
    n = len(values)
    if not n:
        return [0]
    arity = len(values[0])
    if list(map(len, values)).count(arity) != n:
        raise SerializationError(f"a run of {n} tuples holds tuples of different arities")
    if arity == 1:
        return [n, list(map(_first, values))]
    return [n, *(list(map(itemgetter(i), values)) for i in range(arity))]


_first = itemgetter(0)


def block_columns(block: list[Any]) -> tuple[int, list[list[Any]]]:
    """A block's count and columns; ValueError unless its columns are lists of the count it
    announces."""
    n = block[0]
    cols = block[1:]
    if n.__class__ is not int or not 0 <= n <= MAX_ROWS or \
            list(map(type, cols)).count(list) != len(cols) or \
            list(map(len, cols)).count(n) != len(cols):
        raise ValueError(f"a block must be [count, column, ...] with columns of that count, "
                         f"got {block!r:.80}")
    return n, cols


def rows(block: list[Any]) -> list[tuple[Any, ...]]:
    """A block's value tuples again (zipped in C); ValueError as :func:`block_columns`."""
    n, cols = block_columns(block)
    return zip_columns(cols, n)


def entry(item: OpenRun | TupleRun) -> list[Any]:
    """The entry of an open run or of a TupleRun (a RUN of its own, or TREES by tree)."""
    block = columns(item.values)
    if item.__class__ is OpenRun:
        return [item.task, item.src.stream, block,
                0 if item.ids is None else item.ids, item.roots]   # type: ignore[union-attr]
    run: TupleRun = item        # type: ignore[assignment]
    return [run.task, run.src.stream, block, run.edge if run.ids is None else run.ids,
            run.roots]


def pieces(item: OpenRun | TupleRun) -> list[OpenRun | TupleRun]:
    """``item`` cut into the smallest entries that still mean the same: one per tuple of an
    untracked run, a ONES run or a TREES run (of either kind), one per anchored run of a
    RUNS run (an edge stands for its whole run), another TupleRun whole. For finding the
    tuples a serializer refuses."""
    if item.__class__ is not OpenRun:
        whole: TupleRun = item      # type: ignore[assignment]
        if whole.ids is None:
            return [item]
        item = open_trees(whole.task, whole.src, whole.values, whole.ids,
                          whole.roots)  # type: ignore[arg-type]
    run: OpenRun = item         # type: ignore[assignment]
    out: list[OpenRun | TupleRun] = []
    if run.ids is None:
        for v in run.values:
            one = OpenRun(run.task, run.src, False)
            one.values.append(v)
            out.append(one)
        return out
    if run.by_tree:
        return [open_trees(run.task, run.src, [v], [i], [r])
                for v, i, r in zip(run.values, run.ids, run.roots)]  # type: ignore[arg-type]
    roots: Any = None
    start = 0
    for i, tid in enumerate(run.ids):
        r = run.roots[i]            # type: ignore[index]
        if r.__class__ is not int:  # 0: the same roots as the one before
            roots = r
        one = OpenRun(run.task, run.src, True)
        count = tid[1] if tid.__class__ is list else 1
        one.values.extend(run.values[start:start + count])
        one.ids.append(tid)         # type: ignore[union-attr]
        one.add_roots(roots)
        start += count
        out.append(one)
    return out


def open_trees(task: int, src: Source, values: list[Any], ids: list[int],
               roots: list[int]) -> OpenRun:
    """An open TREES run holding ``values`` with their ids and roots."""
    run = OpenRun(task, src, True, by_tree=True)
    run.values.extend(values)
    run.ids.extend(ids)             # type: ignore[union-attr]
    run.roots.extend(roots)         # type: ignore[union-attr]
    return run


def encode(items: Iterable[tuple[int, OpenRun | TupleRun]],
           dumps: Callable[[Any], bytes]) -> Messages:
    """One message per destination task of ``items`` (``(task, run)`` in emit order), each
    with that task's entries in order."""
    by_task: dict[int, list[list[Any]]] = {}
    for task, item in items:
        entries = by_task.get(task)
        if entries is None:
            by_task[task] = [entry(item)]
        else:
            entries.append(entry(item))
    return [(task, dumps(entries)) for task, entries in by_task.items()]


def control(kind: str, who: str, value: Any, dumps: Callable[[Any], bytes]) -> Messages:
    """The message of one control entry."""
    return [(CONTROL, dumps([kind, who, value]))]


# -- decoding --------------------------------------------------------------------------------
def read_control(obj: Any) -> tuple[str, str, Any]:
    """``(kind, who, value)`` of a decoded control payload; ValueError if it is not one."""
    if obj.__class__ is not list or len(obj) != 3 or obj[0].__class__ is not str:
        raise ValueError(f"a control message must be [kind, who, value], got {obj!r:.80}")
    return obj[0], str(obj[1]), obj[2]


def read_entries(obj: Any) -> list[list[Any]]:
    """A decoded task payload as its entries; ValueError unless a list of 5-lists (whose
    blocks are lists starting with their count)."""
    if obj.__class__ is not list:
        raise ValueError(f"a task's payload must be a list of entries, got {obj!r:.60}")
    for e in obj:
        if e.__class__ is not list or len(e) != 5:
            raise ValueError(f"an entry must be [src_task, stream, values, ids, roots], got "
                             f"{e!r:.80}")
        if e[0].__class__ is not int or e[1].__class__ is not str \
                or e[2].__class__ is not list or not e[2] or e[2][0].__class__ is not int:
            raise ValueError(f"an entry's source task, stream or values are malformed: "
                             f"{e[:3]!r:.80}")
    return obj


def check_entries(task: int, entries: list[list[Any]], accepts: Accepts,
                  comp_of: Mapping[int, str], deep: bool) -> None:
    """Check every entry of a message for ``task`` (already :func:`read_entries`'d) against
    what ``task`` takes (``accepts``) and the topology's task -> component map: its source,
    its stream, its block's columns (one per field, each of the block's count; ints only
    on the acker's streams); with ``deep``
    also the shape of its ids and roots, which :func:`run_of`, :func:`ones_of` and
    :func:`runs_of` check anyway while they build an entry's tuples (so a one-entry message
    is checked whole without ``deep``; a message of several entries needs it, since its
    first entries may be delivered before a later one is built). ValueError naming the first
    problem. A few C-level passes per field of an entry (per tuple only on the acker's
    streams and with ``deep``)."""
    for src_task, stream, block, ids, roots in entries:
        comp = comp_of.get(src_task)
        if comp is None and src_task != 0:
            raise ValueError(f"source task {src_task} is not a task of this topology")
        arity = accepts.get((comp, stream))
        if arity is None:
            arity = accepts.get((None, stream))
            if arity is None:
                raise ValueError(f"task {task} does not subscribe to stream {stream!r:.40} of "
                                 f"{comp or 'the system'}")
        try:
            n, cols = block_columns(block)
        except ValueError:
            raise ValueError(f"a run of stream {stream!r:.40} of {comp} for task {task} does "
                             f"not hold {block[0]!r:.20} values in each of its "
                             f"{len(block) - 1} columns") from None
        if len(cols) != arity:
            raise ValueError(f"stream {stream!r:.40} of {comp} has {arity} fields; a run "
                             f"for task {task} has {len(cols)}")
        if stream in INT_STREAMS and not set(map(type, chain.from_iterable(cols))) <= {int}:
            raise ValueError(f"a {stream} tuple for task {task} holds a value that is not "
                             f"an int")
        if not deep:
            continue
        if ids.__class__ is not list:                                   # RUN
            if ids.__class__ is not int or (roots is not None and (
                    roots.__class__ is not list or not roots
                    or list(map(type, roots)).count(int) != len(roots))):
                raise ValueError(f"a run for task {task} has a malformed edge or roots")
            continue
        if not ids and not n:
            continue
        if roots.__class__ is not list or len(roots) != len(ids) or not ids:
            raise ValueError(f"an entry for task {task}: {len(ids)} ids, roots "
                             f"{roots!r:.60}")
        if roots[0].__class__ is int:                                   # TREES
            if len(ids) != n or list(map(type, ids)).count(int) != n or \
                    list(map(type, roots)).count(int) != n:
                raise ValueError(f"an entry for task {task}: {n} tuples by tree, ids "
                                 f"{ids!r:.40}, roots {roots!r:.40}")
            continue
        if roots[0].__class__ is not list:
            raise ValueError(f"an entry for task {task}: {len(ids)} ids, roots "
                             f"{roots!r:.60}")
        kinds = set(map(type, roots))
        if not kinds <= {int, list} or (
                list in kinds and not set(map(type, chain.from_iterable(
                    r for r in roots if r.__class__ is list))) <= {int}):
            raise ValueError(f"an entry for task {task} has roots that are not lists of ints")
        if ids[0].__class__ is list:                                    # RUNS
            if list(map(type, ids)).count(list) != len(ids) or \
                    list(map(len, ids)).count(2) != len(ids) or \
                    not set(map(type, chain.from_iterable(ids))) <= {int} or \
                    sum(p[1] for p in ids) != n or min(p[1] for p in ids) < 1:
                raise ValueError(f"runs for task {task}: pairs that are not [edge, count] "
                                 f"adding up to its {n} tuples")
        elif len(ids) != n or list(map(type, ids)).count(int) != n:      # ONES
            raise ValueError(f"an entry for task {task}: {n} tuples, ids {ids!r:.60}")


def shape(ids: Any, roots: Any = None) -> str:
    """The shape of an entry by its ``ids`` and ``roots`` columns (see the module's table)."""
    if ids.__class__ is list:
        if ids and ids[0].__class__ is list:
            return RUNS
        if roots.__class__ is list and roots and roots[0].__class__ is int:
            return TREES
        return ONES
    return RUN


def read_roots(roots: Any) -> tuple[int, ...] | None:
    """A received roots entry as root ids (None: untracked); ValueError if it is not one."""
    if roots is None:
        return None
    if roots.__class__ is list and len(roots) == 1 and roots[0].__class__ is int:
        return (roots[0],)          # one root: the common case, without the checks below
    if roots.__class__ in (list, tuple) and list(map(type, roots)).count(int) == len(roots):
        return tuple(roots)
    raise ValueError(f"roots {roots!r:.60} are not a list of ints")


def read_id(tid: Any) -> int | None:
    """A received tuple id or run edge (None: untracked); ValueError if it is not an int."""
    if tid is None or tid.__class__ is int:
        return tid
    raise ValueError(f"id {tid!r:.60} is not an int")


def run_of(src_task: int, src: Source, block: list[Any], edge: Any, roots: Any) -> TupleRun:
    """A RUN entry as one TupleRun, by column (its value tuples are made only if read)."""
    n, cols = block_columns(block)
    return TupleRun.of_columns(cols, n, src_task, src, read_roots(roots), read_id(edge) or 0)


def ones_of(task: int, src_task: int, src: Source, block: list[Any], ids: list[Any],
            roots: Any) -> list[Tuple]:
    """A ONES entry as one Tuple per values; checked whole first."""
    values = rows(block)
    if roots.__class__ is not list or not len(values) == len(ids) == len(roots):
        raise ValueError(f"run for task {task}: {len(values)} values, {len(ids)} ids, "
                         f"roots {roots!r:.60}")
    if roots and roots[0].__class__ is int:
        raise ValueError(f"run for task {task}: the first tuple's roots refer back")
    if list(map(type, ids)).count(int) != len(ids):
        raise ValueError(f"run for task {task}: an id that is not an int")
    tuples: list[Tuple] = []
    append = tuples.append
    # built as the emit paths build them: object.__new__ and every slot of Tuple set
    # (a Python __init__ call is the dearest part of a Tuple; see squall.runtime.emit.fast)
    new = object.__new__
    prev: tuple[int, ...] | None = None
    for v, i, r in zip(values, ids, roots):
        if r.__class__ is not int:      # 0: the same roots as the tuple before
            prev = read_roots(r)
        tup = new(Tuple)
        tup.values = v
        tup.task = src_task
        tup.src = src
        tup.id = i
        tup.roots = prev
        tup.ackval = 0
        append(tup)
    return tuples


def trees_of(task: int, src_task: int, src: Source, block: list[Any], ids: list[Any],
             roots: list[Any]) -> TupleRun:
    """A TREES entry as one TupleRun by tree, by column; checked whole first."""
    n, cols = block_columns(block)
    if ids.__class__ is not list or roots.__class__ is not list or \
            not len(ids) == len(roots) == n or list(map(type, ids)).count(int) != n or \
            list(map(type, roots)).count(int) != n:
        raise ValueError(f"a run by tree for task {task}: {n} values, ids {ids!r:.40}, "
                         f"roots {roots!r:.40}")
    return TupleRun.of_columns(cols, n, src_task, src, roots, 0, ids)


def runs_of(task: int, src_task: int, src: Source, block: list[Any], pairs: list[Any],
            roots: Any) -> list[TupleRun]:
    """A RUNS entry as its TupleRuns, by column: each ``[edge, count]`` pair takes the next
    ``count`` values of every column; checked whole first."""
    n, cols = block_columns(block)
    if roots.__class__ is not list or len(pairs) != len(roots):
        raise ValueError(f"runs for task {task}: {len(pairs)} runs, roots {roots!r:.60}")
    if roots[0].__class__ is int:
        raise ValueError(f"runs for task {task}: the first run's roots refer back")
    total = 0
    for pair in pairs:
        if (pair.__class__ is not list or len(pair) != 2 or pair[0].__class__ is not int
                or pair[1].__class__ is not int or pair[1] < 1):
            raise ValueError(f"runs for task {task}: {pair!r:.60} is not [edge, count]")
        total += pair[1]
    if total != n:
        raise ValueError(f"runs for task {task}: counts add up to {total}, {n} values")
    of_columns = TupleRun.of_columns
    if len(pairs) == 1:
        return [of_columns(cols, n, src_task, src, read_roots(roots[0]), pairs[0][0])]
    runs = []
    at = 0
    prev: tuple[int, ...] | None = None
    for (edge, count), r in zip(pairs, roots):
        if r.__class__ is not int:      # 0: the same roots as the run before
            prev = read_roots(r)
        end = at + count
        runs.append(of_columns([c[at:end] for c in cols], count, src_task, src, prev, edge))
        at = end
    return runs


def roots_in(entries: Iterable[list[Any]]) -> set[int]:
    """Every root id the (decoded) entries carry, for failing what could not be delivered;
    entries that do not read are passed over."""
    found: set[int] = set()
    for e in entries:
        try:
            ids, roots = e[3], e[4]
            kind = shape(ids, roots)
            if kind == RUN:
                found.update(read_roots(roots) or ())
            elif kind == TREES:
                found.update(r for r in roots if r.__class__ is int)
            else:
                for r in roots:
                    if r.__class__ is not int:
                        found.update(read_roots(r) or ())
        except (ValueError, TypeError, IndexError):
            continue
    return found
