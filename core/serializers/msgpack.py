"""The ``msgpack`` serializer: squall's default, compact and fast."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgpack
from squall.errors import SerializationError
from squall.serializers.types import ValueTypes, hashable
from squall.spi.serializer import Serializer

__all__ = ["MsgpackSerializer"]

#: the msgpack extension type code of a value from :mod:`squall.serializers.types`
#: (payload: the msgpack of ``[tag, carried value]``)
EXT_VALUE = 1


class MsgpackSerializer(Serializer):
    """msgpack with bin type for bytes; tuples decode as lists.

    Integers up to unsigned 64 bits round-trip (tuple-tree ids are random 64-bit values).
    Dates, times, Decimal, UUID, sets and the types of ``topology.serializer.register`` travel
    as msgpack extension values (:mod:`squall.serializers.types`); msgpack calls the hooks
    only for such values, so plain values cost nothing more.

    ``loads`` reads back everything ``dumps`` writes: a dict key that is a tuple (written as
    an array, read as an unhashable list) comes back a tuple. Such a value is read a second
    time with a hook that makes keys hashable (:func:`_keys`), so other values cost nothing
    more.
    """

    name = "msgpack"

    def __init__(self, conf: Mapping[str, Any] | None = None) -> None:
        super().__init__(conf)
        self.types = ValueTypes(self.conf)
        self._packer = msgpack.Packer(use_bin_type=True, autoreset=True, default=self._ext)
        self._pack = self._packer.pack

    def _ext(self, obj: Any) -> msgpack.ExtType:
        tag, value = self.types.encode(obj)
        return msgpack.ExtType(EXT_VALUE, msgpack.packb([tag, value], use_bin_type=True,
                                                        default=self._ext))

    def _unext(self, code: int, payload: bytes) -> Any:
        if code != EXT_VALUE:
            raise SerializationError(f"unknown msgpack extension type {code}")
        tag, value = self._unpack(payload)
        return self.types.decode(tag, value)

    def _unpack(self, data: bytes) -> Any:
        try:
            return msgpack.unpackb(data, raw=False, strict_map_key=False, ext_hook=self._unext)
        except TypeError:       # unhashable type: a map key written from a tuple
            return msgpack.unpackb(data, raw=False, strict_map_key=False, ext_hook=self._unext,
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
    """A map whose keys may be arrays: each array key back into a tuple (recursively), as the
    tuple it was written from."""
    return {hashable(k): v for k, v in pairs}
