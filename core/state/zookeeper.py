"""The ``zookeeper`` state store: the cluster's shared state on a ZooKeeper ensemble (kazoo).

Configuration: ``storm.zookeeper.servers`` (host names; ``host:port`` entries keep their port)
and ``storm.zookeeper.port``; every path lives under the chroot ``storm.zookeeper.root``
(created at start when missing); ``storm.zookeeper.session.timeout`` and
``storm.zookeeper.connection.timeout`` (ms); ``storm.zookeeper.retry.times`` and
``storm.zookeeper.retry.interval`` (ms) bound how long one operation waits for a lost
connection: at most ``max(connection.timeout, retry.times * retry.interval)``, then StateError.
With ``storm.zookeeper.auth.scheme`` / ``.payload`` the store authenticates and every node it
creates (the root too) is closed to everyone else; see :mod:`squall.state._zk_auth`.

Reliability. kazoo reconnects forever in the background. After every reconnection the store
re-sets the watches it still owes its callers (firing those whose node changed meanwhile). When
the session itself was lost (expired), it first re-creates the root if it is gone and the
ephemeral nodes it created, with their latest data, then calls the reconnect listeners; all of
this runs on a store thread. Watches are signals, not a log: the daemons also re-read their
state periodically. A connection away longer than the session timeout reconnects as a client
that has seen nothing, so a ZooKeeper wiped or restored from an older snapshot takes it back
(see :mod:`squall.state._zk_outage`); when ZooKeeper's state went backwards the store handles
it as a lost session even if the session survived.
"""
from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from squall.errors import ConfigError, StateError
from squall.spi.state import LeaderElection, StateStore, WatchCallback
from squall.state import _zk_ops
from squall.state._paths import check_path, check_value
from squall.state._zk_auth import ZkAuth
from squall.state._zk_election import ZooKeeperElection
from squall.state._zk_outage import OutageGuard, Reset
from squall.state._zk_watches import Watch, WatchRegistry

log = logging.getLogger(__name__)


def _unless_none(value: Any, default: Any) -> Any:
    return default if value is None else value


