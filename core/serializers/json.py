"""The ``json`` serializer: UTF-8 JSON, readable on the wire and slower than msgpack."""
from __future__ import annotations

import base64
import binascii
import json
import re
from functools import partial
from itertools import chain, compress
from typing import Any

from collections.abc import Mapping

from squall.errors import SerializationError
from squall.serializers.types import ValueTypes
from squall.spi.serializer import Serializer

__all__ = ["JsonSerializer"]

#: the keys of the dicts the serializer writes for bytes and for typed values
_RESERVED_SET = frozenset(("__bytes__", "__squall__"))
_SCALARS = frozenset((str, int, float, bool, type(None), bytes))
_SEQS = frozenset((list, tuple))
_PLAIN = _SCALARS | _SEQS | {dict}
_STR = frozenset((str,))
_DICT = frozenset((dict,))
#: in the text written backwards, a dict key that reads as a number, null, true or false,
#: as json writes a key of those types (a str key may read so too): ``,"1.5":`` reversed.
#: Inside a str every ``"`` is escaped, so ``":`` ends a key and ``{"``, ``,"`` start one.
#: Backwards, the search looks for the two characters ``:"``, each key's end, and its
#: alternatives fail at a key's first letter: 15 % of ``dumps`` for dicts of short keys
_SCALAR_KEY = re.compile(r':"(?:[-+.eE0-9]+|llun|eurt|eslaf|NaN|ytinifnI-?)"[{,]')


class JsonSerializer(Serializer):
    """UTF-8 JSON (readable, slower). ``bytes`` and ``bytearray`` travel as
    ``{"__bytes__": "<base64>"}`` (both decode as bytes, as with msgpack) and the values of
    :mod:`squall.serializers.types` as ``{"__squall__": [tag, value]}``; tuples decode as
    lists.

    ``dumps`` refuses (:class:`~squall.errors.SerializationError`) what ``loads`` would not
    give back as it was: a dict key that is not a str (JSON would make ``1`` the string
    ``"1"``), a dict whose only key is one of those two reserved ones, a value nested deeper
    than Python's recursion limit. The value is walked (:func:`_check_dicts`) only when the
    text written holds a key that reads as a number, null, true or false, or more reserved
    dicts than it wrote itself: values without dicts cost one search of the text, values
    with dicts one regular expression search more (:data:`_SCALAR_KEY`).
    """

    name = "json"

    def __init__(self, conf: Mapping[str, Any] | None = None) -> None:
        super().__init__(conf)
        self.types = ValueTypes(self.conf)

    def dumps(self, obj: Any) -> bytes:
        made = [0]      # the dicts written for bytes and typed values
        try:
            text = json.dumps(obj, separators=(",", ":"), default=partial(self._default, made))
        except (TypeError, ValueError) as exc:
            raise SerializationError(f"json cannot encode: {exc}") from exc
        except RecursionError:
            raise SerializationError("json cannot encode a value nested this deep (past "
                                     "Python's recursion limit)") from None
        if "{" in text and (_SCALAR_KEY.search(text[::-1]) is not None or '{"__' in text and (
                text.count('{"__bytes__":') + text.count('{"__squall__":') > made[0])):
            _check_dicts(obj)       # a key that reads as a scalar, or a reserved dict
        return text.encode()

    def loads(self, data: bytes) -> Any:
        try:
            return json.loads(data, object_hook=self._object)
        except (ValueError, UnicodeDecodeError, binascii.Error) as exc:
            raise SerializationError(f"json cannot decode {len(data)} bytes: {exc}") from exc
        except RecursionError:
            raise SerializationError(f"json cannot decode {len(data)} bytes: nested past "
                                     f"Python's recursion limit") from None

    def _default(self, made: list[int], obj: Any) -> Any:
        made[0] += 1
        if isinstance(obj, (bytes, bytearray)):     # a bytearray arrives as bytes
            return {"__bytes__": base64.b64encode(obj).decode("ascii")}
        tag, value = self.types.encode(obj)
        if value.__class__ is not str:      # a registered type's value may hold dicts
            _check_dicts(value)             # (a set's is a list: one C pass)
        return {"__squall__": [tag, value]}

    def _object(self, d: dict[str, Any]) -> Any:
        if len(d) == 1:
            if "__bytes__" in d and isinstance(d["__bytes__"], str):
                return base64.b64decode(d["__bytes__"], validate=True)
            pair = d.get("__squall__")
            if isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str):
                return self.types.decode(pair[0], pair[1])
        return d


def _check_dicts(obj: Any) -> None:
    """SerializationError for the first dict in ``obj`` with a key that is not a str, or
    whose only key is reserved. Walked level by level without recursion, each level's
    items in a few C passes, so a column of dicts, or of lists, costs no Python call per
    item."""
    stack: list[Any] = [[obj]]
    pop, push = stack.pop, stack.append
    while stack:
        items = pop()
        types = list(map(type, items))
        kinds = set(types)
        if kinds <= _SCALARS:
            continue
        if not kinds <= _PLAIN:         # subclasses, typed values (checked as written)
            for v in items:
                if isinstance(v, dict):
                    _check_keys([v])
                    push(list(v.values()))
                elif isinstance(v, (list, tuple)):
                    push(v)
            continue
        if dict in kinds:
            dicts = items if len(kinds) == 1 else list(
                compress(items, map(_DICT.__contains__, types)))
            _check_keys(dicts)
            push(list(chain.from_iterable(map(dict.values, dicts))))
        if list in kinds or tuple in kinds:
            push(list(chain.from_iterable(items if kinds <= _SEQS else compress(
                items, map(_SEQS.__contains__, types)))))


def _check_keys(dicts: list[dict[Any, Any]]) -> None:
    """SerializationError unless every key of ``dicts`` is a str and none has a reserved
    key alone."""
    keys = set(chain.from_iterable(dicts))      # few distinct ones, mostly
    if not set(map(type, keys)) <= _STR:
        for key in keys:
            if isinstance(key, str):    # a subclass of str: written as a str
                continue
            raise SerializationError(
                f"json cannot carry the dict key {key!r:.40} of type {type(key).__name__} "
                f"(it would arrive as a str); use str keys, or the msgpack serializer")
    if not _RESERVED_SET.isdisjoint(keys):
        for d in dicts:
            if len(d) == 1 and next(iter(d)) in _RESERVED_SET:
                raise SerializationError(
                    f"json cannot carry a dict whose only key is {next(iter(d))!r}: it is "
                    f"how bytes and typed values travel")
