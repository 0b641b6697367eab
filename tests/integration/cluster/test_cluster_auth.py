"""Nimbus authentication and authorization against real nimbus processes (API.md section 14):
ZooKeeper digest ACLs, ``token`` clients through the CLI, ``mtls`` clients with generated
certificates."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from squall import config
from squall.daemon.ports import free_port
from squall.daemon.nimbus import Nimbus
from squall.daemon.packaging import prepare_submission, zip_code_dir
from squall.daemon.nimbus_client import NimbusClient, NimbusUnavailableError
from squall.errors import AuthenticationError, AuthorizationError, NotAliveError
from squall.security import certs

WORDCOUNT_TARGET = str(Path(__file__).resolve().parent.parent / "topologies"
                       / "acked_wordcount.py") + ":topology"
pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

ZK_AUTH = {"storm.zookeeper.auth.scheme": "digest",
           "storm.zookeeper.auth.payload": "squall:zk-s3cret"}
TOKENS = {"tok-alice": "alice", "tok-bob": "bob", "tok-admin": "admin"}


def _one_line_error(proc: Any, *words: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    for word in words:
        assert word in proc.stderr, proc.stderr


@pytest.fixture
def secured_cluster(squall_cluster: Any, zookeeper: Any) -> Iterator[Any]:
    c = squall_cluster
    c.conf.update({**ZK_AUTH, "nimbus.authentication": "token", "nimbus.auth.tokens": TOKENS,
                   "nimbus.admins": ["admin"], "squall.auth.token": "tok-admin"})
    c.config_file.write_text(yaml.safe_dump(c.conf))
    yield c
    from kazoo.client import KazooClient
    client = KazooClient(hosts=zookeeper.hosts, auth_data=[
        ("digest", ZK_AUTH["storm.zookeeper.auth.payload"])])
    client.start(timeout=10)
    try:
        client.delete(c.conf["storm.zookeeper.root"], recursive=True)
    finally:
        client.stop()
        client.close()


def test_tokens_owners_and_admins(secured_cluster: Any) -> None:
    c = secured_cluster
    nimbus = c.start_nimbus()
    c.wait(lambda: c.state.nimbuses(), 60, "nimbus did not register")

    def as_user(token: str | None, *args: str) -> Any:
        value = "null" if token is None else token
        return c.squall(*args, "-c", f"squall.auth.token={value}", check=False)

    _one_line_error(as_user(None, "list"), "nimbus refused the call: no token")
    _one_line_error(as_user("tok-mallory", "list"), "unknown token")
    c.squall("submit", c.wordcount_target, "--name", "wc", "-c", "squall.auth.token=tok-alice",
             "-c", "test.sentences=10")
    tid = c.state.find_topology_id("wc")
    assert c.state.get_storm(tid)["owner"] == "alice"
    assert as_user("tok-alice", "list").stdout.splitlines()[1].split()[0] == "wc"   # after the header
    assert as_user("tok-bob", "list").stdout == ""          # bob sees none of alice's

    for args in (("kill", "wc"), ("deactivate", "wc"), ("debug", "wc", "--enable")):
        _one_line_error(as_user("tok-bob", *args), f"may not {args[0]} topology 'wc'")
    _one_line_error(as_user("tok-bob", "set-log-level", "wc", "ROOT=DEBUG"),
                    "may not set the log levels of topology 'wc'")
    assert not c.state.get_storm(tid).get("component_debug")
    # rebalance reads the topology first (to say what it would cap): refused there
    _one_line_error(as_user("tok-bob", "rebalance", "wc", "--workers", "2"),
                    "user 'bob' may not", "topology 'wc'")
    _one_line_error(as_user("tok-bob", "kill", "nope"), "running: none")
    storm = c.state.get_storm(tid)      # pending: no supervisor runs it, which is fine here
    assert storm["status"] == "pending" and storm["num_workers"] == 1
    assert "kill_time" not in storm and not storm.get("rebalance")
    bob = NimbusClient({**c.conf, "squall.auth.token": "tok-bob"}, timeout=20)
    try:
        with pytest.raises(AuthorizationError):
            bob.topology_info("wc")
        with pytest.raises(AuthorizationError):
            bob.download(tid, "stormconf.json")
    finally:
        bob.close()

    stored = nimbus.local_dir / "nimbus" / "stormdist" / tid / "stormconf.json"
    assert "tok-alice" not in stored.read_text()             # no token travels with the code
    assert "wc" in c.listed()                                # the admin (config file) sees all
    c.squall("deactivate", "wc")
    assert c.state.get_storm(tid)["status"] == "inactive"
    c.squall("kill", "wc", "--wait", "0")
    c.wait(lambda: c.state.find_topology_id("wc") is None, 30, "the admin's kill did not happen")
    log = nimbus.log_text()
    assert log.count("refused a call") == 2, log             # once per reason and peer
    assert "tok-mallory" not in log and "tok-alice" not in log


def _write(directory: Path, name: str, issued: certs.Issued) -> dict[str, str]:
    cert = certs.write_private(directory / f"{name}.crt", issued.cert)
    key = certs.write_private(directory / f"{name}.key", issued.key)
    return {"squall.tls.cert": str(cert), "squall.tls.key": str(key)}


def test_mtls_users_are_certificate_names(tmp_path: Path, zk_conf: dict[str, Any]) -> None:
    ca = certs.make_ca("squall test CA")
    ca_file = certs.write_private(tmp_path / "ca.crt", ca.cert)
    common = {**config.defaults(), **zk_conf, "nimbus.authentication": "mtls", "squall.tls.ca": str(ca_file),
              "nimbus.admins": ["admin"], "nimbus.host": "127.0.0.1",
              "nimbus.port": free_port(), "storm.local.dir": str(tmp_path / "local")}
    nimbus = Nimbus({**common, **_write(tmp_path, "nimbus", certs.issue(ca, "admin"))})
    nimbus.start()
    clients: list[NimbusClient] = []

    def client(extra: dict[str, Any]) -> NimbusClient:
        made = NimbusClient({**common, **extra, "nimbus.seeds": [nimbus.address]}, timeout=10)
        clients.append(made)
        return made

    try:
        alice = client(_write(tmp_path, "alice", certs.issue(ca, "alice")))
        bob = client(_write(tmp_path, "bob", certs.issue(ca, "bob")))
        admin = client(_write(tmp_path, "admin", certs.issue(ca, "admin")))
        sub = prepare_submission(WORDCOUNT_TARGET)
        alice.submit_topology("wc", {}, sub.topology.to_json(),
                              zip_code_dir(sub.code_dir, sub.prefix))
        assert [t.name for t in alice.cluster_info().topologies] == ["wc"]
        assert alice.topology_info("wc")["owner"] == "alice"
        assert bob.cluster_info().topologies == []
        with pytest.raises(AuthorizationError):
            bob.kill_topology("wc")
        with pytest.raises(NotAliveError, match="running: none"):
            bob.kill_topology("someone-elses")
        admin.kill_topology("wc", 0)
        stranger_ca = certs.make_ca("another CA")
        stranger = client(_write(tmp_path, "mallory", certs.issue(stranger_ca, "admin")))
        with pytest.raises(NimbusUnavailableError, match="certificate was refused"):
            stranger.cluster_info()
        plain = client({"nimbus.authentication": "none", "squall.tls.ca": None})
        with pytest.raises(NimbusUnavailableError):
            plain.cluster_info()
        no_cert = client({"nimbus.authentication": "none"})     # TLS, but no certificate
        with pytest.raises((NimbusUnavailableError, AuthenticationError)):
            no_cert.cluster_info()
    finally:
        for made in clients:
            made.close()
        nimbus.stop()
