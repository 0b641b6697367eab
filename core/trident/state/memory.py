"""The memory backing map: a dict per state, shared by every task of this process.

Lives as long as the process (LocalCluster, tests); on a cluster each worker process has its
own, so use it there only with one worker. ``clear(state_id)`` forgets one.
"""
from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from squall.trident.state.map_state import BackingMap, Key
from squall.trident.tuple import frozen

_STORES: dict[str, dict[Any, Any]] = {}
_LOCK = threading.Lock()


def _hashable(key: Key) -> Any:
    try:
        hash(key)
    except TypeError:
        return frozen(key)
    return key


class MemoryBackingMap(BackingMap):
    def __init__(self, state_id: str) -> None:
        with _LOCK:
            self.data = _STORES.setdefault(state_id, {})

    def multi_get(self, keys: Sequence[Key]) -> list[Any]:
        get = self.data.get
        return [get(_hashable(k)) for k in keys]

    def multi_put(self, keys: Sequence[Key], values: Sequence[Any]) -> None:
        data = self.data
        for k, v in zip(keys, values):
            data[_hashable(k)] = v


def stored(state_id: str) -> dict[Any, Any]:
    """A copy of what a memory state holds: ``{key tuple: stored value}`` (for tests)."""
    with _LOCK:
        return dict(_STORES.get(state_id, {}))


def clear(state_id: str) -> None:
    with _LOCK:
        _STORES.pop(state_id, None)
