"""The memory backing map: a dict per state id, in the stores of the task's worker
(``context.memory_stores``, see :mod:`squall.runtime.memory_stores`), shared by every task
of that owner: a worker process on a cluster (so use it there only with one worker), the
topology in a LocalCluster (its workers share it; it is dropped when the topology is killed).

Keys are compared by their canonical form (:func:`squall.trident.keys.canonical`), as the
fields grouping routes them: a NaN key is found again after crossing workers, and ``1``,
``1.0`` and ``True`` are three keys, as they are in a Redis state.
"""
from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from squall.runtime.memory_stores import MemoryStores
from squall.trident.keys import canonical
from squall.trident.state.map_state import BackingMap, Key
from squall.trident.tuple import frozen

__all__ = ["MemoryBackingMap", "stored"]


class _Maps:
    """This backend's part of one owner's stores: state id -> {canonical key: (key, stored
    value)}."""

    __slots__ = ("lock", "maps")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.maps: dict[str, dict[Any, Any]] = {}


def _maps(stores: MemoryStores) -> _Maps:
    return stores.part("squall.trident.memory", _Maps)


class MemoryBackingMap(BackingMap):
    """The map of ``state_id`` in ``stores``."""

    def __init__(self, state_id: str, stores: MemoryStores) -> None:
        part = _maps(stores)
        with part.lock:
            self.data = part.maps.setdefault(state_id, {})

    def multi_get(self, keys: Sequence[Key]) -> list[Any]:
        get = self.data.get
        return [None if (kv := get(canonical(k))) is None else kv[1] for k in keys]

    def multi_put(self, keys: Sequence[Key], values: Sequence[Any]) -> None:
        data = self.data
        for k, v in zip(keys, values):
            data[canonical(k)] = (k, v)


def stored(stores: MemoryStores, state_id: str) -> dict[Any, Any]:
    """A copy of what the memory state ``state_id`` holds in ``stores`` (a worker's
    ``memory_stores``): ``{key tuple: stored value}``, each key as last written, its lists
    as tuples (for tests)."""
    part = _maps(stores)
    with part.lock:
        return {frozen(tuple(k)): v for k, v in part.maps.get(state_id, {}).values()}
