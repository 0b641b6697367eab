"""The ``msgpack`` serializer: squall's default, compact and fast."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgpack
from squall.errors import SerializationError
from squall.spi.serializer import Serializer

__all__ = ["MsgpackSerializer"]


class MsgpackSerializer(Serializer):
    """msgpack with bin type for bytes; tuples decode as lists.

    Integers up to unsigned 64 bits round-trip (tuple-tree ids are random 64-bit values).
    """

    name = "msgpack"

    def __init__(self, conf: Mapping[str, Any] | None = None) -> None:
        super().__init__(conf)
        self._packer = msgpack.Packer(use_bin_type=True, autoreset=True)
        self._pack = self._packer.pack

    def dumps(self, obj: Any) -> bytes:
        try:
            return self._pack(obj)
        except (TypeError, ValueError, OverflowError) as exc:
            raise SerializationError(f"msgpack cannot encode {type(exc).__name__}: {exc}") from exc

    def loads(self, data: bytes) -> Any:
        try:
            return msgpack.unpackb(data, raw=False, strict_map_key=False)
        except Exception as exc:
            raise SerializationError(f"msgpack cannot decode {len(data)} bytes: {exc}") from exc
