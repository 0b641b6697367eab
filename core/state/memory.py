"""The ``memory`` state store: ZooKeeper's semantics in one process (LocalCluster, tests).

A :class:`MemoryServer` plays the ensemble: it holds the tree. Each :class:`MemoryStateStore` is
one client of it with its own "session": the ephemeral nodes it created vanish when it closes,
and its watch callbacks run on its own dispatcher thread, in order, after the change is complete
and never while the server's lock is held. Clients share a server when it is passed explicitly
(``MemoryStateStore(conf, server=srv)``) or when they name the same
``squall.state.memory.namespace``; without either, a store gets a private server.
"""
from __future__ import annotations

import logging
import queue
import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from squall.errors import StateError
from squall.spi.state import LeaderElection, StateStore, WatchCallback
from squall.state._paths import (
    check_path,
    check_value,
    join,
    name_of,
    parent_of,
    sequence_suffix,
)
from squall.state.election import NodeElection

log = logging.getLogger(__name__)

NAMESPACE_KEY = "squall.state.memory.namespace"
_Fired = list[tuple["MemoryStateStore", WatchCallback, str]]


class _Node:
    __slots__ = ("children", "cversion", "data", "owner")

    def __init__(self, data: bytes, owner: MemoryStateStore | None) -> None:
        self.data = data
        self.owner = owner          # the client owning an ephemeral node, else None
        self.children: set[str] = set()
        self.cversion = 0           # bumps on every child create/delete; feeds sequence names


class MemoryServer:
    """The shared tree. All methods are thread-safe; clients call them, users need not."""

    _registry: ClassVar[weakref.WeakValueDictionary[str, MemoryServer]] = (
        weakref.WeakValueDictionary())
    _registry_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nodes: dict[str, _Node] = {"/": _Node(b"", None)}
        self._data_watches: dict[str, list[tuple[MemoryStateStore, WatchCallback]]] = {}
        self._child_watches: dict[str, list[tuple[MemoryStateStore, WatchCallback]]] = {}

    @classmethod
    def shared(cls, namespace: str) -> MemoryServer:
        """The server for ``namespace``, created on first use; it lives while clients hold it."""
        with cls._registry_lock:
            server = cls._registry.get(namespace)
            if server is None:
                server = cls()
                cls._registry[namespace] = server
            return server

    # -- operations (each takes the lock, then fires watches after releasing it)
    def create(self, client: MemoryStateStore, path: str, data: bytes, ephemeral: bool,
               sequence: bool, makepath: bool) -> str:
        fired: _Fired = []
        with self._lock:
            parent = parent_of(path + "0") if sequence else parent_of(path)
            if parent not in self._nodes:
                if not makepath:
                    raise StateError(f"cannot create {path}: parent {parent} does not exist")
                self._make_parents(parent, fired)
            pnode = self._nodes[parent]
            if pnode.owner is not None:
                raise StateError(f"cannot create {path}: parent {parent} is ephemeral")
            if sequence:
                path = path + sequence_suffix(pnode.cversion)
            if path in self._nodes:
                raise StateError(f"cannot create {path}: node exists")
            self._make(path, data, client if ephemeral else None, fired)
        self._fire(fired)
        return path

    def put(self, client: MemoryStateStore, path: str, data: bytes, ephemeral: bool) -> None:
        fired: _Fired = []
        with self._lock:
            node = self._nodes.get(path)
            if node is not None:
                node.data = data
                if ephemeral and node.owner is not None and node.owner is not client:
                    node.owner = client      # taken over, atomically under the lock
                self._trigger(self._data_watches, path, fired)
            else:
                parent = parent_of(path)
                if parent not in self._nodes:
                    self._make_parents(parent, fired)
                if self._nodes[parent].owner is not None:
                    raise StateError(f"cannot create {path}: parent {parent} is ephemeral")
                self._make(path, data, client if ephemeral else None, fired)
        self._fire(fired)

    def get(self, client: MemoryStateStore, path: str, watch: WatchCallback | None) -> bytes | None:
        with self._lock:
            node = self._nodes.get(path)
            if watch is not None:
                self._add_watch(self._data_watches, path, client, watch)
            return None if node is None else node.data

    def children(self, client: MemoryStateStore, path: str,
                 watch: WatchCallback | None) -> list[str]:
        with self._lock:
            node = self._nodes.get(path)
            if watch is not None:  # an absent node's watch waits for its creation, as in ZK
                table = self._data_watches if node is None else self._child_watches
                self._add_watch(table, path, client, watch)
            return [] if node is None else sorted(node.children)

    def exists(self, path: str) -> bool:
        with self._lock:
            return path in self._nodes

    def delete(self, path: str, recursive: bool) -> None:
        if path == "/":
            raise StateError("cannot delete the root node '/'")
        fired: _Fired = []
        with self._lock:
            node = self._nodes.get(path)
            if node is None:
                return
            if node.children and not recursive:
                raise StateError(f"cannot delete {path}: it has children "
                                 f"({', '.join(sorted(node.children)[:5])}); use recursive")
            self._remove_tree(path, fired)
        self._fire(fired)

    def drop_client(self, client: MemoryStateStore) -> None:
        """Remove ``client``'s ephemeral nodes (firing others' watches) and its watches."""
        fired: _Fired = []
        with self._lock:
            for table in (self._data_watches, self._child_watches):
                for path in list(table):
                    kept = [w for w in table[path] if w[0] is not client]
                    if kept:
                        table[path] = kept
                    else:
                        del table[path]
            owned = [p for p, n in self._nodes.items() if n.owner is client]
            for path in owned:
                self._remove_tree(path, fired)
        self._fire(fired)

    # -- helpers, called with the lock held
    def _make_parents(self, path: str, fired: _Fired) -> None:
        missing = []
        while path not in self._nodes:
            missing.append(path)
            path = parent_of(path)
        if self._nodes[path].owner is not None:
            raise StateError(f"cannot create {missing[-1]}: parent {path} is ephemeral")
        for p in reversed(missing):
            self._make(p, b"", None, fired)

    def _make(self, path: str, data: bytes, owner: MemoryStateStore | None,
              fired: _Fired) -> None:
        parent = parent_of(path)
        self._nodes[path] = _Node(data, owner)
        pnode = self._nodes[parent]
        pnode.children.add(name_of(path))
        pnode.cversion += 1
        self._trigger(self._data_watches, path, fired)
        self._trigger(self._child_watches, parent, fired)

    def _remove_tree(self, path: str, fired: _Fired) -> None:
        node = self._nodes[path]
        for child in sorted(node.children):
            self._remove_tree(join(path, child), fired)
        del self._nodes[path]
        parent = parent_of(path)
        pnode = self._nodes[parent]
        pnode.children.discard(name_of(path))
        pnode.cversion += 1
        self._trigger(self._data_watches, path, fired)
        self._trigger(self._child_watches, path, fired)
        self._trigger(self._child_watches, parent, fired)

    @staticmethod
    def _add_watch(table: dict[str, list[tuple[MemoryStateStore, WatchCallback]]], path: str,
                   client: MemoryStateStore, watch: WatchCallback) -> None:
        entries = table.setdefault(path, [])
        if not any(c is client and w == watch for c, w in entries):  # ZK dedups per watcher
            entries.append((client, watch))

    @staticmethod
    def _trigger(table: dict[str, list[tuple[MemoryStateStore, WatchCallback]]], path: str,
                 fired: _Fired) -> None:
        for client, watch in table.pop(path, ()):
            fired.append((client, watch, path))

    @staticmethod
    def _fire(fired: _Fired) -> None:
        for client, watch, path in fired:
            client._dispatch(watch, path)


