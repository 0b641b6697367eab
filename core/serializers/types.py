"""Values beyond msgpack's and JSON's own: what both built-in serializers add, and the types a
topology registers itself.

Built in (tag → type): ``datetime``, ``date``, ``time``, ``timedelta``, ``decimal``
(``Decimal``), ``uuid`` (``UUID``), ``set``, ``frozenset``. Dates and times travel as ISO 8601
text (an aware datetime keeps its UTC offset; a named zone such as ``ZoneInfo("Europe/Paris")``
arrives as that fixed offset). A set's items come back hashable: a tuple inside a set arrives
as a tuple, not as a list.

A topology adds its own with ``topology.serializer.register`` (the role Storm's
``topology.kryo.register`` plays), a mapping ``"module:Type" -> ["module:encode",
"module:decode"]``: ``encode(obj)`` returns a value the serializer can carry (it may itself hold
registered or built-in types), ``decode(value)`` rebuilds the object. Every worker of the
topology imports the three names from the topology's code package.

:class:`ValueTypes` is the table one serializer instance uses: ``encode(obj) -> (tag, value)``
for an object of a known type (``TypeError`` otherwise), ``decode(tag, value)``.
"""
from __future__ import annotations

import datetime as dt
import importlib
import uuid
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from squall.errors import ConfigError, SerializationError

__all__ = ["REGISTER_KEY", "ValueTypes", "hashable"]

REGISTER_KEY = "topology.serializer.register"

Encode = Callable[[Any], Any]
Decode = Callable[[Any], Any]


def hashable(value: Any) -> Any:
    """A decoded set item or dict key: lists (decoded tuples) back into tuples, recursively."""
    if value.__class__ is list:
        return tuple(hashable(v) for v in value)
    return value


def _timedelta(value: Any) -> dt.timedelta:
    days, seconds, micros = value
    return dt.timedelta(days=days, seconds=seconds, microseconds=micros)


_BUILTIN: list[tuple[str, type, Encode, Decode]] = [
    # datetime before date: a datetime is a date too
    ("datetime", dt.datetime, lambda v: v.isoformat(), dt.datetime.fromisoformat),
    ("date", dt.date, lambda v: v.isoformat(), dt.date.fromisoformat),
    ("time", dt.time, lambda v: v.isoformat(), dt.time.fromisoformat),
    ("timedelta", dt.timedelta, lambda v: [v.days, v.seconds, v.microseconds], _timedelta),
    ("decimal", Decimal, str, Decimal),
    ("uuid", uuid.UUID, lambda v: v.bytes, lambda b: uuid.UUID(bytes=bytes(b))),
    ("set", set, list, lambda v: {hashable(x) for x in v}),
    ("frozenset", frozenset, list, lambda v: frozenset(hashable(x) for x in v)),
]


def _load(spec: str, what: str) -> Any:
    module, sep, attr = str(spec).partition(":")
    if not sep or not module or not attr:
        raise ConfigError(f"{REGISTER_KEY}: {what} {spec!r} must be 'module:name'")
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{REGISTER_KEY}: cannot import {what} {spec!r}: {exc}") from exc
    return obj


class ValueTypes:
    """The extra types one serializer carries: the built-ins and ``conf``'s registrations."""

    def __init__(self, conf: Mapping[str, Any] | None = None) -> None:
        self.by_type: dict[type, tuple[str, Encode]] = {}
        self.by_tag: dict[str, Decode] = {}
        self.order: list[tuple[type, str, Encode]] = []
        for tag, kind, encode, decode in _BUILTIN:
            self._add(tag, kind, encode, decode)
        registered = (conf or {}).get(REGISTER_KEY) or {}
        if not isinstance(registered, Mapping):
            raise ConfigError(f"{REGISTER_KEY} must map 'module:Type' to "
                              f"['module:encode', 'module:decode'], got {registered!r:.80}")
        for type_spec, pair in registered.items():
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise ConfigError(f"{REGISTER_KEY}: {type_spec!r} needs [encode, decode], "
                                  f"got {pair!r:.80}")
            kind = _load(type_spec, "type")
            if not isinstance(kind, type):
                raise ConfigError(f"{REGISTER_KEY}: {type_spec!r} is not a class")
            self._add(str(type_spec), kind, _load(pair[0], "encoder"), _load(pair[1], "decoder"))

    def _add(self, tag: str, kind: type, encode: Encode, decode: Decode) -> None:
        self.by_type[kind] = (tag, encode)
        self.by_tag[tag] = decode
        self.order.append((kind, tag, encode))

    def encode(self, obj: Any) -> tuple[str, Any]:
        """``(tag, carried value)`` of ``obj``; TypeError for a type nobody registered."""
        found = self.by_type.get(obj.__class__)
        if found is None:
            for kind, tag, encode in self.order:     # subclasses of a known type
                if isinstance(obj, kind):
                    found = (tag, encode)
                    break
            else:
                if isinstance(obj, int):      # msgpack asks only for ints beyond 64 bits
                    digits = str(obj)
                    raise TypeError(f"the int {digits[:24]}{'...' if len(digits) > 24 else ''} "
                                    f"is beyond the 64 bits msgpack carries (send it as a str "
                                    f"or a Decimal)")
                raise TypeError(f"cannot serialize an object of type {type(obj).__name__} "
                                f"(register it with {REGISTER_KEY})")
        tag, encode = found
        return tag, encode(obj)

    def decode(self, tag: str, value: Any) -> Any:
        decode = self.by_tag.get(tag)
        if decode is None:
            raise SerializationError(f"a value of type {tag!r} arrived, and this worker has no "
                                     f"decoder for it (is it in {REGISTER_KEY}?)")
        try:
            return decode(value)
        except (TypeError, ValueError) as exc:
            raise SerializationError(f"cannot decode a value of type {tag!r}: {exc}") from exc
