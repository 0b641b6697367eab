"""The zookeeper state store through session expiry, server restarts and unreachable servers."""
from __future__ import annotations

import json
import logging
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from squall.daemon.dev_zookeeper import DevZooKeeper
from squall.daemon.ports import free_port
from squall.errors import StateError
from squall.state.zookeeper import ZooKeeperStateStore
from squall.testing.waiting import wait_until

pytestmark = pytest.mark.integration


@pytest.fixture
def stores() -> Iterator[Callable[[dict[str, Any]], ZooKeeperStateStore]]:
    made: list[ZooKeeperStateStore] = []

    def make(conf: dict[str, Any]) -> ZooKeeperStateStore:
        store = ZooKeeperStateStore(conf)
        store.start()
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


class Recorder:
    def __init__(self) -> None:
        self.paths: list[str] = []

    def __call__(self, path: str) -> None:
        self.paths.append(path)


def test_the_chroot_is_created_and_isolates_paths(zk_conf: dict[str, Any], stores: Any) -> None:
    nested = {**zk_conf, "storm.zookeeper.root": zk_conf["storm.zookeeper.root"] + "/a/b"}
    outer, inner = stores(zk_conf), stores(nested)
    inner.put("/storms/t1", b"{}")
    assert outer.get("/a/b/storms/t1") == b"{}"
    assert inner.children("/") == ["storms"]


def test_session_expiry_recreates_ephemerals_resets_watches_and_notifies(
        zk_conf: dict[str, Any], stores: Any, expire_session: Any) -> None:
    store, other = stores(zk_conf), stores(zk_conf)
    store.create("/supervisors/s1", b"v1", ephemeral=True)
    store.put("/supervisors/s1", b"v2")            # the re-created node carries the latest data
    seq = store.create("/workers/w-", b"seq", ephemeral=True, sequence=True)
    other.put("/assignments/t1", b"a0")
    data_watch, child_watch = Recorder(), Recorder()
    store.get("/assignments/t1", watch=data_watch)
    store.children("/assignments", watch=child_watch)
    reconnected = threading.Event()
    store.add_reconnect_listener(reconnected.set)
    old_session = store.client_id[0]

    expire_session(store)

    assert reconnected.wait(20), "reconnect listener not called after session expiry"
    assert store.client_id[0] != old_session
    assert other.get("/supervisors/s1") == b"v2"
    assert other.get(seq) == b"seq"
    assert data_watch.paths == [] and child_watch.paths == []
    other.put("/assignments/t1", b"a1")
    other.put("/assignments/t2", b"b0")
    wait_until(lambda: data_watch.paths == ["/assignments/t1"]
               and child_watch.paths == ["/assignments"])
    store.close()  # the re-created ephemerals belong to the new session
    wait_until(lambda: not other.exists("/supervisors/s1") and not other.exists(seq))


def test_a_leader_whose_session_expires_hands_over(zk_conf: dict[str, Any], stores: Any,
                                                   expire_session: Any) -> None:
    first, second = stores(zk_conf), stores(zk_conf)
    ea, eb = first.leader_election("/leader-lock", "A"), second.leader_election("/leader-lock", "B")
    a_leads, b_leads, release = threading.Event(), threading.Event(), threading.Event()

    def lead_a() -> None:
        a_leads.set()
        wait_until(lambda: not ea.is_leader or release.is_set(), timeout=30)

    ta = threading.Thread(target=ea.run, args=(lead_a,), daemon=True)
    ta.start()
    assert a_leads.wait(20)
    tb = threading.Thread(target=eb.run, args=(lambda: (b_leads.set(), release.wait(30)),),
                          daemon=True)
    tb.start()
    wait_until(lambda: eb.contenders() == ["A", "B"])
    # each candidate's node holds JSON, as every value squall keeps there (API.md section 9)
    assert sorted(json.loads(first.get(f"/leader-lock/{name}") or b"null")
                  for name in first.children("/leader-lock")) == ["A", "B"]
    expire_session(first)
    assert b_leads.wait(20), "the second candidate did not take over"
    wait_until(lambda: not ea.is_leader)
    ta.join(20)
    assert not ta.is_alive()   # the old leader's function saw is_leader turn false
    release.set()
    tb.join(20)