class _Dispatcher:
    """One daemon thread running a client's watch callbacks in order (started lazily)."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[WatchCallback, str] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, watch: WatchCallback, path: str) -> None:
        with self._lock:
            if self._closed:
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, daemon=True,
                                                name="squall-memory-state-watches")
                self._thread.start()
            self._queue.put((watch, path))

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None or self._closed:
                return
            watch, path = item
            try:
                watch(path)
            except Exception:
                log.exception("state watch callback for %s raised", path)

    def close(self, timeout: float = 5.0) -> None:
        with self._lock:
            self._closed = True
            thread = self._thread
        self._queue.put(None)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)


class MemoryStateStore(StateStore):
    """One client of a :class:`MemoryServer`; see the module docstring. Thread-safe."""

    name = "memory"
    in_process = True

    def __init__(self, conf: Mapping[str, Any] | None = None, *,
                 server: MemoryServer | None = None) -> None:
        super().__init__(conf)
        if server is None:
            namespace = self.conf.get(NAMESPACE_KEY)
            server = MemoryServer.shared(str(namespace)) if namespace else MemoryServer()
        self._server = server
        self._dispatcher = _Dispatcher()
        self._elections: weakref.WeakSet[NodeElection] = weakref.WeakSet()
        self._closed = False

    @property
    def server(self) -> MemoryServer:
        """The server this client talks to (pass it to more clients to share the tree)."""
        return self._server

    def _check_open(self) -> None:
        if self._closed:
            raise StateError("the memory state store is closed")

    def _dispatch(self, watch: WatchCallback, path: str) -> None:
        if not self._closed:
            self._dispatcher.submit(watch, path)

    def start(self) -> None:
        self._check_open()

    def create(self, path: str, data: bytes = b"", *, ephemeral: bool = False,
               sequence: bool = False, makepath: bool = True) -> str:
        self._check_open()
        check_path(path, sequence=sequence)
        return self._server.create(self, path, check_value(data), ephemeral, sequence, makepath)

    def put(self, path: str, data: bytes, *, ephemeral: bool = False) -> None:
        self._check_open()
        if check_path(path) == "/":
            raise StateError("cannot put a value on the root node '/'")
        self._server.put(self, path, check_value(data), ephemeral)

    def get(self, path: str, watch: WatchCallback | None = None) -> bytes | None:
        self._check_open()
        return self._server.get(self, check_path(path), watch)

    def children(self, path: str, watch: WatchCallback | None = None) -> list[str]:
        self._check_open()
        return self._server.children(self, check_path(path), watch)

    def exists(self, path: str) -> bool:
        self._check_open()
        return self._server.exists(check_path(path))

    def delete(self, path: str, *, recursive: bool = False) -> None:
        self._check_open()
        self._server.delete(check_path(path), recursive)

    def add_reconnect_listener(self, callback: Callable[[], None]) -> None:
        """Accepted and never called: an in-process client cannot lose its session."""

    def leader_election(self, path: str, identifier: str) -> LeaderElection:
        self._check_open()
        election = NodeElection(self, path, identifier)
        self._elections.add(election)
        return election

    def close(self) -> None:
        if self._closed:
            return
        for election in list(self._elections):
            election.cancel()
        self._closed = True
        self._server.drop_client(self)
        self._dispatcher.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<MemoryStateStore {state} server=0x{id(self._server):x}>"
