"""The ``json`` serializer: UTF-8 JSON, readable on the wire and slower than msgpack."""
from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from squall.errors import SerializationError
from squall.spi.serializer import Serializer

__all__ = ["JsonSerializer"]


class JsonSerializer(Serializer):
    """UTF-8 JSON (readable, slower). ``bytes`` travel as ``{"__bytes__": "<base64>"}``, so a
    dict whose only key is ``__bytes__`` is reserved; tuples decode as lists."""

    name = "json"

    def dumps(self, obj: Any) -> bytes:
        try:
            return json.dumps(obj, separators=(",", ":"), default=_json_default).encode()
        except (TypeError, ValueError) as exc:
            raise SerializationError(f"json cannot encode: {exc}") from exc

    def loads(self, data: bytes) -> Any:
        try:
            return json.loads(data, object_hook=_json_object)
        except (ValueError, UnicodeDecodeError, binascii.Error) as exc:
            raise SerializationError(f"json cannot decode {len(data)} bytes: {exc}") from exc


def _json_default(obj: Any) -> Any:
    if isinstance(obj, bytes):
        return {"__bytes__": base64.b64encode(obj).decode("ascii")}
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def _json_object(d: dict[str, Any]) -> Any:
    if len(d) == 1 and "__bytes__" in d and isinstance(d["__bytes__"], str):
        return base64.b64decode(d["__bytes__"], validate=True)
    return d
