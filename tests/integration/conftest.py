"""Fixtures for integration tests (real services, started here, stopped after).

ZooKeeper (from :mod:`squall.testing.zookeeper_fixtures`; needs `apt-get install zookeeper`):

- ``zookeeper`` (session scope): a :class:`squall.daemon.dev_zookeeper.DevZooKeeper` on a free
  127.0.0.1 port; ``.hosts`` (``"127.0.0.1:PORT"``), ``.port``, ``.conf(root)``, ``.stop()``,
  ``.start()``. One JVM serves the whole test session; do not stop it in your test (start your
  own ``DevZooKeeper(tmp_path)`` for restart tests). If a test stopped it anyway, ``zk_conf``
  starts it again.
- ``zk_conf`` (per test): a conf dict with ``storm.zookeeper.servers: ["127.0.0.1"]``,
  ``storm.zookeeper.port``, a unique chroot ``storm.zookeeper.root`` (deleted after the test),
  ``squall.state: "zookeeper"`` and 10 s session/connection timeouts. Merge it into the conf
  of the daemons or stores under test: each test sees an empty tree.
- ``expire_session`` (per test): ``expire_session(store)`` expires a ``ZooKeeperStateStore``'s
  session on the server (also accepts a kazoo client or a ``(session_id, password)`` tuple).

Redis (from :mod:`squall.testing.redis_fixtures`; needs `apt-get install redis-server`):

- ``redis_server`` (session scope): a ``redis-server`` on a free 127.0.0.1 port, no persistence.
- ``redis_conf`` (per test): ``{host, port, db, key_prefix}`` with a prefix unique to the test
  (its keys deleted after the test).

Wait for asynchronous outcomes with :func:`squall.testing.waiting.wait_until`, never sleep.
"""
from __future__ import annotations

from squall.testing.redis_fixtures import redis_conf, redis_server  # noqa: F401
from squall.testing.zookeeper_fixtures import expire_session, zk_conf, zookeeper  # noqa: F401
