"""The README's secure cluster, for real: its YAML (ZooKeeper digest ACLs, token
authentication, TLS between workers) runs the word count exactly, as a non-admin user, and a
worker refuses (and logs) a peer without the cluster's credentials on every transport; a
user's Trident topology answers DRPC there, and its code sees none of the cluster's
credentials."""
from __future__ import annotations

import json
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from squall import config

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

README = Path(__file__).resolve().parents[3] / "README.md"
SECURE_DRPC = Path(__file__).resolve().parents[1] / "topologies" / "secure_drpc.py"
TOTAL = 300


def readme_secure_conf() -> dict[str, Any]:
    """The YAML block of the README's "Running a secure cluster" section."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Running a secure cluster", 1)[1]
    found = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert found, "the README's secure cluster section has no yaml block"
    conf = yaml.safe_load(found.group(1))
    assert isinstance(conf, dict)
    return conf


def test_the_readme_yaml_is_a_valid_secure_configuration() -> None:
    conf = readme_secure_conf()
    config.validate({**config.defaults(), **conf}, warn=False)
    assert conf["nimbus.authentication"] == "token" and conf["squall.transport.tls"] is True
    assert conf["storm.zookeeper.auth.scheme"] == "digest"
    assert conf["nimbus.auth.tokens"][conf["squall.auth.token"]] in conf["nimbus.admins"]


@pytest.fixture
def secure_cluster(squall_cluster: Any, zookeeper: Any) -> Iterator[Any]:
    c = squall_cluster
    readme = readme_secure_conf()
    for key in ("storm.zookeeper.servers", "nimbus.seeds", "storm.local.dir"):
        readme.pop(key)          # this test's ZooKeeper, nimbus port and directories
    c.conf.update(readme)
    c.config_file.write_text(yaml.safe_dump(c.conf))
    yield c
    # the tree only this digest may delete
    c.close_and_delete_root(zookeeper.hosts, readme["storm.zookeeper.auth.payload"])


@pytest.mark.parametrize("transport", ["zmq", "grpc", "nng"])
def test_secure_wordcount_counts_exactly(secure_cluster: Any, wordcount: Any, zookeeper: Any,
                                         transport: str, tmp_path: Path) -> None:
    c = secure_cluster
    c.conf["squall.transport"] = transport
    c.config_file.write_text(yaml.safe_dump(c.conf))
    alice = next(t for t, u in c.conf["nimbus.auth.tokens"].items() if u == "alice")
    c.start_nimbus()
    sup = c.start_supervisor("sup1", slots=2)
    c.wait_ready(supervisors=1, timeout=60)
    c.squall("submit", c.wordcount_target, "--name", "wc", "-c", f"squall.auth.token={alice}",
             "-c", "topology.workers=2", "-c", f"test.sentences={TOTAL}",
             "-c", "topology.message.timeout.secs=60")
    c.wait(lambda: len(c.worker_slots("wc")) == 2, 60, "no assignment on 2 workers")
    expected = wordcount.expected_counts(TOTAL)
    c.wait(lambda: sorted(wordcount.read_acks(c.out_dir)) == list(range(TOTAL)), 90,
           "not every sentence was acked")
    c.wait(lambda: wordcount.read_counts(c.out_dir) == expected, 30, "counts differ")
    assert sorted(wordcount.read_acks(c.out_dir)) == list(range(TOTAL))   # exactly once

    assert c.state.get_storm(c.state.find_topology_id("wc"))["owner"] == "alice"
    # each worker got the cluster's transport credentials, readable by its user only
    keys = list(sup.local_dir.glob("workers/*/tls/worker.key"))
    assert len(keys) == 2
    for key in keys:
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
        assert stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    _outsider_is_refused(c, sup, keys[0], wordcount, expected, transport, tmp_path)
    _zookeeper_is_closed(c, zookeeper)


def test_drpc_answers_and_code_sees_no_credential(secure_cluster: Any) -> None:
    """A user's DRPC topology on the README's cluster (generated transport credentials): the
    workers fetch requests and return results (the transport's credentials do not turn their
    DRPC calls into TLS), and the conf the topology's code gets holds no credential."""
    from squall import DRPCClient
    from squall.errors import DRPCError
    from squall.testing import wait_until
    c = secure_cluster
    alice = next(t for t, u in c.conf["nimbus.auth.tokens"].items() if u == "alice")
    c.start_nimbus()
    c.start_supervisor("sup1", slots=1)
    drpc = c.start_drpc({"drpc.request.timeout.secs": 10})
    c.wait_ready(supervisors=1, timeout=60)
    c.squall("submit", f"{SECURE_DRPC}:topology", "--name", "words",
             "-c", f"squall.auth.token={alice}", "-c", "topology.workers=1",
             "-c", f'drpc.servers=["127.0.0.1:{drpc.port}"]')
    client = DRPCClient({"drpc.servers": [f"127.0.0.1:{drpc.port}"],
                         "drpc.request.timeout.secs": 10, "squall.auth.token": alice})

    def answer() -> str | None:
        try:
            return client.execute("words", "the cow jumped")
        except DRPCError:
            return None
    assert wait_until(answer, 120, message=lambda: "no DRPC answer:\n" + c.logs_tail()) \
        == "[[3]]"
    seen = [json.loads(p.read_text()) for p in c.out_dir.glob("conf-*.json")]
    assert seen
    secrets = [c.conf["squall.auth.token"], c.conf["storm.zookeeper.auth.payload"],
               *c.conf["nimbus.auth.tokens"]]
    for conf in seen:
        assert not [k for k in conf if k.startswith((
            "squall.auth.", "nimbus.auth.", "storm.zookeeper.auth.", "squall.tls.",
            "squall.transport.tls."))]
        shown = json.dumps(conf)
        assert not [s for s in secrets if s in shown]
        assert "tls/worker.key" not in shown


