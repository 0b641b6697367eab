"""The serializer SPI (``squall.serializers``, chosen with ``squall.serializer``)."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any


class Serializer(ABC):
    """Encodes the values of tuples (and whole batches) to bytes and back.

    Must round-trip ``None``, bools, ints (64-bit signed and unsigned), floats, str, bytes,
    lists and tuples (both decoded as lists: the runtime's wire entries hand tuples to
    ``dumps`` and read lists back) and dicts with str keys. Raise
    :class:`~squall.errors.SerializationError` for anything it cannot encode or decode.
    ``loads`` must read back whatever ``dumps`` wrote, as it was (tuples aside): a value it
    cannot carry unchanged (a dict key of a type the format lacks, a value nested too deep)
    is refused by ``dumps``, which fails that tuple only; a batch the receiving worker
    cannot decode is dropped whole.
    """

    name: str = ""

    def __init__(self, conf: Mapping[str, Any] | None = None) -> None:
        self.conf: dict[str, Any] = dict(conf or {})

    @abstractmethod
    def dumps(self, obj: Any) -> bytes: ...

    @abstractmethod
    def loads(self, data: bytes) -> Any: ...
