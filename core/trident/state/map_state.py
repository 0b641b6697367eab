"""Map states in Storm's three kinds, over a :class:`BackingMap`.

What each kind stores per key (Storm's layouts, as lists):

- transactional: ``[txid, value]``. A batch whose txid equals the stored one was already
  applied (a transactional spout replays the same rows under the same txid), so it is skipped.
- opaque: ``[txid, previous, current]``. A batch whose txid equals the stored one is applied
  again to ``previous`` (an opaque spout may replay other rows under the same txid); otherwise
  ``current`` becomes ``previous`` and the batch is applied to it.
- non-transactional: the value alone; a replayed batch is applied again (at-least-once).

Writes happen only between ``begin_commit(txid)`` and ``commit(txid)``, which the runtime calls
strictly in txid order. Reads (``multi_get``) return the current values. Called from the
worker's loop thread.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

Key = tuple[Any, ...]
Updater = Callable[[Any], Any]


class BackingMap(ABC):
    """Raw storage of a map state: what the kinds store, by key (a tuple of group values)."""

    @abstractmethod
    def multi_get(self, keys: Sequence[Key]) -> list[Any]:
        """The stored values (``None`` where a key is absent), in ``keys`` order."""

    @abstractmethod
    def multi_put(self, keys: Sequence[Key], values: Sequence[Any]) -> None:
        """Store ``values`` under ``keys``."""

    def close(self) -> None:
        """Release connections (called when the task stops)."""


class MapState(ABC):
    """A map state of one kind. ``multi_update`` and ``multi_put`` only inside a commit."""

    def __init__(self, backing: BackingMap) -> None:
        self.backing = backing
        self.txid: int | None = None

    def begin_commit(self, txid: int) -> None:
        self.txid = txid

    def commit(self, txid: int) -> None:
        self.txid = None

    def _current(self) -> int:
        if self.txid is None:
            raise RuntimeError("a map state is written only inside a commit")
        return self.txid

    @abstractmethod
    def multi_get(self, keys: Sequence[Key]) -> list[Any]:
        """Current values (``None`` for a missing key)."""

    @abstractmethod
    def multi_update(self, keys: Sequence[Key], updaters: Sequence[Updater]) -> list[Any]:
        """Apply ``updater(old value or None)`` per key under this commit's txid; returns the
        new values."""

    @abstractmethod
    def multi_put(self, keys: Sequence[Key], values: Sequence[Any]) -> None:
        """Set values under this commit's txid."""

    def close(self) -> None:
        self.backing.close()


class TransactionalMap(MapState):
    kind = "transactional"

    def multi_get(self, keys: Sequence[Key]) -> list[Any]:
        return [None if s is None else s[1] for s in self.backing.multi_get(keys)]

    def multi_update(self, keys: Sequence[Key], updaters: Sequence[Updater]) -> list[Any]:
        txid = self._current()
        stored = self.backing.multi_get(keys)
        out, put_keys, put_vals = [], [], []
        for key, s, up in zip(keys, stored, updaters):
            if s is not None and s[0] == txid:
                out.append(s[1])            # this txid was applied already
                continue
            new = up(None if s is None else s[1])
            out.append(new)
            put_keys.append(key)
            put_vals.append([txid, new])
        if put_keys:
            self.backing.multi_put(put_keys, put_vals)
        return out

    def multi_put(self, keys: Sequence[Key], values: Sequence[Any]) -> None:
        txid = self._current()
        self.backing.multi_put(keys, [[txid, v] for v in values])


class OpaqueMap(MapState):
    kind = "opaque"

    def multi_get(self, keys: Sequence[Key]) -> list[Any]:
        return [None if s is None else s[2] for s in self.backing.multi_get(keys)]

    def _previous(self, s: Any, txid: int) -> Any:
        if s is None:
            return None
        return s[1] if s[0] == txid else s[2]

    def multi_update(self, keys: Sequence[Key], updaters: Sequence[Updater]) -> list[Any]:
        txid = self._current()
        stored = self.backing.multi_get(keys)
        out, vals = [], []
        for s, up in zip(stored, updaters):
            prev = self._previous(s, txid)
            new = up(prev)
            out.append(new)
            vals.append([txid, prev, new])
        if keys:
            self.backing.multi_put(keys, vals)
        return out

    def multi_put(self, keys: Sequence[Key], values: Sequence[Any]) -> None:
        txid = self._current()
        stored = self.backing.multi_get(keys)
        self.backing.multi_put(keys, [[txid, self._previous(s, txid), v]
                                      for s, v in zip(stored, values)])


class NonTransactionalMap(MapState):
    kind = "non_transactional"

    def multi_get(self, keys: Sequence[Key]) -> list[Any]:
        return self.backing.multi_get(keys)

    def multi_update(self, keys: Sequence[Key], updaters: Sequence[Updater]) -> list[Any]:
        self._current()
        out = [up(s) for s, up in zip(self.backing.multi_get(keys), updaters)]
        if keys:
            self.backing.multi_put(keys, out)
        return out

    def multi_put(self, keys: Sequence[Key], values: Sequence[Any]) -> None:
        self._current()
        self.backing.multi_put(keys, list(values))


KINDS: dict[str, type[MapState]] = {
    "transactional": TransactionalMap, "opaque": OpaqueMap,
    "non_transactional": NonTransactionalMap}
