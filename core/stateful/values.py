"""How a stateful task's values are encoded in its checkpoints: :func:`value_codec`.

Keys are encoded by the topology's serializer as they always were (their bytes name them in
the provider). Values too, except with the ``msgpack`` serializer (the default): it reads a
tuple back as a list, so values are written by :class:`TupleKeepingMsgpack`, which keeps a
tuple a tuple, nested ones too, and reads every value the serializer wrote before. Other
serializers are used as they are (with ``json`` a tuple value comes back a list).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgpack
from squall.serializers.msgpack import EXT_VALUE, MsgpackSerializer
from squall.spi.serializer import Serializer

__all__ = ["EXT_TUPLE", "TupleKeepingMsgpack", "value_codec"]

#: the msgpack extension type code of a tuple (payload: the msgpack of its items as an
#: array); beside the serializer's :data:`~squall.serializers.msgpack.EXT_VALUE`
EXT_TUPLE = 2

#: the types msgpack packs natively: their subclasses are packed as them (as the serializer
#: does), which ``strict_types`` (that sends tuples to :meth:`TupleKeepingMsgpack._default`)
#: would otherwise refuse
_NATIVE: tuple[type[Any], ...] = (int, float, str, bytes, bytearray, dict, list)


class TupleKeepingMsgpack(MsgpackSerializer):
    """The ``msgpack`` serializer (the same extension values of its ``types``, the same
    reading of what it wrote, the same errors), but a tuple, anywhere in a value, is an
    extension value of its own and comes back a tuple. Plain values cost what they do in the
    serializer: the hook runs only for tuples, subclasses of native types and extension
    values."""

    def __init__(self, conf: Mapping[str, Any] | None = None) -> None:
        super().__init__(conf)
        # strict_types: a tuple reaches the hook instead of being packed as an array
        self._pack = msgpack.Packer(use_bin_type=True, autoreset=True, strict_types=True,
                                    default=self._ext).pack

    def _packb(self, obj: Any) -> bytes:
        return msgpack.packb(obj, use_bin_type=True, strict_types=True, default=self._ext)

    def _ext(self, obj: Any) -> Any:
        if isinstance(obj, tuple):
            return msgpack.ExtType(EXT_TUPLE, self._packb(list(obj)))
        for native in _NATIVE:
            if isinstance(obj, native) and obj.__class__ is not native:
                return native(obj)
        tag, value = self.types.encode(obj)
        return msgpack.ExtType(EXT_VALUE, self._packb([tag, value]))

    def _unext(self, code: int, payload: bytes) -> Any:
        if code == EXT_TUPLE:
            return tuple(self._unpack(payload))
        return super()._unext(code, payload)


def value_codec(serializer: Serializer
                ) -> tuple[Callable[[Any], bytes], Callable[[bytes], Any]]:
    """``(dumps, loads)`` of a stateful task's values under the topology's ``serializer``."""
    if type(serializer) is MsgpackSerializer:
        codec = TupleKeepingMsgpack(serializer.conf)
        return codec.dumps, codec.loads
    return serializer.dumps, serializer.loads
