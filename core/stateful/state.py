"""The state a stateful bolt sees: :class:`KeyValueState`."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["KeyValueState"]

#: values of these types need no trial encoding at ``put`` (ints only within msgpack's range,
#: -2**63 to 2**64 - 1)
_PLAIN = frozenset({str, int, float, bool, bytes, type(None)})


def _freeze(key: Any) -> Any:
    """A key as it was put: lists (as a serializer gives tuples back) become tuples,
    recursively."""
    if isinstance(key, (list, tuple)):
        return tuple(_freeze(k) for k in key)
    return key


class KeyValueState:
    """A key-value map that is checkpointed with the topology (API.md section 11).

    Keys are hashable values the topology's serializer encodes (``squall.serializer``, msgpack
    by default): str, int, float, bool, bytes, None and tuples of those (a tuple key comes back
    a tuple after a restart). Values are any values it encodes, with ``value_dumps`` and
    ``value_loads`` (:func:`squall.stateful.values.value_codec`: with msgpack a tuple value,
    nested too, comes back a tuple); they are encoded when a checkpoint is prepared, so an
    object changed in place after ``put`` is saved as it is then. A key or value
    that cannot be encoded raises :class:`~squall.errors.SerializationError` at ``put`` (an
    unhashable key TypeError), which fails the tuple in ``process``. Used from the bolt's own
    task only (the worker's loop thread). ``put`` of a str key with a plain value costs about
    two dict operations more.
    """

    __slots__ = ("_data", "_dirty", "_dumps", "_loads", "_vdumps")

    def __init__(self, data: dict[Any, Any], dumps: Callable[[Any], bytes],
                 loads: Callable[[bytes], Any],
                 value_dumps: Callable[[Any], bytes] | None = None) -> None:
        self._data = data
        self._dumps = dumps
        self._loads = loads
        #: encodes values (None: as keys)
        self._vdumps = value_dumps or dumps
        #: keys put or deleted since the last checkpoint
        self._dirty: set[Any] = set()

    def get(self, key: Any, default: Any = None) -> Any:
        """The value of ``key``, or ``default``."""
        return self._data.get(key, default)

    @classmethod
    def from_committed(cls, committed: dict[bytes, bytes], dumps: Callable[[Any], bytes],
                       loads: Callable[[bytes], Any],
                       value_dumps: Callable[[Any], bytes] | None = None,
                       value_loads: Callable[[bytes], Any] | None = None) -> KeyValueState:
        """The state as a provider's committed map (encoded keys and values) holds it; values
        are decoded by ``value_loads`` (None: as keys)."""
        vloads = value_loads or loads
        return cls({_freeze(loads(k)): vloads(v) for k, v in committed.items()}, dumps, loads,
                   value_dumps)

    def put(self, key: Any, value: Any) -> None:
        """Set ``key`` to ``value`` (in the next checkpoint)."""
        # measured by callgrind per put of a str key and a small int value (CPython 3.11):
        # about 1,100 instructions over a dict's store, of which the value's check ~320
        if value.__class__ is int:
            # msgpack's range, as constants (a global lookup costs more), compared only past
            # +-(2**30 - 1): a compare of two such ints takes the interpreter's specialized
            # path (-170 instructions)
            if (value < -1073741823 or value > 1073741823) \
                    and not -9223372036854775808 <= value <= 18446744073709551615:
                self._vdumps(value)             # SerializationError now, not at checkpoint
        elif value.__class__ is not str and value.__class__ not in _PLAIN:
            self._vdumps(value)
        if key not in self._dirty:  # the key's first put since the last checkpoint: checked
            if key.__class__ is not str:        # then (-120 instructions per put of a key
                key = self._key(key)            # already put)
            self._dirty.add(key)
        self._data[key] = value

    def delete(self, key: Any) -> None:
        """Remove ``key`` (nothing happens if it is absent)."""
        if key in self._data:
            del self._data[key]
            self._dirty.add(key)

    def _key(self, key: Any) -> Any:
        hash(key)                               # TypeError for an unhashable key
        self._dumps(key)                        # SerializationError for what cannot be encoded
        return key

    def mark_all_changed(self) -> None:
        """Every key is in the next :meth:`take_changes` (state carried over to a new
        namespace is written there whole)."""
        self._dirty.update(self._data)

    def items(self) -> Iterator[tuple[Any, Any]]:
        """Every ``(key, value)``."""
        return iter(list(self._data.items()))

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: Any) -> bool:
        return key in self._data

    def take_changes(self) -> dict[bytes, bytes | None]:
        """The changes since the last call, encoded (a value, or None for a deleted key), and
        start collecting anew."""
        dirty, self._dirty = self._dirty, set()
        data, dumps, vdumps = self._data, self._dumps, self._vdumps
        return {dumps(k): (vdumps(data[k]) if k in data else None) for k in dirty}

    def __repr__(self) -> str:
        return f"KeyValueState({len(self._data)} keys, {len(self._dirty)} changed)"
