"""Leader election built from a state store's own primitives (used by the ``memory`` store).

Each candidate creates an ephemeral sequential node ``<path>/candidate-<seq>`` holding its
identifier; the lowest sequence leads. Waiting candidates watch the election node's children
and re-check when one goes away, so a leader's client closing hands leadership to the next.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from squall.errors import StateError
from squall.spi.state import LeaderElection, StateStore
from squall.state._paths import check_path, join, name_of

PREFIX = "candidate-"


def _sequence(name: str) -> int:
    return int(name[len(PREFIX):])


class NodeElection(LeaderElection):
    """A candidacy under ``path`` for ``identifier`` on ``store`` (see :class:`LeaderElection`).

    A cancelled object stays cancelled; make a new one to contend again. The store calls
    :meth:`cancel` on close, so a waiting :meth:`run` returns ``False`` then.
    """

    def __init__(self, store: StateStore, path: str, identifier: str) -> None:
        self._store = store
        self._path = check_path(path)
        self._identifier = str(identifier)
        self._cancelled = threading.Event()
        self._wake: threading.Event | None = None
        self._node: str | None = None
        self._leading = False
        self._run_lock = threading.Lock()

    def run(self, func: Callable[[], Any]) -> bool:
        if not callable(func):
            raise TypeError("leader function must be callable")
        with self._run_lock:
            if self._cancelled.is_set():
                return False
            if not self._campaign():
                return False
            self._leading = True
            try:
                func()
            finally:
                self._resign()
            return True

    def _campaign(self) -> bool:
        """Create our candidate node and wait until it is the lowest; False if cancelled."""
        try:
            self._node = self._store.create(join(self._path, PREFIX),
                                            self._identifier.encode("utf-8"),
                                            ephemeral=True, sequence=True)
        except StateError:
            if self._cancelled.is_set():
                return False
            raise
        mine = name_of(self._node)
        while True:
            wake = threading.Event()
            self._wake = wake
            if self._cancelled.is_set():
                self._resign()
                return False
            try:
                names = self._store.children(self._path, watch=lambda _path, w=wake: w.set())
            except StateError:
                if self._cancelled.is_set():
                    return False
                raise
            candidates = sorted((n for n in names if n.startswith(PREFIX)), key=_sequence)
            if mine not in candidates:  # our node vanished: the store was closed
                self._node = None
                return False
            if candidates[0] == mine:
                return True
            wake.wait()

    def _resign(self) -> None:
        self._leading = False
        node, self._node = self._node, None
        if node is not None:
            try:
                self._store.delete(node)
            except StateError:
                pass  # closed store: its ephemeral node is already gone

    def cancel(self) -> None:
        self._cancelled.set()
        wake = self._wake
        if wake is not None:
            wake.set()

    @property
    def is_leader(self) -> bool:
        node = self._node
        if not self._leading or node is None:
            return False
        try:
            return self._store.exists(node)
        except StateError:
            return False

    def contenders(self) -> list[str]:
        names = sorted((n for n in self._store.children(self._path) if n.startswith(PREFIX)),
                       key=_sequence)
        out = []
        for name in names:
            data = self._store.get(join(self._path, name))
            if data is not None:
                out.append(data.decode("utf-8", "replace"))
        return out
