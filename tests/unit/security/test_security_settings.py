"""Security settings: validation, what ``squall config`` and errors show, what a topology may
carry, and the transport credentials a supervisor hands its workers."""
from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from squall import config
from squall.cli.main import main
from squall.daemon.nimbus_topologies import topology_conf
from squall.daemon.packaging import write_json
from squall.errors import ConfigError, StateError
from squall.security import REDACTED, transport_creds
from squall.state.memory import MemoryStateStore

SECRETS = {"squall.auth.token": "tok-s3cret", "storm.zookeeper.auth.payload": "u:zk-s3cret",
           "nimbus.auth.tokens": {"tok-s3cret": "alice"}}


def test_squall_config_shows_no_secret(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["config"]
    for key, value in SECRETS.items():
        args += ["-c", f"{key}={json.dumps(value)}"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "s3cret" not in out
    assert f"squall.auth.token: '{REDACTED}'" in out
    assert "nimbus.authentication: none" in out      # the rest is shown as it is


def test_a_badly_typed_secret_is_not_echoed_in_the_error() -> None:
    with pytest.raises(ConfigError, match="squall.auth.token") as err:
        config.validate({**config.defaults(), "squall.auth.token": 123456789}, warn=False)
    assert "123456789" not in str(err.value)


@pytest.mark.parametrize("conf, message", [
    ({"nimbus.authentication": "kerberos"}, "must be one of none, token, mtls"),
    ({"nimbus.auth.tokens": {"t": 3}}, "map each token"),
    ({"nimbus.admins": ["root", 7]}, "list of user names"),
    ({"nimbus.authentication": "mtls", "squall.tls.ca": "ca.pem"},
     "squall.tls.cert, squall.tls.key"),
])
def test_unusable_security_settings_are_refused(conf: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config.validate({**config.defaults(), **conf}, warn=False)


def test_a_submitted_topology_cannot_carry_or_change_security_keys() -> None:
    submitted = {**SECRETS, "squall.tls.key": "/k", "squall.transport.tls": False,
                 "topology.workers": 2, "my.redis.password": "kept: the topology's own",
                 config.OVERRIDES_KEY: {"squall.auth.token": "tok-s3cret",
                                        "topology.debug": True}}
    assert topology_conf(submitted) == {"topology.workers": 2,
                                        "my.redis.password": "kept: the topology's own",
                                        config.OVERRIDES_KEY: {"topology.debug": True}}


def test_a_conf_with_secrets_is_written_for_its_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "supervisor-conf.json"
    write_json(path, SECRETS, private=True)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == SECRETS


def _store() -> MemoryStateStore:
    store = MemoryStateStore({})
    store.start()
    return store


def test_generated_transport_credentials_reach_a_worker_dir_privately(tmp_path: Path) -> None:
    conf = {"squall.transport.tls": True, "storm.zookeeper.auth.scheme": "digest"}
    store = _store()
    worker = tmp_path / "workers" / "w1"
    with pytest.raises(StateError, match="no transport credentials"):
        transport_creds.install_for_worker(conf, store, worker)
    with pytest.raises(ConfigError, match="this worker has no credentials"):
        transport_creds.worker_conf(conf, worker)
    transport_creds.ensure_cluster_credentials(conf, store)
    first = store.get(transport_creds.CREDENTIALS_PATH)
    transport_creds.ensure_cluster_credentials(conf, store)    # once per cluster
    assert store.get(transport_creds.CREDENTIALS_PATH) == first
    transport_creds.install_for_worker(conf, store, worker)
    paths = transport_creds.worker_conf(conf, worker)
    assert set(paths) == set(transport_creds.GENERATED_KEYS)
    for path in map(Path, paths.values()):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert path.read_text().startswith("-----BEGIN")
    assert stat.S_IMODE((worker / "tls").stat().st_mode) == 0o700
    seed = transport_creds.curve_seed(paths)
    assert len(seed) == 32 and seed == transport_creds.curve_seed(paths)


def test_generated_credentials_are_the_transports_only(tmp_path: Path) -> None:
    """A worker's generated credentials do not make it a TLS client of nimbus or DRPC (which
    serve plaintext unless squall.tls.cert/.key are set on them); the operator's squall.tls.*
    keep doing both."""
    from squall.security.grpc_auth import channel_credentials
    conf = {"squall.transport.tls": True, "storm.zookeeper.auth.scheme": "digest",
            "nimbus.authentication": "token", "squall.auth.token": "t"}
    store = _store()
    transport_creds.ensure_cluster_credentials(conf, store)
    worker = tmp_path / "w1"
    transport_creds.install_for_worker(conf, store, worker)
    worker_conf = {**conf, **transport_creds.worker_conf(conf, worker)}
    assert channel_credentials(worker_conf) is None
    for part in ("ca", "cert", "key"):
        assert transport_creds.transport_file(worker_conf, part) == \
            str(worker / "tls" / Path(worker_conf[f"squall.transport.tls.{part}"]).name)
    given = {"squall.tls.ca": str(worker / "tls" / "ca.crt")}
    assert transport_creds.transport_file(given, "ca") == given["squall.tls.ca"]
    assert transport_creds.transport_file({}, "ca") is None
    assert channel_credentials(given) is not None


def test_credentials_are_generated_only_where_zookeeper_protects_them(tmp_path: Path) -> None:
    store = _store()
    with pytest.raises(ConfigError, match="storm.zookeeper.auth"):
        transport_creds.ensure_cluster_credentials({"squall.transport.tls": True}, store)
    given = {"squall.transport.tls": True, "squall.tls.ca": "a", "squall.tls.cert": "b",
             "squall.tls.key": "c"}
    transport_creds.ensure_cluster_credentials(given, store)    # the operator's files: nothing
    transport_creds.install_for_worker(given, store, tmp_path)
    assert store.get(transport_creds.CREDENTIALS_PATH) is None
    assert transport_creds.worker_conf(given, tmp_path) == {}
