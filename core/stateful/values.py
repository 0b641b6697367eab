"""How a stateful task's values are encoded in its checkpoints: :func:`value_codec`.

Keys are encoded by the topology's serializer as they always were (their bytes name them in
the provider). Values too, except with the ``msgpack`` serializer (the default): it reads a
tuple back as a list, so values are written by :class:`TupleKeepingMsgpack`, which keeps a
tuple a tuple, nested ones too, and reads every value the serializer wrote before. Other
serializers are used as they are (with ``json`` a tuple value comes back a list).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgpack
from squall.errors import SerializationError
from squall.serializers.msgpack import EXT_VALUE, MsgpackSerializer
from squall.serializers.types import ValueTypes, hashable
from squall.spi.serializer import Serializer

__all__ = ["EXT_TUPLE", "TupleKeepingMsgpack", "value_codec"]

#: the msgpack extension type code of a tuple (payload: the msgpack of its items as an
#: array); beside the serializer's :data:`~squall.serializers.msgpack.EXT_VALUE`
EXT_TUPLE = 2

#: the types msgpack packs natively: their subclasses are packed as them (as the serializer
#: does), which ``strict_types`` (that sends tuples to :meth:`TupleKeepingMsgpack._default`)
#: would otherwise refuse
_NATIVE: tuple[type[Any], ...] = (int, float, str, bytes, bytearray, dict, list)


class TupleKeepingMsgpack:
    """msgpack as :class:`~squall.serializers.msgpack.MsgpackSerializer` writes it (the same
    extension values of ``types``), but a tuple, anywhere in a value, is an extension value
    of its own and comes back a tuple. Plain values cost what they do in the serializer: the
    hook runs only for tuples, subclasses of native types and extension values. ``dumps`` and
    ``loads`` raise :class:`~squall.errors.SerializationError`."""

    def __init__(self, types: ValueTypes) -> None:
        self.types = types
        self._pack = msgpack.Packer(use_bin_type=True, autoreset=True, strict_types=True,
                                    default=self._default).pack

    def _packb(self, obj: Any) -> bytes:
        return msgpack.packb(obj, use_bin_type=True, strict_types=True, default=self._default)

    def _default(self, obj: Any) -> Any:
        if isinstance(obj, tuple):
            return msgpack.ExtType(EXT_TUPLE, self._packb(list(obj)))
        for native in _NATIVE:
            if isinstance(obj, native) and obj.__class__ is not native:
                return native(obj)
        tag, value = self.types.encode(obj)
        return msgpack.ExtType(EXT_VALUE, self._packb([tag, value]))

    def _ext(self, code: int, payload: bytes) -> Any:
        if code == EXT_TUPLE:
            return tuple(self._unpack(payload))
        if code == EXT_VALUE:
            tag, value = self._unpack(payload)
            return self.types.decode(tag, value)
        raise SerializationError(f"unknown msgpack extension type {code}")

    def _unpack(self, data: bytes) -> Any:
        try:
            return msgpack.unpackb(data, raw=False, strict_map_key=False, ext_hook=self._ext)
        except TypeError:       # a map key written as an array (before tuples were kept)
            return msgpack.unpackb(data, raw=False, strict_map_key=False, ext_hook=self._ext,
                                   object_pairs_hook=_keys)

    def dumps(self, obj: Any) -> bytes:
        try:
            return self._pack(obj)
        except (TypeError, ValueError, OverflowError) as exc:
            raise SerializationError(f"msgpack cannot encode {type(exc).__name__}: {exc}") from exc

    def loads(self, data: bytes) -> Any:
        try:
            return self._unpack(data)
        except SerializationError:
            raise
        except Exception as exc:
            raise SerializationError(f"msgpack cannot decode {len(data)} bytes: {exc}") from exc


def _keys(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
    return {hashable(k): v for k, v in pairs}


def value_codec(serializer: Serializer
                ) -> tuple[Callable[[Any], bytes], Callable[[bytes], Any]]:
    """``(dumps, loads)`` of a stateful task's values under the topology's ``serializer``."""
    if type(serializer) is MsgpackSerializer:
        codec = TupleKeepingMsgpack(serializer.types)
        return codec.dumps, codec.loads
    return serializer.dumps, serializer.loads
