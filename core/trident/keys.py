"""Group and state keys compared as the fields grouping routes them.

A Trident key (a tuple of group values) is one key wherever its row is: a ``NaN`` that
crossed workers (a new object each time, and ``NaN != NaN``) is the same key as the one that
did not; ``1``, ``1.0`` and ``True``, which the fields grouping sends to different tasks
(:func:`squall.api.groupings.fields_hash`), are three keys although Python finds them equal.

:func:`canonical` gives the form such keys compare by: a key of ``str``, ``int``, ``bytes``
and ``None`` values is its own form (Python's equality is the routing's there); any other
value is replaced by a form that is equal exactly when the values route alike: a subclass of
``str``, ``bytes`` or ``int`` as its base type (as it travels), a bool or a float tagged with
its kind (a float by its ``repr``, so every NaN is one value), lists and tuples alike (a
tuple arrives as a list), sets and dicts by their items, any other value by the bytes the
fields grouping hashes for it. :class:`GroupKey` is a key whose ``==`` and ``hash`` are its
canonical form's, so dicts of keys group as the routing does while holding the values the
rows gave.

>>> GroupKey((float("nan"),)) == GroupKey((float("nan"),))
True
>>> len({GroupKey((1,)), GroupKey((1.0,)), GroupKey((True,))})
3
"""
from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from itertools import chain
from typing import Any

from squall.api.groupings import encode_value

__all__ = ["GroupKey", "canonical", "equal_as_routed"]

_NONE = type(None)
#: the value types that are their own canonical form: none equals a value of another
_PLAIN = frozenset((str, int, bytes, _NONE))
#: with bool instead of int (True == 1), or float (1.0 == 1; and NaN, 0.0 == -0.0 aside),
#: Python's equality between such values is the routing's too
_WITH_BOOL = frozenset((str, bool, bytes, _NONE))
_WITH_FLOAT = frozenset((str, float, bytes, _NONE))


def equal_as_routed(keys: Sequence[tuple[Any, ...]]) -> bool:
    """Whether Python's ``==`` and ``hash`` between ``keys`` (tuples of values) group them
    as the routing does, so that they may index a dict as they are: their values are all
    str, bytes, None and either ints, or bools, or floats that are neither NaN nor zero (a
    tuple value counts as its items). One pass in C over the values (and a Python step a
    value with floats, or a tuple)."""
    kinds = set(map(type, chain.from_iterable(keys)))
    if kinds <= _PLAIN or kinds <= _WITH_BOOL:
        return True
    values = list(chain.from_iterable(keys))
    while tuple in kinds:
        nested = [v for v in values if v.__class__ is tuple]
        values = [v for v in values if v.__class__ is not tuple]
        values.extend(chain.from_iterable(nested))
        kinds = set(map(type, values))
    if kinds <= _PLAIN or kinds <= _WITH_BOOL:
        return True
    return kinds <= _WITH_FLOAT and all(v == v and v != 0 for v in values)


def canonical(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """The form ``key`` compares by (see the module docstring): hashable, equal for keys the
    fields grouping routes alike. TopologyError for a value without a stable encoding (an
    object whose ``repr`` is the default one)."""
    if key.__class__ is GroupKey:
        return key.canon  # type: ignore[attr-defined, no-any-return]
    if set(map(type, key)) <= _PLAIN:
        return key if key.__class__ is tuple else tuple(key)
    return tuple(map(_value, key))


def _value(v: Any) -> Hashable:
    cls = v.__class__
    if cls in _PLAIN:
        return v  # type: ignore[no-any-return]
    if cls is float:
        return ("float", repr(v))
    if cls is bool:
        return ("bool", v)
    if isinstance(v, float):
        return ("float", float.__repr__(v))
    if isinstance(v, str):
        return str.__str__(v)
    if isinstance(v, bytes):
        return bytes(v)
    if isinstance(v, int):
        return int.__int__(v)
    if isinstance(v, (list, tuple)):
        return ("list", tuple(map(_value, v)))
    if isinstance(v, (set, frozenset)):
        return ("set", frozenset(map(_value, v)))
    if isinstance(v, dict):
        return ("dict", frozenset((_value(k), _value(x)) for k, x in v.items()))
    return ("object", encode_value(v))


class GroupKey(tuple):  # type: ignore[type-arg]
    """A key's values (a tuple), equal to another key, and hashed, by their canonical form.

    Concatenated (``key + (value,)``) it gives a plain tuple of the values it holds."""

    canon: tuple[Any, ...]

    def __new__(cls, values: Iterable[Any]) -> GroupKey:
        self = super().__new__(cls, values)
        self.canon = tuple(map(_value, self))
        return self

    def __hash__(self) -> int:
        return hash(self.canon)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, tuple):
            return self.canon == canonical(other)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        if isinstance(other, tuple):
            return self.canon != canonical(other)
        return NotImplemented

    def __reduce__(self) -> tuple[Any, ...]:
        return tuple, (tuple(self),)     # copied or pickled, a plain tuple of its values
