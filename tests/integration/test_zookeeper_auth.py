"""ZooKeeper digest authentication: squall's nodes are closed to every other identity."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from squall.errors import ConfigError, StateError
from squall.state.cluster_state import ClusterState
from squall.state.zookeeper import ZooKeeperStateStore
from squall.testing.waiting import wait_until

pytestmark = pytest.mark.integration

AUTH = {"storm.zookeeper.auth.scheme": "digest",
        "storm.zookeeper.auth.payload": "squall:s3cret"}


def _kazoo(hosts: str, auth: tuple[str, str] | None = None) -> Any:
    from kazoo.client import KazooClient
    client = KazooClient(hosts=hosts, timeout=10.0, auth_data=[auth] if auth else None)
    client.start(timeout=10.0)
    return client


@pytest.fixture
def secure_conf(zk_conf: dict[str, Any], zookeeper: Any) -> Iterator[dict[str, Any]]:
    conf = {**zk_conf, **AUTH}
    yield conf
    client = _kazoo(zookeeper.hosts, ("digest", AUTH["storm.zookeeper.auth.payload"]))
    try:   # zk_conf's own clean-up cannot delete a closed tree
        client.delete(conf["storm.zookeeper.root"], recursive=True)
    finally:
        client.stop()
        client.close()


def test_strangers_cannot_read_or_write_any_node(secure_conf: dict[str, Any],
                                                 zookeeper: Any) -> None:
    from kazoo.exceptions import NoAuthError
    root = secure_conf["storm.zookeeper.root"]
    store = ZooKeeperStateStore(secure_conf)
    store.start()
    try:
        state = ClusterState(store, secure_conf)
        state.setup()
        store.put("/storms/t-1", b'{"name": "t"}')
        store.create("/supervisors/s1", b"{}", ephemeral=True)
        election = state.leader_election("127.0.0.1:1")
        won, release = threading.Event(), threading.Event()
        threading.Thread(target=lambda: election.run(lambda: (won.set(), release.wait(30))),
                         daemon=True).start()
        wait_until(won.is_set, 30)
        lock_nodes = store.children("/leader-lock")
        assert lock_nodes, "the election created no candidate node"
        paths = [root, f"{root}/storms", f"{root}/storms/t-1", f"{root}/supervisors/s1",
                 f"{root}/leader-lock", f"{root}/leader-lock/{lock_nodes[0]}"]
        for auth in (None, ("digest", "squall:wrong"), ("digest", "other:s3cret")):
            stranger = _kazoo(zookeeper.hosts, auth)
            try:
                for path in paths:
                    with pytest.raises(NoAuthError):
                        stranger.get(path)
                    with pytest.raises(NoAuthError):
                        stranger.set(path, b"taken")
                with pytest.raises(NoAuthError):
                    stranger.get_children(root)
                with pytest.raises(NoAuthError):
                    stranger.create(f"{root}/storms/evil", b"{}")
                with pytest.raises(NoAuthError):
                    stranger.delete(f"{root}/storms/t-1")
            finally:
                stranger.stop()
                stranger.close()
        assert store.get("/storms/t-1") == b'{"name": "t"}'
        release.set()
        election.cancel()
    finally:
        store.close()


def test_a_second_store_with_the_same_identity_shares_the_tree(
        secure_conf: dict[str, Any]) -> None:
    first, second = ZooKeeperStateStore(secure_conf), ZooKeeperStateStore(secure_conf)
    first.start()
    second.start()
    try:
        first.put("/assignments/t-1", b"a")
        assert second.get("/assignments/t-1") == b"a"
    finally:
        first.close()
        second.close()


def test_a_tree_left_open_is_refused_and_a_wrong_password_is_told(
        zk_conf: dict[str, Any], secure_conf: dict[str, Any]) -> None:
    open_store = ZooKeeperStateStore(zk_conf)     # a run without authentication
    open_store.start()
    open_store.put("/storms/t-1", b"{}")
    open_store.close()
    with pytest.raises(StateError, match="is open to world:anyone"):
        ZooKeeperStateStore(secure_conf).start()

    closed = {**secure_conf, "storm.zookeeper.root": secure_conf["storm.zookeeper.root"] + "/c"}
    store = ZooKeeperStateStore(closed)
    store.start()
    store.close()
    wrong = {**closed, "storm.zookeeper.auth.payload": "squall:wrong"}
    with pytest.raises(StateError, match="not accessible to digest user 'squall'"):
        ZooKeeperStateStore(wrong).start()


def test_bad_auth_settings_are_config_errors(zk_conf: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="user:password"):
        ZooKeeperStateStore({**zk_conf, "storm.zookeeper.auth.scheme": "digest",
                             "storm.zookeeper.auth.payload": "no-colon"})
    with pytest.raises(ConfigError, match="must be one of digest"):
        ZooKeeperStateStore({**zk_conf, "storm.zookeeper.auth.scheme": "sasl"})
    with pytest.raises(ConfigError, match="root of its own"):
        ZooKeeperStateStore({**zk_conf, **AUTH, "storm.zookeeper.root": "/"})


def test_a_daemon_with_auth_exits_with_one_line_on_an_open_tree(
        zk_conf: dict[str, Any], tmp_path: Any) -> None:
    import subprocess
    import sys

    import yaml
    open_store = ZooKeeperStateStore(zk_conf)
    open_store.start()
    open_store.put("/storms/t-1", b"{}")
    open_store.close()
    conf_file = tmp_path / "squall.yaml"
    conf_file.write_text(yaml.safe_dump({**zk_conf, **AUTH, "nimbus.port": 0,
                                         "storm.local.dir": str(tmp_path / "local")}))
    proc = subprocess.run([sys.executable, "-m", "squall.cli.main", "--config", str(conf_file),
                           "nimbus"], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if line.startswith("squall: error:")]
    assert len(errors) == 1 and "is open to world:anyone" in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr
