"""Tuples and streams."""
from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Sequence
from operator import itemgetter
from typing import Any, overload

from squall.errors import TopologyError

TICK_STREAM = "__tick"
SYSTEM_COMPONENT = "__system"
#: the longest component or stream id: ids name cluster state nodes and travel in every
#: heartbeat and error record, which ZooKeeper's request limit (about 1 MiB) must hold
MAX_ID_CHARS = 1024
_rand64 = random.Random(random.SystemRandom().getrandbits(64)).getrandbits


class Stream:
    """A declared output stream: ``Stream(["word"])``, ``Stream(["a", "b"], name="x", direct=True)``.

    ``name=None`` is the default stream, as in ``emit(stream=None)``. TopologyError for a
    name that is not a str, empty (no emit or subscription could name it) or longer than
    :data:`MAX_ID_CHARS`, and for a field name that is not a str."""

    __slots__ = ("direct", "fields", "name")

    def __init__(self, fields: Sequence[str], name: str | None = "default",
                 direct: bool = False) -> None:
        if isinstance(fields, str):
            fields = [fields]
        fields = list(fields)
        for f in fields:
            if not isinstance(f, str):
                raise TopologyError(f"Stream({fields!r}): field names are str, got "
                                    f"{type(f).__name__} {f!r}")
        self.fields = tuple(str(f) for f in fields)
        if name is None:
            name = "default"
        if not isinstance(name, str):
            raise TopologyError(f"Stream({fields!r}, name={name!r}): a stream name is a str "
                                f"(None or left out for the default stream), not "
                                f"{type(name).__name__}")
        if not name:
            raise TopologyError(f"Stream({fields!r}): the stream name is empty; "
                                "leave it out for the default stream")
        if len(name) > MAX_ID_CHARS:
            raise TopologyError(f"Stream({fields!r}): the stream name {name[:40]!r}... has "
                                f"{len(name)} characters, more than the {MAX_ID_CHARS} a "
                                "stream name may have")
        self.name = str(name)
        self.direct = bool(direct)

    def __repr__(self) -> str:
        extra = ", direct=True" if self.direct else ""
        return f"Stream({list(self.fields)!r}, name={self.name!r}{extra})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and (self.fields, self.name, self.direct) == (
            other.fields, other.name, other.direct)

    def __hash__(self) -> int:
        return hash((self.fields, self.name, self.direct))


class Source:
    """What every tuple of one (component, stream) shares; one instance per pair and process.
    ``direct``: whether the stream is declared ``direct=True``."""

    __slots__ = ("component", "direct", "fields", "index", "stream")

    def __init__(self, component: str, stream: str, fields: tuple[str, ...],
                 direct: bool = False) -> None:
        self.component = component
        self.stream = stream
        self.fields = fields
        self.direct = direct
        self.index = {f: i for i, f in enumerate(fields)}


class Tuple:
    """A tuple as a bolt receives it.

    ``values`` is a tuple; ``tup["field"]`` reads a field by name. ``id`` identifies this tuple
    inside its tuple tree (``None`` when it is not tracked by the acker).

    The runtime's hot paths build Tuples with ``object.__new__`` and set every slot
    themselves (a Python ``__init__`` call is the dearest part of building one): a slot added
    here must be set there too (``squall.runtime.emit.fast``, ``TupleRun.tuples``,
    ``squall.runtime.wire.codec``).
    """

    __slots__ = ("ackval", "id", "roots", "src", "task", "values")

    def __init__(self, values: Sequence[Any], task: int, src: Source,
                 id: int | None = None, roots: tuple[int, ...] | None = None) -> None:
        self.values = values
        self.task = task
        self.src = src
        self.id = id
        self.roots = roots
        self.ackval = 0

    @property
    def component(self) -> str:
        return self.src.component

    @property
    def stream(self) -> str:
        return self.src.stream

    @property
    def fields(self) -> tuple[str, ...]:
        return self.src.fields

    @property
    def is_tick(self) -> bool:
        return self.src.stream == TICK_STREAM

    def __getitem__(self, field: str) -> Any:
        try:
            return self.values[self.src.index[field]]
        except KeyError:
            raise KeyError(f"stream {self.src.component}:{self.src.stream} has no field "
                           f"{field!r}; fields: {list(self.src.fields)}") from None

    def __repr__(self) -> str:
        return (f"Tuple(component={self.component!r}, stream={self.stream!r}, task={self.task}, "
                f"id={self.id}, values={tuple(self.values)!r})")


