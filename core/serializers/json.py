"""The ``json`` serializer: UTF-8 JSON, readable on the wire and slower than msgpack."""
from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from collections.abc import Mapping

from squall.errors import SerializationError
from squall.serializers.types import ValueTypes
from squall.spi.serializer import Serializer

__all__ = ["JsonSerializer"]


class JsonSerializer(Serializer):
    """UTF-8 JSON (readable, slower). ``bytes`` travel as ``{"__bytes__": "<base64>"}`` and
    the values of :mod:`squall.serializers.types` as ``{"__squall__": [tag, value]}``, so a
    dict whose only key is one of those two is reserved; tuples decode as lists."""

    name = "json"

    def __init__(self, conf: Mapping[str, Any] | None = None) -> None:
        super().__init__(conf)
        self.types = ValueTypes(self.conf)

    def dumps(self, obj: Any) -> bytes:
        try:
            return json.dumps(obj, separators=(",", ":"), default=self._default).encode()
        except (TypeError, ValueError) as exc:
            raise SerializationError(f"json cannot encode: {exc}") from exc

    def loads(self, data: bytes) -> Any:
        try:
            return json.loads(data, object_hook=self._object)
        except (ValueError, UnicodeDecodeError, binascii.Error) as exc:
            raise SerializationError(f"json cannot decode {len(data)} bytes: {exc}") from exc

    def _default(self, obj: Any) -> Any:
        if isinstance(obj, bytes):
            return {"__bytes__": base64.b64encode(obj).decode("ascii")}
        tag, value = self.types.encode(obj)
        return {"__squall__": [tag, value]}

    def _object(self, d: dict[str, Any]) -> Any:
        if len(d) == 1:
            if "__bytes__" in d and isinstance(d["__bytes__"], str):
                return base64.b64decode(d["__bytes__"], validate=True)
            pair = d.get("__squall__")
            if isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str):
                return self.types.decode(pair[0], pair[1])
        return d
