"""pytest fixtures for tests that need a real ZooKeeper (import them into a conftest).

- ``zookeeper`` (session): one :class:`~squall.daemon.dev_zookeeper.DevZooKeeper` on a free
  loopback port, data under pytest's temporary directory. Every conftest that imports this
  fixture shares the same server process (reference-counted); it stops after the session.
- ``zk_conf`` (per test): squall configuration keys pointing at that server with a chroot of
  its own (``/squall-tests/<test>-<random>``), deleted after the test. Tests are isolated.
- ``expire_session`` (per test): ``expire_session(store)`` ends a ``zookeeper`` store's
  session on the server (another client joins the session and closes it), so the store sees
  it expire exactly as after a long partition.

Needs the ``zookeeper`` extra (kazoo) and an installed ZooKeeper (``apt-get install zookeeper``).
"""
from __future__ import annotations

import logging
import re
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from squall.daemon.dev_zookeeper import DevZooKeeper

log = logging.getLogger(__name__)
TEST_ROOT = "/squall-tests"
_lock = threading.Lock()
_shared: DevZooKeeper | None = None
_users = 0


def _acquire(factory: pytest.TempPathFactory) -> DevZooKeeper:
    global _shared, _users
    with _lock:
        if _shared is None:
            _shared = DevZooKeeper(factory.mktemp("zookeeper"))
        _users += 1
        if not _shared.is_running():
            _shared.start()
        return _shared


def _release() -> None:
    global _shared, _users
    with _lock:
        _users -= 1
        if _users == 0 and _shared is not None:
            _shared.stop()
            _shared = None


def _kazoo(hosts: str, **kwargs: Any) -> Any:
    from kazoo.client import KazooClient

    client = KazooClient(hosts=hosts, timeout=10.0, **kwargs)
    client.start(timeout=10.0)
    return client


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevZooKeeper]:
    """The session's ZooKeeper server (started once, restarted by ``zk_conf`` if a test
    stopped it)."""
    server = _acquire(tmp_path_factory)
    try:
        yield server
    finally:
        _release()


@pytest.fixture
def zk_conf(zookeeper: DevZooKeeper, request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """Configuration for a ``zookeeper`` state store under a chroot unique to this test."""
    if not zookeeper.is_running():
        zookeeper.start()
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)[:60]
    root = f"{TEST_ROOT}/{name}-{uuid.uuid4().hex[:8]}"
    conf = {**zookeeper.conf(root), "squall.state": "zookeeper",
            "storm.zookeeper.session.timeout": 10000,
            "storm.zookeeper.connection.timeout": 10000}
    yield conf
    if zookeeper.is_running():
        client = _kazoo(zookeeper.hosts)
        try:
            client.delete(root, recursive=True)
        except Exception as exc:
            log.debug("could not delete test chroot %s: %r", root, exc)
        finally:
            client.stop()
            client.close()


@pytest.fixture
def expire_session(zookeeper: DevZooKeeper) -> Callable[[Any], None]:
    """``expire_session(store_or_client_id)``: make the server expire that session now.

    Accepts a ``ZooKeeperStateStore`` (its ``client_id``), a kazoo client, or a
    ``(session_id, password)`` tuple. Returns once the session is closed on the server; the
    store notices on its next contact and then reconnects with a new session.
    """
    def expire(target: Any) -> None:
        client_id = target if isinstance(target, tuple) else target.client_id
        if not client_id:
            raise AssertionError(f"{target!r} has no live ZooKeeper session to expire")
        impostor = _kazoo(zookeeper.hosts, client_id=client_id)
        impostor.stop()   # closing the joined session ends it for its owner too
        impostor.close()

    return expire