def zip_columns(columns: list[list[Any]], count: int) -> list[tuple[Any, ...]]:
    """The value tuples of ``count`` tuples given by column (one list per field, each of
    ``count`` values), zipped in C."""
    if not columns:
        return [()] * count
    if len(columns) == 1:
        return list(zip(columns[0]))
    return list(zip(*columns))


class TupleRun:
    """Tuples of one ``emit_many`` call (or several untracked ones), queued as one entry.

    Internal: ``emit_many`` makes them for the tasks of ``lazy_batch`` bolts in the same
    worker, and the inbox for what arrives from other workers, so the receiving bolt can read
    their values without a :class:`Tuple` per item. Anchored runs share the anchor's
    ``roots`` and one random ``edge`` stands for the whole run in the acker's XOR; when
    Tuples are built, ``edge`` is split into one id per tuple whose XOR is ``edge`` again, so
    acking them one by one or the run at once gives the acker the same value.

    A run *by tree* (``ids`` not None) gathers tuples of several trees for one task: the
    held anchored ``emit_many`` values of a batch bolt, routed together. ``ids`` is then each
    tuple's own edge and ``roots`` each tuple's one root id (a list of ints, one per tuple,
    not a tuple shared by all), and ``edge`` is 0.

    A run from another worker arrives by column (:meth:`of_columns`): ``column(i)`` hands
    out a decoded column as it is, and the value tuples (``values``) are zipped from the
    columns only when something reads them. ``len(run)`` counts its tuples either way.
    """

    __slots__ = ("_columns", "_count", "_values", "edge", "ids", "roots", "src", "task")

    def __init__(self, values: list[tuple[Any, ...]], task: int, src: Source,
                 roots: tuple[int, ...] | None = None, edge: int = 0) -> None:
        self._values: list[tuple[Any, ...]] | None = values
        self._columns: list[list[Any]] | None = None
        self._count = 0
        self.task = task
        self.src = src
        self.roots = roots
        self.edge = edge
        self.ids: list[int] | None = None

    @classmethod
    def by_tree(cls, values: list[tuple[Any, ...]], task: int, src: Source, ids: list[int],
                roots: list[int]) -> TupleRun:
        """A run of tuples of several trees: ``ids[i]`` and ``roots[i]`` are the edge and
        the one root of ``values[i]``."""
        run = cls(values, task, src, roots)        # type: ignore[arg-type]
        run.ids = ids
        return run

    @classmethod
    def of_columns(cls, columns: list[list[Any]], count: int, task: int, src: Source,
                   roots: tuple[int, ...] | list[int] | None = None, edge: int = 0,
                   ids: list[int] | None = None) -> TupleRun:
        """A run of ``count`` tuples given by column (one list per field, each of
        ``count`` values; no field: no column); by tree with ``ids``."""
        run = cls.__new__(cls)
        run._values = None
        run._columns = columns
        run._count = count
        run.task = task
        run.src = src
        run.roots = roots               # type: ignore[assignment]
        run.edge = edge
        run.ids = ids
        return run

    def trees(self) -> Iterable[int]:
        """Every root id the run's tuples belong to, each once."""
        roots = self.roots
        if roots is None:
            return ()
        return roots if self.ids is None else dict.fromkeys(roots)

    @property
    def values(self) -> list[tuple[Any, ...]]:
        """Every tuple's values, in order (zipped from the columns on first read)."""
        values = self._values
        if values is None:
            values = self._values = zip_columns(self._columns or [], self._count)
            self._columns = None
        return values

    def column(self, index: int) -> Iterable[Any]:
        """Field ``index`` of every tuple, in order: a run by column hands out its column
        itself (not to be modified), another an iterator over its values."""
        cols = self._columns
        if cols is not None:
            return cols[index]
        return map(itemgetter(index), self.values)

    def __len__(self) -> int:
        values = self._values
        return self._count if values is None else len(values)

    def tuples(self) -> list[Tuple]:
        """One Tuple per values (built without ``__init__``, as ``make_emit`` does)."""
        task, src, roots = self.task, self.src, self.roots
        out: list[Tuple] = []
        append = out.append
        new = object.__new__
        if roots is None:
            # untracked (every run from an untracked emit or another worker's untracked
            # tuples): no id to pair with each values, about 10 % less per Tuple (timeit)
            for v in self.values:
                tup = new(Tuple)
                tup.values = v
                tup.task = task
                tup.src = src
                tup.id = tup.roots = None
                tup.ackval = 0
                append(tup)
            return out
        if self.ids is not None:        # by tree: each tuple's own edge and root
            for v, i, r in zip(self.values, self.ids, roots):   # type: ignore[arg-type]
                tup = new(Tuple)
                tup.values = v
                tup.task = task
                tup.src = src
                tup.id = i
                tup.roots = (r,)
                tup.ackval = 0
                append(tup)
            return out
        ids = [_rand64(64) for _ in range(len(self.values) - 1)]
        last = self.edge
        for i in ids:
            last ^= i
        ids.append(last)
        for v, i in zip(self.values, ids):
            tup = new(Tuple)
            tup.values = v
            tup.task = task
            tup.src = src
            tup.id = i
            tup.roots = roots
            tup.ackval = 0
            append(tup)
        return out


