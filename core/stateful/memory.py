"""The ``memory`` state provider: checkpoints in this process's memory.

Every provider of one process with the same ``key_prefix`` shares one store, so state
survives a task's restart inside its worker (LocalCluster, tests, local mode) but not the
worker process: a restarted worker starts from empty state. Use ``redis`` where state must
survive ``kill -9``.
"""
from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from squall.errors import StateProviderError
from squall.stateful.provider import Changes, Options, StateProvider, checked_options

__all__ = ["MemoryStateProvider"]


class _Record:
    __slots__ = ("committed", "data", "prepared", "prepared_txid")

    def __init__(self) -> None:
        self.committed = 0
        self.data: dict[bytes, bytes] = {}
        self.prepared_txid: int | None = None
        self.prepared: dict[bytes, bytes | None] = {}


#: its one option: stores of different prefixes are apart (tests, tenants of one process)
_OPTIONS: Options = {"key_prefix": (lambda v: isinstance(v, str), "a string")}

_LOCK = threading.Lock()
#: key_prefix -> namespace -> record, for the life of the process
_STORES: dict[str, dict[str, _Record]] = {}


class MemoryStateProvider(StateProvider):
    """State kept in this process (thread-safe: LocalCluster runs several loops)."""

    def __init__(self, conf: Mapping[str, Any]) -> None:
        super().__init__(conf)
        c = checked_options(self.conf, _OPTIONS, "memory")
        prefix = str(c.get("key_prefix") or "")
        with _LOCK:
            self._records = _STORES.setdefault(prefix, {})

    def _record(self, namespace: str) -> _Record:
        rec = self._records.get(namespace)
        if rec is None:
            rec = self._records[namespace] = _Record()
        return rec

    def load(self, namespace: str) -> tuple[int, dict[bytes, bytes]]:
        with _LOCK:
            rec = self._record(namespace)
            return rec.committed, dict(rec.data)

    def txids(self, namespace: str) -> tuple[int, int | None]:
        with _LOCK:
            rec = self._record(namespace)
            return rec.committed, rec.prepared_txid

    def prepare(self, namespace: str, txid: int, changes: Changes) -> None:
        with _LOCK:
            rec = self._record(namespace)
            rec.prepared_txid = int(txid)
            rec.prepared = dict(changes)

    def commit(self, namespace: str, txid: int) -> None:
        with _LOCK:
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
        with _LOCK:
            rec = self._record(namespace)
            rec.prepared_txid = None
            rec.prepared = {}
