"""The ``zookeeper`` store's book of watches it still owes its callers.

kazoo forgets every watch when the connection drops (it calls them with a ``NONE`` event).
The store keeps each pending user watch here with a token of what the caller last saw
(``(czxid, mzxid)`` for data, ``(czxid, pzxid)`` for children, ``None`` when absent) so that,
after reconnecting, it can set the watch again or fire it at once when the node changed meanwhile.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from squall.spi.state import WatchCallback


class Watch:
    """One pending user watch; also the watcher object handed to kazoo."""

    __slots__ = ("__weakref__", "_fire", "_registry", "callback", "done", "kind", "path", "token")

    def __init__(self, registry: WatchRegistry, kind: str, path: str, callback: WatchCallback,
                 fire: Callable[[Watch], None]) -> None:
        self.kind = kind          # "data" or "children"
        self.path = path
        self.callback = callback
        self.token: Any = None
        self.done = False
        self._registry = registry
        self._fire = fire

    def __call__(self, event: Any) -> None:
        """kazoo's watcher entry point (kazoo's callback thread)."""
        if getattr(event, "type", None) == "NONE":
            return  # connection lost: kept pending, set again after reconnecting
        if self._registry.finish(self):
            self._fire(self)


class WatchRegistry:
    """Pending watches keyed by (kind, path, callback): registering twice sets one watch."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, str, Any], Watch] = {}

    @staticmethod
    def _key(kind: str, path: str, callback: WatchCallback) -> tuple[str, str, Any]:
        try:
            hash(callback)
            return kind, path, callback
        except TypeError:
            return kind, path, id(callback)

    def pending(self, kind: str, path: str, callback: WatchCallback,
                fire: Callable[[Watch], None]) -> Watch:
        key = self._key(kind, path, callback)
        with self._lock:
            watch = self._pending.get(key)
            if watch is None or watch.done:
                watch = Watch(self, kind, path, callback, fire)
                self._pending[key] = watch
            return watch

    def finish(self, watch: Watch) -> bool:
        """Mark ``watch`` fired; True for the first caller only."""
        with self._lock:
            if watch.done:
                return False
            watch.done = True
            key = self._key(watch.kind, watch.path, watch.callback)
            if self._pending.get(key) is watch:
                del self._pending[key]
            return True

    def reset(self, reregister: Callable[[Watch], Any], fire: Callable[[Watch], None]) -> None:
        """Set every pending watch again; fire those whose node changed since it was set.

        ``reregister(watch)`` reads the node with ``watch`` attached and returns the new token.
        """
        with self._lock:
            watches = [w for w in self._pending.values() if not w.done]
        for watch in watches:
            token = reregister(watch)
            if token != watch.token and self.finish(watch):
                fire(watch)

    def clear(self) -> None:
        with self._lock:
            for watch in self._pending.values():
                watch.done = True
            self._pending.clear()