class TupleBatch(Sequence[Tuple]):
    """What ``process_batch`` receives in a bolt that sets ``lazy_batch = True``.

    A read-only sequence of :class:`Tuple` (``len``, indexing, slicing, iteration) whose
    ``Tuple`` objects are built only when the bolt reads them. ``values`` lists every tuple's
    values in order and ``column(field)`` one field of every tuple, without building any:
    the fast way to consume a big batch.
    """

    __slots__ = ("_n", "_parts", "_tuples")

    def __init__(self, parts: list[Tuple | TupleRun], n: int) -> None:
        self._parts = parts
        self._n = n
        self._tuples: list[Tuple] | None = None

    def _list(self) -> list[Tuple]:
        tuples = self._tuples
        if tuples is None:
            tuples = []
            for part in self._parts:
                if part.__class__ is TupleRun:
                    tuples.extend(part.tuples())  # type: ignore[union-attr]
                else:
                    tuples.append(part)  # type: ignore[arg-type]
            self._tuples = tuples
        return tuples

    @property
    def built(self) -> list[Tuple] | None:
        """The Tuples built so far (None while the bolt read none): the runtime acks
        those, each by its own id, instead of the runs they were split from."""
        return self._tuples

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, index: int) -> Tuple: ...

    @overload
    def __getitem__(self, index: slice) -> list[Tuple]: ...

    def __getitem__(self, index: int | slice) -> Tuple | list[Tuple]:
        return self._list()[index]

    def __iter__(self) -> Iterator[Tuple]:
        return iter(self._list())

    @property
    def values(self) -> list[tuple[Any, ...]]:
        """Every tuple's values, in order (one list; do not modify it)."""
        parts = self._parts
        if len(parts) == 1 and parts[0].__class__ is TupleRun:
            return parts[0].values
        out: list[tuple[Any, ...]] = []
        for part in parts:
            if part.__class__ is TupleRun:
                out.extend(part.values)
            else:
                out.append(part.values)  # type: ignore[arg-type]  # a Tuple's: a tuple
        return out

    def column(self, field: str) -> list[Any]:
        """The value of ``field`` in every tuple, in order; KeyError if a tuple lacks it."""
        out: list[Any] = []
        src = None
        i = 0
        for part in self._parts:
            if part.src is not src:     # parts of one stream share one field index
                src = part.src
                try:
                    i = src.index[field]
                except KeyError:
                    raise KeyError(f"stream {src.component}:{src.stream} has no field "
                                   f"{field!r}; fields: {list(src.fields)}") from None
            if part.__class__ is TupleRun:
                out.extend(part.column(i))      # type: ignore[union-attr]
            else:
                out.append(part.values[i])
        return out

    def __repr__(self) -> str:
        return f"TupleBatch({self._n} tuples)"
