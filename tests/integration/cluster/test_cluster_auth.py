"""Nimbus authentication and authorization against real nimbus processes (API.md section 14):
ZooKeeper digest ACLs, ``token`` clients through the CLI, ``mtls`` clients with generated
certificates, and the logs of a token-secured cluster (``squall logs``, ``squall debug --show``,
the logviewer, the UI's log links)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
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
    c.close_and_delete_root(zookeeper.hosts, ZK_AUTH["storm.zookeeper.auth.payload"])


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


# -- logs of a secured cluster ----------------------------------------------------------------
def _get(url: str, token: str | None = None) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                    timeout=20) as reply:
            return reply.status, reply.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")


def _user_config(c: Any, tmp_path: Path, token: str) -> Path:
    """A user's own config, as the README's secure section has users keep it: the cluster's
    addresses and their token, no ZooKeeper credentials, no tokens table."""
    mine = {k: v for k, v in c.conf.items()
            if k not in (*ZK_AUTH, "nimbus.auth.tokens", "nimbus.admins")}
    mine.update({"squall.auth.token": token, "storm.local.dir": str(tmp_path / token)})
    path = tmp_path / f"{token}.yaml"
    path.write_text(yaml.safe_dump(mine))
    return path


def _as_user(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "squall.cli.main", "--config", str(config),
                           *args], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def test_owners_read_their_logs_with_only_a_token_and_nobody_else_does(
        secured_cluster: Any, tmp_path: Path) -> None:
    c = secured_cluster
    c.start_nimbus()
    sup = c.start_supervisor("sup1", slots=1)
    c.wait_ready(supervisors=1, timeout=60)
    c.squall("submit", c.wordcount_target, "--name", "wc", "-c", "squall.auth.token=tok-alice",
             "-c", "test.sentences=20", "-c", "topology.debug=true")
    tid = c.state.find_topology_id("wc")
    port = sup.ports[0]
    logs = sup.local_dir / "logs"
    # the worker has written its log and events log and sent a heartbeat (nimbus lists
    # the workers that did)
    c.wait(lambda: (logs / f"{tid}-{port}.log").is_file()
           and "\tsplit\t" in _read(logs / f"{tid}-{port}.events.log")
           and c.state.worker_beats(tid), 90, "the worker did not start and sample emits")
    alice, bob = _user_config(c, tmp_path, "tok-alice"), _user_config(c, tmp_path, "tok-bob")

    # 1. squall logs / debug --show for the owner, through nimbus and the logviewer
    shown = _as_user(alice, "logs", "wc")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"==> 127.0.0.1:{port} <==\n"), shown.stdout
    first = _read(logs / f"{tid}-{port}.log").splitlines()[0]
    assert first in shown.stdout and shown.stderr == ""
    events = _as_user(alice, "debug", "wc", "--show")
    assert events.returncode == 0, events.stderr
    assert "\tsplit\t" in events.stdout and events.stderr == ""
    # another user: one line, from nimbus's ownership check
    for args in (("logs", "wc"), ("debug", "wc", "--show")):
        _one_line_error(_as_user(bob, *args), "user 'bob' may not see topology 'wc'")

    # 2. the logviewer itself: the owner's token, admins; 401 without, 403 for another user
    lv_port = c.state.get_supervisor(next(iter(c.state.supervisor_ids())))["logviewer_port"]
    base = f"http://127.0.0.1:{lv_port}"
    for file in ("log", "events"):
        url = f"{base}/log?topology={tid}&port={port}&file={file}"
        status, body = _get(url)
        assert status == 401 and "split" not in body, (status, body)
        assert _get(url, "tok-bob")[0] == 403
        assert _get(url, "tok-alice")[0] == 200
        assert _get(url, "tok-admin")[0] == 200
    daemon = f"{base}/daemonlog?name=supervisor"
    assert _get(daemon)[0] == 401
    assert _get(daemon, "tok-alice")[0] == 403
    status, body = _get(daemon, "tok-admin")
    assert status == 200 and "supervisor" in body

    # 3. the UI's log links open for the user the UI authenticated, without a header
    ui = _Ui(c)
    try:
        status, page = ui.get("/api/v1/topology/wc", "tok-alice")
        assert status == 200, page
        [worker] = page["workers"]
        link = worker["workerLogLink"]
        assert link.startswith(f"{base}/log?topology={tid}&port={port}&") and "tok-" not in link
        status, body = _get(link)
        assert status == 200 and first in body
        status, body = _get(link + "&file=events")
        assert status == 200 and "\tsplit\t" in body
        assert _get(link.replace("as=alice", "as=bob"))[0] == 401      # altered: refused
        assert ui.get("/api/v1/topology/wc", "tok-bob")[0] in (403, 404)
    finally:
        ui.stop()


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""


class _Ui:
    """``squall ui`` with the cluster's config (tokens, admins) on a free port."""

    def __init__(self, c: Any) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "squall.cli.main", "--config", str(c.config_file),
             "-c", "ui.sample.secs=1", "ui", "--port", str(self.port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            start_new_session=True)
        self.base = f"http://127.0.0.1:{self.port}"

        def up() -> bool:
            assert self.proc.poll() is None, self.proc.communicate()[1]
            try:
                return _get(f"{self.base}/")[0] == 200
            except OSError:
                return False
        c.wait(up, 60, "squall ui did not answer")

    def get(self, path: str, token: str) -> tuple[int, Mapping[str, Any]]:
        status, body = _get(self.base + path, token)
        return status, json.loads(body)

    def stop(self) -> None:
        os.killpg(self.proc.pid, signal.SIGTERM)
        _, errors = self.proc.communicate(timeout=60)
        assert "Traceback" not in errors and "tok-alice" not in errors, errors