def test_the_store_rides_out_a_server_restart(tmp_path: Path) -> None:
    with DevZooKeeper(tmp_path / "zk") as server:
        # kazoo waits up to the session timeout for a handshake the restarting server never
        # answers; keep that short and give operations room to ride out a slow JVM start
        conf = {**server.conf("/restart"), "storm.zookeeper.session.timeout": 10000,
                "storm.zookeeper.connection.timeout": 40000}
        store, other = ZooKeeperStateStore(conf), ZooKeeperStateStore(conf)
        store.start()
        other.start()
        try:
            store.create("/supervisors/s1", b"alive", ephemeral=True)
            watch = Recorder()
            store.get("/storms/t1", watch=watch)
            server.stop()
            outcome: list[Any] = []
            writer = threading.Thread(target=lambda: outcome.append(
                store.put("/during/outage", b"queued")), daemon=True)
            writer.start()   # blocks inside the store's retry loop until the server is back
            server.start()
            writer.join(45)
            assert outcome == [None]
            assert other.get("/during/outage") == b"queued"
            # the session survived the restart, or the store re-created its node on a new one
            wait_until(lambda: other.get("/supervisors/s1") == b"alive", timeout=20)
            other.put("/storms/t1", b"{}")
            wait_until(lambda: watch.paths == ["/storms/t1"], timeout=20)
        finally:
            store.close()
            other.close()


def test_the_store_comes_back_to_a_zookeeper_restarted_with_its_data_wiped(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # the wiped server refuses a client that has seen newer zxids than it holds: kazoo keeps
    # them across reconnections, so without help the store was refused for good
    with DevZooKeeper(tmp_path / "zk") as server:
        conf = {**server.conf("/wiped/root"), "storm.zookeeper.session.timeout": 2000,
                "storm.zookeeper.connection.timeout": 10000}
        store = ZooKeeperStateStore(conf)
        store.start()
        caplog.set_level(logging.INFO, logger="squall.state.zookeeper")
        threads = threading.active_count()
        try:
            for rnd in range(2):            # twice: nothing of the first round is left over
                for i in range(20):         # zxids the wiped server has not reached
                    store.put(f"/storms/t{i}", b"{}")
                store.put("/supervisors/s1", f"alive {rnd}".encode(), ephemeral=True)
                watch = Recorder()
                store.get("/storms/t0", watch=watch)
                reconnected = threading.Event()
                store.add_reconnect_listener(reconnected.set)
                caplog.clear()

                server.stop()
                shutil.rmtree(server.data_dir / "data")
                server.start()

                assert reconnected.wait(30), "the store never reconnected to the wiped server"
                # the root (two levels: only a client without the chroot can create it) and
                # the ephemeral node are back, the watch on the node the wipe removed fired
                check = ZooKeeperStateStore(conf)
                check.start()
                try:
                    assert check.get("/supervisors/s1") == f"alive {rnd}".encode()
                finally:
                    check.close()
                wait_until(lambda: watch.paths == ["/storms/t0"], timeout=10)
                store.put("/after", b"ok")
                warnings = [r.getMessage() for r in caplog.records
                            if r.name == "squall.state.zookeeper" and r.levelno >= logging.WARNING]
                assert len(warnings) == 1, warnings
                assert "with a new session after" in warnings[0]
                assert "looks wiped or rolled back" in warnings[0]
            wait_until(lambda: threading.active_count() <= threads, timeout=10,
                       message=lambda: f"threads left: {threading.enumerate()}")
        finally:
            store.close()


def test_an_unreachable_server_is_a_clear_error_without_hanging() -> None:
    port = free_port()
    store = ZooKeeperStateStore({"storm.zookeeper.servers": ["127.0.0.1"],
                                 "storm.zookeeper.port": port,
                                 "storm.zookeeper.connection.timeout": 1000})
    began = time.monotonic()
    with pytest.raises(StateError, match=f"127.0.0.1:{port}"):
        store.start()
    assert time.monotonic() - began < 10
    store.close()


def test_no_retries_wait_only_the_connection_timeout(tmp_path: Path) -> None:
    # storm.zookeeper.retry.times 0 was read as the default 5 (5 x 1 s against 1 s)
    with DevZooKeeper(tmp_path / "zk") as server:
        conf = {**server.conf("/no-retry"), "storm.zookeeper.connection.timeout": 1000,
                "storm.zookeeper.retry.times": 0, "storm.zookeeper.retry.interval": 1000}
        store = ZooKeeperStateStore(conf)
        store.start()
        try:
            store.put("/x", b"1")
            server.kill()
            with pytest.raises(StateError, match=r"unavailable for 1s "):
                store.get("/x")
        finally:
            store.close()


def test_operations_fail_within_the_deadline_when_the_server_is_gone(tmp_path: Path) -> None:
    with DevZooKeeper(tmp_path / "zk") as server:
        conf = {**server.conf("/gone"), "storm.zookeeper.connection.timeout": 1000,
                "storm.zookeeper.retry.times": 2, "storm.zookeeper.retry.interval": 250}
        store = ZooKeeperStateStore(conf)
        store.start()
        try:
            store.put("/x", b"1")
            server.kill()
            began = time.monotonic()
            with pytest.raises(StateError, match="unavailable"):
                store.get("/x")
            assert time.monotonic() - began < 10
        finally:
            store.close()
