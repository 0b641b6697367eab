"""Built-in serializers: ``msgpack`` (the default) and ``json`` (readable, slower)."""
from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

import msgpack
from squall.errors import SerializationError
from squall.spi.serializer import Serializer


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
