"""Encrypted links: CurveZMQ for zmq, TLS for grpc and nng; peers without the keys get nothing."""
from __future__ import annotations

import contextlib
import logging
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from squall import ConfigError, Transport, TransportError
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


# -- squall.transport.tls: the cluster's mutual authentication (API.md section 14) -------------

@pytest.fixture(scope="module")
def cluster_tls(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Confs of a cluster's worker and of strangers: one with another CA's certificate, one
    trusting the cluster's CA without a certificate of its own."""
    from squall.security import certs
    work = tmp_path_factory.mktemp("cluster-tls")

    def files(name: str, ca: certs.Issued, trusted: certs.Issued) -> dict[str, Any]:
        worker = certs.issue(ca, "squall-worker")
        return {"squall.transport.tls": True,
                "squall.tls.ca": str(certs.write_private(work / f"{name}-ca.crt", trusted.cert)),
                "squall.tls.cert": str(certs.write_private(work / f"{name}.crt", worker.cert)),
                "squall.tls.key": str(certs.write_private(work / f"{name}.key", worker.key))}

    ca, other = certs.make_ca("cluster"), certs.make_ca("elsewhere")
    return {"member": files("member", ca, ca), "stranger": files("stranger", other, ca)}


def _refusals(caplog: pytest.LogCaptureFixture, port: int) -> list[str]:
    """The WARNING lines of the receiver on ``port`` refusing a peer at 127.0.0.1."""
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and f"on port {port} refused a peer at 127.0.0.1: "
            in r.getMessage()]


@pytest.mark.parametrize("cls", [ZmqTransport, GrpcTransport, NngTransport])
def test_cluster_tls_admits_members_only(cls: type[Transport],
                                         cluster_tls: dict[str, dict[str, Any]],
                                         tls_files: dict[str, str],
                                         caplog: pytest.LogCaptureFixture) -> None:
    """Each kind of stranger: nothing it sends arrives, the receiver logs it once (however
    often it redials and sends), and the cluster's own still get through."""
    member = {**cluster_tls["member"], "squall.transport.zmq.linger.ms": 0}
    _roundtrip(cls(member), cls(member))
    stranger = {**cluster_tls["stranger"], "squall.transport.zmq.linger.ms": 0}
    if cls is ZmqTransport:
        # knowing the server's public key is not enough: the client key must be the cluster's
        from zmq.utils import z85

        import zmq
        from squall.security.transport_creds import curve_seed
        server_public = zmq.curve_public(z85.encode(curve_seed(member))).decode()
        outsiders = [({"squall.transport.zmq.curve.enabled": True,
                       "squall.transport.zmq.curve.server.public.key": server_public,
                       "squall.transport.zmq.linger.ms": 0},
                      "its CURVE key is not one of this cluster's workers")]
    else:   # a certificate from another CA; the cluster's CA without a certificate
        outsiders = [(stranger, "its certificate (CN=squall-worker) is not signed by this "
                                "cluster's CA"),
                     ({**_tls_conf(cls.name, tls_files),
                       f"squall.transport.{cls.name}.tls.ca.file": member["squall.tls.ca"]},
                      "it presented no certificate")]
    for conf, reason in outsiders:
        caplog.clear()
        with cls(member) as server:
            receiver = server.bind(TOPO, 0)
            with cls(conf) as outsider:
                link = outsider.connect(TOPO, "127.0.0.1", receiver.port)
                for n in range(3):      # (zmq: its buffer fills up; nothing left it)
                    with contextlib.suppress(TransportError):
                        link.send([(1, b"intruder %d" % n)])
                    assert _nothing_arrives(receiver, 0.4)
            refusals = _refusals(caplog, receiver.port)
            assert len(refusals) == 1, refusals       # once per peer address
            assert reason in refusals[0], refusals[0]
            with cls(member) as peer:     # the cluster's own still get through
                peer.connect(TOPO, "127.0.0.1", receiver.port).send([(2, b"member")])
                assert collect(receiver, 1) == [(2, b"member")]
            assert len(_refusals(caplog, receiver.port)) == 1
