"""The ``memory`` state provider: checkpoints in the memory of the provider's worker.

The runtime builds it over its worker's :class:`~squall.runtime.memory_stores.MemoryStores`
(``context.memory_stores``): every provider of one owner with the same ``key_prefix`` shares
one store, so state survives a task's restart inside its worker (and, in a LocalCluster, the
restart or rebalance of the topology's workers) but not the worker process, nor the kill of
the topology: a restarted worker process, and a topology submitted again, start from empty
state. Use ``redis`` where state must survive ``kill -9``.
"""
from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from squall.errors import StateProviderError
from squall.runtime.memory_stores import MemoryStores
from squall.stateful.provider import Changes, Options, StateProvider, checked_options

__all__ = ["MemoryStateProvider"]


class _Record:
    __slots__ = ("committed", "data", "prepared", "prepared_txid")

    def __init__(self) -> None:
        self.committed = 0
        self.data: dict[bytes, bytes] = {}
        self.prepared_txid: int | None = None
        self.prepared: dict[bytes, bytes | None] = {}


class _Checkpoints:
    """The provider's part of one owner's stores: key_prefix -> namespace -> record, and the
    lock every provider over it takes."""

    __slots__ = ("lock", "prefixes")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.prefixes: dict[str, dict[str, _Record]] = {}


#: its one option: stores of different prefixes are apart (tests, tenants of one process)
_OPTIONS: Options = {"key_prefix": (lambda v: isinstance(v, str), "a string")}


class MemoryStateProvider(StateProvider):
    """State kept in ``stores`` (thread-safe: a LocalCluster runs several loops); without
    ``stores``, in stores of its own that nothing else sees."""

    def __init__(self, conf: Mapping[str, Any], stores: MemoryStores | None = None) -> None:
        super().__init__(conf)
        c = checked_options(self.conf, _OPTIONS, "memory")
        prefix = str(c.get("key_prefix") or "")
        if stores is None:
            stores = MemoryStores()
        part = stores.part("squall.stateful.memory", _Checkpoints)
        self._lock = part.lock
        with self._lock:
            self._records = part.prefixes.setdefault(prefix, {})

    def _record(self, namespace: str) -> _Record:
        rec = self._records.get(namespace)
        if rec is None:
            rec = self._records[namespace] = _Record()
        return rec

    def load(self, namespace: str) -> tuple[int, dict[bytes, bytes]]:
        with self._lock:
            rec = self._record(namespace)
            return rec.committed, dict(rec.data)

    def txids(self, namespace: str) -> tuple[int, int | None]:
        with self._lock:
            rec = self._record(namespace)
            return rec.committed, rec.prepared_txid

    def prepare(self, namespace: str, txid: int, changes: Changes) -> None:
        with self._lock:
            rec = self._record(namespace)
            rec.prepared_txid = int(txid)
            rec.prepared = dict(changes)

    def commit(self, namespace: str, txid: int) -> None:
        with self._lock:
            rec = self._record(namespace)
            if rec.committed == txid and rec.prepared_txid != txid:
                return
            if rec.prepared_txid != txid:
                raise StateProviderError(f"memory state {namespace!r}: cannot commit txid "
                                         f"{txid}: the prepared txid is {rec.prepared_txid}")
            for key, value in rec.prepared.items():
                if value is None:
                    rec.data.pop(key, None)
                else:
                    rec.data[key] = value
            rec.committed = int(txid)
            rec.prepared_txid = None
            rec.prepared = {}

    def rollback(self, namespace: str) -> None:
        with self._lock:
            rec = self._record(namespace)
            rec.prepared_txid = None
            rec.prepared = {}
