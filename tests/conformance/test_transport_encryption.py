"""Encrypted links: CurveZMQ for zmq, TLS for grpc and nng; peers without the keys get nothing."""
from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from squall import ConfigError, Transport
from squall.plugins.transport_grpc import GrpcTransport
from squall.plugins.transport_nng import NngTransport
from squall.plugins.transport_zmq import ZmqTransport, generate_keys
from squall.testing.contracts.transport import collect

TOPO = "enc-topo-1"


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A self-signed certificate for localhost and 127.0.0.1 (openssl CLI)."""
    work = tmp_path_factory.mktemp("tls")
    cert, key = work / "cert.pem", work / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    return {"cert": str(cert), "key": str(key)}


def _tls_conf(name: str, files: dict[str, str], **extra: Any) -> dict[str, Any]:
    prefix = f"squall.transport.{name}.tls"
    conf = {f"{prefix}.enabled": True, f"{prefix}.cert.file": files["cert"],
            f"{prefix}.key.file": files["key"], f"{prefix}.ca.file": files["cert"]}
    conf.update(extra)
    return conf


def _nothing_arrives(receiver: Any, window: float = 0.7) -> bool:
    deadline = time.monotonic() + window
    while time.monotonic() < deadline:
        if receiver.recv(0.1):
            return False
    return True


def _roundtrip(server: Transport, client: Transport) -> None:
    with server, client:
        receiver = server.bind(TOPO, 0)
        client.connect(TOPO, "127.0.0.1", receiver.port).send([(3, b"secret"), (4, b"")])
        assert collect(receiver, 2) == [(3, b"secret"), (4, b"")]


def test_zmq_curve_roundtrip_and_strangers_get_nothing() -> None:
    public, secret = generate_keys()
    server_conf = {"squall.transport.zmq.curve.enabled": True,
                   "squall.transport.zmq.curve.server.secret.key": secret,
                   "squall.transport.zmq.curve.server.public.key": public}
    client_conf = {"squall.transport.zmq.curve.enabled": True,
                   "squall.transport.zmq.curve.server.public.key": public}
    _roundtrip(ZmqTransport(server_conf), ZmqTransport(client_conf))
    wrong = {**client_conf, "squall.transport.zmq.linger.ms": 0,
             "squall.transport.zmq.curve.server.public.key": generate_keys()[0]}
    quiet = {"squall.transport.zmq.linger.ms": 0}
    with ZmqTransport(server_conf) as server, ZmqTransport(quiet) as plain, \
            ZmqTransport(wrong) as impostor:
        receiver = server.bind(TOPO, 0)
        plain.connect(TOPO, "127.0.0.1", receiver.port).send([(1, b"plain text")])
        impostor.connect(TOPO, "127.0.0.1", receiver.port).send([(1, b"wrong key")])
        assert _nothing_arrives(receiver)


def test_zmq_curve_generates_keys_when_none_configured() -> None:
    conf = {"squall.transport.zmq.curve.enabled": True}
    transport = ZmqTransport(conf)
    _roundtrip(transport, transport)        # same object: same generated server keys


def test_zmq_curve_bad_key_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        ZmqTransport({"squall.transport.zmq.curve.enabled": True,
                      "squall.transport.zmq.curve.server.secret.key": "not-a-z85-key"})


@pytest.mark.parametrize("cls", [GrpcTransport, NngTransport])
def test_tls_roundtrip_and_plain_peer_gets_nothing(cls: type[Transport],
                                                   tls_files: dict[str, str]) -> None:
    conf = _tls_conf(cls.name, tls_files)
    _roundtrip(cls(conf), cls(conf))
    with cls(conf) as server, cls({}) as plain:
        receiver = server.bind(TOPO, 0)
        plain.connect(TOPO, "127.0.0.1", receiver.port).send([(1, b"plain text")])
        assert _nothing_arrives(receiver)


@pytest.mark.parametrize("cls", [GrpcTransport, NngTransport])
def test_tls_without_files_is_a_config_error(cls: type[Transport],
                                             tls_files: dict[str, str]) -> None:
    with cls({f"squall.transport.{cls.name}.tls.enabled": True}) as transport:
        with pytest.raises(ConfigError, match="cert.file|key.file"):
            transport.bind(TOPO, 0)
        with pytest.raises(ConfigError, match="ca.file"):
            transport.connect(TOPO, "127.0.0.1", 1)
    missing = _tls_conf(cls.name, tls_files)
    missing[f"squall.transport.{cls.name}.tls.cert.file"] = str(Path(tls_files["cert"]) / "nope")
    with cls(missing) as transport, pytest.raises(ConfigError, match="cannot read"):
        transport.bind(TOPO, 0)
