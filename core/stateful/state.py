"""The state a stateful bolt sees: :class:`KeyValueState`."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["KeyValueState"]


class KeyValueState:
    """A key-value map that is checkpointed with the topology (API.md section 11).

    Keys and values are any values the topology's serializer encodes (``squall.serializer``,
    msgpack by default: a tuple comes back as a list after a restart). Keys are compared by
    their encoding. A value is encoded when it is ``put``: change it in place afterwards and
    ``put`` it again, or the checkpoint keeps the value it had. An unencodable key or value
    raises :class:`~squall.errors.SerializationError` at the call (failing the tuple in
    process). Used from the bolt's own task only (the worker's loop thread).
    """

    __slots__ = ("_changes", "_data", "_dumps", "_loads")

    def __init__(self, data: dict[bytes, Any], dumps: Callable[[Any], bytes],
                 loads: Callable[[bytes], Any]) -> None:
        #: encoded key -> value (decoded)
        self._data = data
        self._dumps = dumps
        self._loads = loads
        #: encoded key -> encoded value, or None (deleted), since the last checkpoint
        self._changes: dict[bytes, bytes | None] = {}

    @classmethod
    def from_committed(cls, committed: dict[bytes, bytes], dumps: Callable[[Any], bytes],
                       loads: Callable[[bytes], Any]) -> KeyValueState:
        """The state as a provider's committed map holds it."""
        return cls({k: loads(v) for k, v in committed.items()}, dumps, loads)

    def get(self, key: Any, default: Any = None) -> Any:
        """The value of ``key``, or ``default``."""
        return self._data.get(self._dumps(key), default)

    def put(self, key: Any, value: Any) -> None:
        """Set ``key`` to ``value`` (in the next checkpoint)."""
        k = self._dumps(key)
        self._changes[k] = self._dumps(value)
        self._data[k] = value

    def delete(self, key: Any) -> None:
        """Remove ``key`` (nothing happens if it is absent)."""
        k = self._dumps(key)
        if self._data.pop(k, _MISSING) is not _MISSING:
            self._changes[k] = None

    def items(self) -> Iterator[tuple[Any, Any]]:
        """Every ``(key, value)``, keys decoded."""
        loads = self._loads
        for k, v in list(self._data.items()):
            yield loads(k), v

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: Any) -> bool:
        return self._dumps(key) in self._data

    def take_changes(self) -> dict[bytes, bytes | None]:
        """The changes since the last call (encoded), and start collecting anew."""
        changes = self._changes
        self._changes = {}
        return changes

    def __repr__(self) -> str:
        return f"KeyValueState({len(self._data)} keys, {len(self._changes)} changed)"


_MISSING = object()
