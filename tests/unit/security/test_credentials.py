"""Components get their conf without the cluster's credentials (API.md section 14): what a
worker built with a supervisor's conf hands its spouts and bolts, and what squall itself
opens for them (Trident's state, DRPC fetches) gets back."""
from __future__ import annotations

from typing import Any

from squall import Bolt, LocalCluster, Spout, TopologyBuilder
from squall.security import credentials
from squall.testing import wait_until

CREDENTIALS = {
    "squall.auth.token": "tok-admin-SECRET",
    "nimbus.auth.tokens": {"tok-admin-SECRET": "admin", "tok-alice": "alice"},
    "storm.zookeeper.auth.payload": "squall:zk-PASSWORD",
    "squall.tls.key": "/etc/squall/daemon.key",
    "squall.tls.ca": "/etc/squall/ca.crt",
    "squall.transport.tls.key": "/var/lib/squall/workers/w/tls/worker.key",
    "squall.transport.zmq.curve.server.secret.key": "curve-SECRET",
    "squall.transport.grpc.tls.key.file": "/etc/squall/grpc.key",
}
KEPT = {"nimbus.admins": ["admin"], "nimbus.authentication": "token",
        "squall.transport.tls": True, "topology.workers": 1, "app.db.password": "users-own",
        "topology.state.provider.config": {"password": "users-own-too"}}


def test_without_credentials_drops_the_clusters_keys_and_keeps_the_rest() -> None:
    conf = {**CREDENTIALS, **KEPT,
            "squall.cli.overrides": {"squall.auth.token": "from-c", "topology.debug": True}}
    shown = credentials.without_credentials(conf)
    assert shown == {**KEPT, "squall.cli.overrides": {"topology.debug": True}}
    assert conf["squall.auth.token"] == "tok-admin-SECRET"     # the original is untouched
    listed = credentials.without_credentials({"squall.cli.overrides": [
        "squall.auth.token=x", "topology.debug=true"]})
    assert listed["squall.cli.overrides"] == ["topology.debug=true"]


def test_for_runtime_gives_back_what_the_worker_kept() -> None:
    credentials.keep({**CREDENTIALS, **KEPT})
    try:
        again = credentials.for_runtime({"topology.workers": 3})
        assert again["squall.auth.token"] == "tok-admin-SECRET"
        assert again["storm.zookeeper.auth.payload"] == "squall:zk-PASSWORD"
        assert again["topology.workers"] == 3 and "nimbus.admins" not in again
        # a conf with its own credential keeps it
        assert credentials.for_runtime({"squall.auth.token": "mine"})["squall.auth.token"] \
            == "mine"
    finally:
        credentials.keep({})
    assert credentials.for_runtime({"a": 1}) == {"a": 1}


SEEN: dict[str, dict[str, Any]] = {}


class Recorder(Spout):
    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        SEEN["spout"] = dict(conf)
        SEEN["runtime"] = credentials.for_runtime(conf)
        self.sent = False

    def next_tuple(self) -> None:
        if not self.sent:
            self.sent = True
            self.emit([1])


class Sink(Bolt):
    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        SEEN["bolt"] = dict(conf)

    def process(self, tup: Any) -> None:
        pass


def test_components_do_not_see_the_credentials_of_their_workers_conf() -> None:
    SEEN.clear()
    b = TopologyBuilder()
    b.set_spout("rec", Recorder, 1)
    b.set_bolt("sink", Sink, 1, config={"squall.auth.token": "in-component-config"}) \
        .shuffle_grouping("rec")
    conf = {k: v for k, v in CREDENTIALS.items()
            if not k.startswith(("squall.transport.", "squall.tls."))}
    with LocalCluster(conf) as cluster:
        cluster.submit_topology("rec", {"topology.workers": 1}, b.create_topology())
        wait_until(lambda: {"spout", "bolt"} <= set(SEEN), 30, message="components not initialized")
    try:
        for who in ("spout", "bolt"):
            leaked = sorted(k for k in SEEN[who] if credentials.is_credential(k))
            assert leaked == [], who
            assert not any("SECRET" in repr(v) or "PASSWORD" in repr(v)
                           for v in SEEN[who].values()), who
        # squall's own parts a component opens still reach the cluster as the worker
        assert SEEN["runtime"]["squall.auth.token"] == "tok-admin-SECRET"
    finally:
        credentials.keep({})
