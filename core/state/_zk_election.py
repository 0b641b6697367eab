"""Leader election for the ``zookeeper`` store, on kazoo's Lock recipe.

Candidates are kazoo lock nodes ``<path>/<uuid>__lock__<seq>`` (ephemeral, sequential), each
holding its identifier as a JSON string, as every value squall keeps in ZooKeeper is JSON.
They are owned by the recipe, not by the store's ephemeral bookkeeping: after a session loss
they are NOT re-created, so leadership passes to the next candidate and the old leader sees
:attr:`is_leader` turn false (a new session id).
"""
from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from squall.errors import StateError
from squall.spi.state import LeaderElection
from squall.state._paths import check_path, join

if TYPE_CHECKING:
    from squall.state.zookeeper import ZooKeeperStateStore

_LOCK_NODE = re.compile(r"__lock__(\d{10})$")


class ZooKeeperElection(LeaderElection):
    """A candidacy under ``path`` (see :class:`~squall.spi.state.LeaderElection`).

    A cancelled object stays cancelled; make a new one to contend again. ``run`` blocks on
    kazoo's lock (it waits through disconnections); the store cancels it on close.
    """

    def __init__(self, store: ZooKeeperStateStore, path: str, identifier: str) -> None:
        self._store = store
        self._path = check_path(path)
        self._identifier = str(identifier)
        self._cancelled = threading.Event()
        self._lock: Any = None
        self._session: int | None = None
        self._leading = False
        self._run_lock = threading.Lock()

    def run(self, func: Callable[[], Any]) -> bool:
        from kazoo.exceptions import CancelledError, KazooException

        if not callable(func):
            raise TypeError("leader function must be callable")
        with self._run_lock:
            client = self._store._require_client()
            lock = client.Lock(self._path, json.dumps(self._identifier))
            self._lock = lock
            if self._cancelled.is_set():
                return False
            try:
                acquired = lock.acquire(blocking=True)
            except CancelledError:
                return False
            except KazooException as exc:
                if self._cancelled.is_set() or self._store.closed:
                    return False
                raise StateError(f"leader election under {self._path} failed: {exc!r}") from exc
            if not acquired:
                return False
            client_id = client.client_id
            self._session = client_id[0] if client_id else None
            self._leading = True
            try:
                func()
            finally:
                self._leading = False
                try:
                    lock.release()
                except KazooException:
                    pass  # closed or expired session: the node is already gone
            return True

    def cancel(self) -> None:
        self._cancelled.set()
        lock = self._lock
        if lock is not None:
            lock.cancel()

    @property
    def is_leader(self) -> bool:
        if not self._leading:
            return False
        client_id = self._store.client_id
        return client_id is not None and client_id[0] == self._session

    def contenders(self) -> list[str]:
        found = []
        for name in self._store.children(self._path):
            match = _LOCK_NODE.search(name)
            if match:
                found.append((int(match.group(1)), name))
        out = []
        for _seq, name in sorted(found):
            data = self._store.get(join(self._path, name))
            if data is not None:
                text = data.decode("utf-8", "replace")
                try:
                    value = json.loads(text)
                except ValueError:
                    value = text        # a candidate of a squall that wrote it bare
                out.append(value if isinstance(value, str) else text)
        return out
