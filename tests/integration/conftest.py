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

Wait for asynchronous outcomes with :func:`squall.testing.waiting.wait_until`, never sleep.
"""
from __future__ import annotations

from squall.testing.zookeeper_fixtures import expire_session, zk_conf, zookeeper  # noqa: F401
