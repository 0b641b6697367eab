"""What Trident operations see and emit: :class:`TridentTuple` and the collectors.

A batch's rows travel as plain Python tuples; an operation receives a :class:`TridentTuple`,
a read-only view of one row restricted to the operation's input fields (``tup["word"]``,
``tup[0]``, ``tup.values``); with one input field, any name reads it (logged once per name),
so one operation serves streams whose field is named differently. Collectors gather what an
operation emits for the rest of the chain. Everything here runs on the worker's loop thread,
one batch at a time.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any


def frozen(value: Any) -> Any:
    """``value`` with its lists (and tuples) as tuples, sets as frozensets and dicts as
    sorted tuples of items, all the way down: a group or state key that indexes a dict the
    same whether its row crossed workers (which turns tuples into lists) or not."""
    cls = value.__class__
    if cls is list or cls is tuple:
        return tuple(map(frozen, value))
    if cls is dict:
        return tuple(sorted(((k, frozen(v)) for k, v in value.items()), key=repr))
    if cls is set or cls is frozenset:
        return frozenset(map(frozen, value))
    return value


#: (name read, field given) pairs already logged: one line each per process
_RENAMED: set[tuple[str, str]] = set()


def _say_renamed(read: str, given: str) -> None:
    if (read, given) in _RENAMED or len(_RENAMED) >= 1000:
        return
    _RENAMED.add((read, given))
    import logging
    logging.getLogger("squall.trident.operation").warning(
        "an operation read field %r of an input whose one field is %r: it gets %r's value "
        "(name the field it reads in the stream, or read tup[0])", read, given, given)


class TridentTuple:
    """One row as an operation sees it: the values of its input fields, by name or position."""

    __slots__ = ("index", "values")

    def __init__(self, values: tuple[Any, ...], index: dict[str, int]) -> None:
        self.values = values
        self.index = index

    @property
    def fields(self) -> list[str]:
        return sorted(self.index, key=self.index.__getitem__)

    def __getitem__(self, key: str | int) -> Any:
        if isinstance(key, int):
            return self.values[key]
        try:
            return self.values[self.index[key]]
        except KeyError:
            if len(self.values) == 1 and isinstance(key, str):
                # one input field: an operation written for one stream's field name (a
                # Split reading "sentence") also serves another's ("args" of a DRPC
                # stream), as the function of ``each(["args"], Split(), ...)`` it is
                _say_renamed(key, self.fields[0])
                return self.values[0]
            raise KeyError(f"no field {key!r} in this operation's input; fields: "
                           f"{self.fields}") from None

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.values)

    def __repr__(self) -> str:
        return f"TridentTuple({dict(zip(self.fields, self.values))!r})"


class TridentCollector:
    """Collects the values an operation emits; ``emit(values)`` appends one output row.

    For ``each`` the runtime prefixes every emitted row with the input row (Trident appends a
    function's output fields to its input); ``report_error`` logs through the operation's
    logger without failing the batch (raise to fail it)."""

    __slots__ = ("_prefix", "out")

    def __init__(self) -> None:
        self.out: list[tuple[Any, ...]] = []
        self._prefix: tuple[Any, ...] = ()

    def set_prefix(self, prefix: tuple[Any, ...]) -> None:
        self._prefix = prefix

    def emit(self, values: Sequence[Any]) -> None:
        self.out.append(self._prefix + (values if type(values) is tuple else tuple(values)))

    def report_error(self, error: BaseException | str) -> None:
        import logging
        logging.getLogger("squall.trident.operation").error("%s", error)