class ZooKeeperStateStore(StateStore):
    """A ZooKeeper client with the :class:`~squall.spi.state.StateStore` contract. Thread-safe."""

    name = "zookeeper"

    def __init__(self, conf: Mapping[str, Any] | None = None) -> None:
        super().__init__(conf)
        c = self.conf
        servers = c.get("storm.zookeeper.servers") or ["localhost"]
        if isinstance(servers, str):
            servers = [s for s in servers.split(",") if s.strip()]
        port = int(c.get("storm.zookeeper.port") or 2181)
        self.hosts = ",".join(s.strip() if ":" in str(s) else f"{str(s).strip()}:{port}"
                              for s in servers)
        root = str(c.get("storm.zookeeper.root") or "/").rstrip("/") or "/"
        self.root = check_path(root)
        self._auth = ZkAuth.from_conf(c)
        if self._auth is not None and self.root == "/":
            raise ConfigError("storm.zookeeper.auth needs a storm.zookeeper.root of its own "
                              "(not /): squall closes its root node to everyone else")
        self._session_timeout = float(c.get("storm.zookeeper.session.timeout") or 20000) / 1000
        self._connect_timeout = float(c.get("storm.zookeeper.connection.timeout") or 15000) / 1000
        # 0 is a value here (no retry beyond the connection timeout), not "the default"
        retry_times = int(_unless_none(c.get("storm.zookeeper.retry.times"), 5))
        self._retry_interval = float(_unless_none(c.get("storm.zookeeper.retry.interval"),
                                                  1000)) / 1000
        self._op_deadline = max(self._connect_timeout, retry_times * self._retry_interval)
        self._client: Any = None
        self._retry: Any = None
        self._outage = OutageGuard(self._session_timeout, self.hosts)
        self._closed = False
        self._closed_event = threading.Event()
        self._connected = threading.Event()
        self._session_lost = False
        self._resync_lock = threading.Lock()
        self._ephemerals: dict[str, bytes] = {}
        self._eph_lock = threading.Lock()
        self._watches = WatchRegistry()
        self._listeners: list[Callable[[], None]] = []
        self._elections: weakref.WeakSet[ZooKeeperElection] = weakref.WeakSet()

    # -- lifecycle
    def start(self) -> None:
        """Connect (creating the chroot if missing); StateError within the connection timeout
        when no server answers, or (with authentication) when the tree is open to others or
        not accessible to this identity. Idempotent."""
        if self._closed:
            raise StateError("the zookeeper state store is closed")
        if self._client is not None:
            return
        from kazoo.client import KazooClient
        from kazoo.retry import KazooRetry

        retry = self._retry = KazooRetry(max_tries=-1, delay=0.1, backoff=2,
                                         max_delay=max(0.2, self._retry_interval))
        if self.root != "/":
            self._ensure_root()
        client = KazooClient(hosts=self.hosts + ("" if self.root == "/" else self.root),
                             timeout=self._session_timeout, connection_retry=retry.copy(),
                             **(self._auth.client_kwargs() if self._auth else {}))
        client.add_listener(self._on_state)
        self._connect(client)
        self._client = client
        self._outage.start(client)

    def _connect(self, client: Any) -> None:
        try:
            client.start(timeout=self._connect_timeout)
        except client.handler.timeout_exception as exc:
            raise StateError(
                f"cannot reach ZooKeeper at {self.hosts} within {self._connect_timeout:g}s "
                "(check storm.zookeeper.servers and storm.zookeeper.port; "
                "`squall dev-zookeeper` starts one for development)") from exc

    def _ensure_root(self) -> None:
        """Create the chroot (and its parents) through a client without it; blocks up to the
        connection timeout; StateError."""
        from kazoo.client import KazooClient
        from kazoo.exceptions import KazooException, NodeExistsError

        auth = self._auth
        boot = KazooClient(hosts=self.hosts, timeout=self._session_timeout,
                           connection_retry=self._retry.copy(),
                           auth_data=[(auth.scheme, auth.payload)] if auth else None)
        self._connect(boot)
        try:
            if auth is None:
                boot.ensure_path(self.root)
            else:   # the parents stay as open as others made them; the root is ours alone
                parent = self.root.rsplit("/", 1)[0]
                if parent:
                    boot.ensure_path(parent)
                if boot.exists(self.root) is None:
                    try:
                        boot.create(self.root, b"", acl=auth.acl())
                    except NodeExistsError:
                        pass   # another daemon created it meanwhile: checked below
                auth.check_closed(boot, self.root, self._connect_timeout)
        except KazooException as exc:
            raise StateError(f"cannot create the ZooKeeper root {self.root}: {exc!r}") from exc
        finally:
            boot.stop()
            boot.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._closed_event.set()
        self._outage.close()
        for election in list(self._elections):
            election.cancel()
        client, self._client = self._client, None
        self._watches.clear()
        if client is not None:
            client.stop()   # ends the session: the server drops our ephemeral nodes now
            client.close()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def client_id(self) -> tuple[int, bytes] | None:
        """``(session id, password)`` of the current session, ``None`` when disconnected
        (tests use it to expire the session)."""
        return self._client.client_id if self._client is not None else None

    def _require_client(self) -> Any:
        client = self._client
        if self._closed or client is None:
            raise StateError("the zookeeper state store is closed" if self._closed
                             else "the zookeeper state store is not started; call start()")
        return client

    # -- connection state (kazoo's connection thread: never block here)
    def _on_state(self, state: str) -> None:
        self._outage.connection_changed(state)
        if state == "CONNECTED":
            self._connected.set()
            if self._client is not None and not self._closed:
                threading.Thread(target=self._resync, daemon=True,
                                 name="squall-zookeeper-resync").start()
        else:
            self._connected.clear()
            if state == "LOST" and not self._closed:
                self._session_lost = True
                if self._outage.resetting:   # expected: the reconnection warns, once
                    log.info("ZooKeeper session lost; reconnecting to %s", self.hosts)
                else:
                    log.warning("ZooKeeper session lost; reconnecting to %s", self.hosts)

    def _resync(self) -> None:
        """After a reconnection: re-create the root and ephemerals (new session, or state gone
        backwards), re-set watches, notify."""
        with self._resync_lock:
            if self._closed:
                return
            lost, self._session_lost = self._session_lost, False
            expired = lost
            reset = self._outage.take_reset()
            rolled_back: str | None = None
            try:
                if reset is not None or lost:
                    rolled_back = self._check_root(reset)
                    lost = lost or rolled_back is not None
                if lost:
                    self._recreate_ephemerals()
                self._watches.reset(
                    lambda w: self._call(lambda t: self._register(w, t), f"watch {w.path}")[1],
                    self._fire)
            except StateError as exc:
                if self._closed:
                    return
                self._session_lost = self._session_lost or lost
                if reset is not None:
                    self._outage.put_back(reset)
                log.warning("re-syncing ZooKeeper state failed (retried on reconnect): %s", exc)
                return
            if reset is not None and lost:
                log.warning("reconnected to ZooKeeper at %s %s after %.0fs without a "
                            "connection%s; ephemeral nodes re-created, watches re-set, "
                            "registrations renewed", self.hosts,
                            "with a new session" if expired else "(the session survived)",
                            reset.down_for, f"; {rolled_back}" if rolled_back else "")
            elif lost:
                log.info("new ZooKeeper session established; ephemeral nodes re-created")
            elif reset is not None:
                log.info("reconnected to ZooKeeper at %s after %.0fs without a connection; "
                         "the session survived", self.hosts, reset.down_for)
            if lost:
                for callback in list(self._listeners):
                    try:
                        callback()
                    except Exception:
                        log.exception("state store reconnect listener raised")

    def _check_root(self, reset: Reset | None) -> str | None:
        """Re-create the root when it is gone (a wiped ZooKeeper). Returns why ZooKeeper's
        state looks wiped or rolled back (it answers with an older zxid than the client saw
        before ``reset``), else None."""
        # the answer carries the server's newest zxid, which kazoo keeps as last_zxid
        root = self._call(lambda t: self._require_client().exists_async("/").get(timeout=t),
                          f"exists {self.root}")
        now = int(getattr(self._require_client(), "last_zxid", 0) or 0)
        if root is None and self.root != "/":
            self._ensure_root()
            log.info("re-created the ZooKeeper root %s", self.root)
        if reset is not None and 0 < now < reset.seen_zxid:
            return (f"ZooKeeper's state looks wiped or rolled back (it is at zxid {now:#x}, "
                    f"this store had seen {reset.seen_zxid:#x})")
        return None

    def _recreate_ephemerals(self) -> None:
        from kazoo.exceptions import NodeExistsError

        with self._eph_lock:
            nodes = dict(self._ephemerals)
        for path, data in nodes.items():
            def op(t: float, path: str = path, data: bytes = data) -> None:
                c = self._require_client()
                try:
                    c.create_async(path, data, ephemeral=True, makepath=True).get(timeout=t)
                except NodeExistsError:
                    stat = c.exists_async(path).get(timeout=t)
                    session = (c.client_id or (None,))[0]
                    if stat is not None and stat.ephemeralOwner != session:
                        log.warning("cannot re-create ephemeral %s: another client owns it", path)
                        with self._eph_lock:
                            self._ephemerals.pop(path, None)
            self._call(op, f"re-create ephemeral {path}")

    # -- the retry loop every operation goes through
    def _call(self, op: Callable[[float], Any], what: str) -> Any:
        """Run ``op(timeout)`` until it succeeds, retrying while the connection is away for
        at most the operation deadline; every failure becomes a StateError."""
        from kazoo.exceptions import ConnectionClosedError, KazooException

        retryable = _zk_ops.retryable()
        deadline = time.monotonic() + self._op_deadline
        while True:
            self._require_client()
            try:
                return op(max(0.05, deadline - time.monotonic()))
            except ConnectionClosedError as exc:
                raise _zk_ops.translate(exc, what) from exc
            except retryable as exc:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise StateError(f"{what}: ZooKeeper at {self.hosts} unavailable for "
                                     f"{self._op_deadline:g}s ({type(exc).__name__})") from exc
                if self._connected.is_set():
                    self._closed_event.wait(min(remaining, 0.05))
                else:
                    self._connected.wait(min(remaining, self._retry_interval))
            except KazooException as exc:
                raise _zk_ops.translate(exc, what) from exc

    # -- watches
    def _register(self, watch: Watch, t: float) -> Any:
        """Read ``watch.path`` setting ``watch``; return ``(value, token)``."""
        read = _zk_ops.read_data if watch.kind == "data" else _zk_ops.read_children
        return read(self._require_client(), watch.path, watch, t)

    def _fire(self, watch: Watch) -> None:
        if self._closed:
            return
        try:
            watch.callback(watch.path)
        except Exception:
            log.exception("state watch callback for %s raised", watch.path)

    def _watched_read(self, kind: str, path: str, callback: WatchCallback | None) -> Any:
        read = _zk_ops.read_data if kind == "data" else _zk_ops.read_children
        watch = self._watches.pending(kind, path, callback, self._fire) if callback else None
        value, token = self._call(lambda t: read(self._require_client(), path, watch, t),
                                  f"{'get' if kind == 'data' else 'children of'} {path}")
        if watch is not None:
            watch.token = token
        return value

    # -- the SPI
    def create(self, path: str, data: bytes = b"", *, ephemeral: bool = False,
               sequence: bool = False, makepath: bool = True) -> str:
        check_path(path, sequence=sequence)
        data = check_value(data)
        created: str = self._call(
            lambda t: self._require_client().create_async(
                path, data, ephemeral=ephemeral, sequence=sequence,
                makepath=makepath).get(timeout=t),
            f"create {path}")
        if ephemeral:
            with self._eph_lock:
                self._ephemerals[created] = data
        return created

    def put(self, path: str, data: bytes, *, ephemeral: bool = False) -> None:
        if check_path(path) == "/":
            raise StateError("cannot put a value on the root node '/'")
        data = check_value(data)
        created_ephemeral = self._call(
            lambda t: _zk_ops.put(self._require_client(), path, data, ephemeral, t),
            f"put {path}")
        with self._eph_lock:
            if created_ephemeral or path in self._ephemerals:
                self._ephemerals[path] = data

    def get(self, path: str, watch: WatchCallback | None = None) -> bytes | None:
        result: bytes | None = self._watched_read("data", check_path(path), watch)
        return result

    def children(self, path: str, watch: WatchCallback | None = None) -> list[str]:
        result: list[str] = self._watched_read("children", check_path(path), watch)
        return result

    def exists(self, path: str) -> bool:
        check_path(path)
        return self._call(lambda t: self._require_client().exists_async(path).get(timeout=t),
                          f"exists {path}") is not None

    def delete(self, path: str, *, recursive: bool = False) -> None:
        if check_path(path) == "/":
            raise StateError("cannot delete the root node '/'")
        self._call(lambda t: _zk_ops.delete(self._require_client(), path, recursive, t),
                   f"delete {path}")
        with self._eph_lock:
            for p in [p for p in self._ephemerals if p == path or p.startswith(path + "/")]:
                del self._ephemerals[p]

    def add_reconnect_listener(self, callback: Callable[[], None]) -> None:
        self._listeners.append(callback)

    def leader_election(self, path: str, identifier: str) -> LeaderElection:
        self._require_client()
        election = ZooKeeperElection(self, path, identifier)
        self._elections.add(election)
        return election

    def __repr__(self) -> str:
        return f"<ZooKeeperStateStore {self.hosts}{'' if self.root == '/' else self.root}>"