def _outsider(key: Path, transport: str, work: Path) -> Any:
    """zmq: a peer that knows a worker's public key but holds no cluster key; grpc and nng: a
    peer that trusts the cluster's CA but holds a certificate of another CA."""
    from squall.plugins.transport_grpc import GrpcTransport
    from squall.plugins.transport_nng import NngTransport
    from squall.plugins.transport_zmq import ZmqTransport
    if transport == "zmq":
        import zmq
        from zmq.utils import z85

        from squall.security.transport_creds import curve_seed
        public = zmq.curve_public(z85.encode(curve_seed({"squall.tls.key": str(key)})))
        return ZmqTransport({"squall.transport.zmq.curve.enabled": True,
                             "squall.transport.zmq.curve.server.public.key": public.decode(),
                             "squall.transport.zmq.linger.ms": 0})
    from squall.security import certs
    stranger = certs.issue(certs.make_ca("elsewhere"), "squall-worker")
    cls = GrpcTransport if transport == "grpc" else NngTransport
    return cls({
        "squall.transport.tls": True, "squall.tls.ca": str(key.parent / "ca.crt"),
        "squall.tls.cert": str(certs.write_private(work / "stranger.crt", stranger.cert)),
        "squall.tls.key": str(certs.write_private(work / "stranger.key", stranger.key))})


def _outsider_is_refused(c: Any, sup: Any, key: Path, wordcount: Any,
                         expected: dict[str, int], transport: str, work: Path) -> None:
    """A peer without the cluster's credentials: its tuples are dropped, and the worker logs
    it once."""
    tid = c.state.find_topology_id("wc")
    port = sorted(c.worker_slots("wc"))[0][1]
    worker_log = sup.local_dir / "logs" / f"{tid}-{port}.log"
    with _outsider(key, transport, work) as outsider:
        outsider.connect(tid, "127.0.0.1", port).send([(1, b"intruder")])
        c.wait(lambda: "refused a peer at 127.0.0.1" in worker_log.read_text(), 30,
               "the worker did not log the refused peer")
    assert worker_log.read_text().count("refused a peer") == 1
    assert wordcount.read_counts(c.out_dir) == expected


def _zookeeper_is_closed(c: Any, zookeeper: Any) -> None:
    """ZooKeeper's tree is closed to anyone without the identity."""
    from kazoo.client import KazooClient
    from kazoo.exceptions import NoAuthError
    stranger = KazooClient(hosts=zookeeper.hosts)
    stranger.start(timeout=10)
    try:
        for path in ("", "/storms", "/credentials/transport", "/assignments"):
            with pytest.raises(NoAuthError):
                stranger.get(c.conf["storm.zookeeper.root"] + path)
    finally:
        stranger.stop()
        stranger.close()
