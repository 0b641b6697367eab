"""The transport's proof of membership: who it admits, and why it refuses everyone else."""
from __future__ import annotations

import datetime
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from squall.errors import ConfigError
from squall.security import certs
from squall.security.peer_proof import Prover, Verifier, new_challenge


@pytest.fixture(scope="module")
def cluster() -> certs.Issued:
    return certs.make_ca("cluster")


def _proof(issued: certs.Issued, challenge: bytes) -> tuple[bytes, bytes]:
    return issued.cert, Prover(issued.cert, issued.key).answer(challenge)


def _pem(cert: Any) -> bytes:
    return bytes(cert.public_bytes(serialization.Encoding.PEM))


def _pem_key(key: Any) -> bytes:
    return bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                   serialization.NoEncryption()))


def _cert(cn: str, issuer: tuple[Any, Any] | None, key: Any, *, ca: bool = False,
          days: int = 1, usages: list[Any] | None = None) -> Any:
    """A certificate for ``key`` signed by ``issuer`` (its cert and key; None: self-signed)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    builder = (x509.CertificateBuilder().subject_name(name)
               .issuer_name(issuer[0].subject if issuer else name)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(days=2))
               .not_valid_after(now + datetime.timedelta(days=days))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if usages:
        builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    return builder.sign(issuer[1] if issuer else key, hashes.SHA256())


def test_a_member_is_admitted_and_every_challenge_needs_its_own_answer(
        cluster: certs.Issued) -> None:
    verifier = Verifier(cluster.cert)
    member = certs.issue(cluster, "squall-worker")
    challenge = new_challenge()
    chain, answer = _proof(member, challenge)
    assert verifier.check(chain, answer, challenge) is None
    assert "proof does not match" in str(verifier.check(chain, answer, new_challenge()))
    assert "proof does not match" in str(verifier.check(chain, b"", challenge))


def test_strangers_are_refused_with_a_reason(cluster: certs.Issued) -> None:
    verifier, challenge = Verifier(cluster.cert), new_challenge()
    elsewhere = certs.issue(certs.make_ca("elsewhere"), "intruder")
    assert verifier.check(*_proof(elsewhere, challenge), challenge) == (
        "its certificate (CN=intruder) is not signed by this cluster's CA")
    assert verifier.check(b"", b"", challenge) == "it presented no certificate"
    assert verifier.check(b"garbage", b"", challenge) == "its certificate could not be read"
    # a member's certificate is public: presenting it without its key proves nothing
    member = certs.issue(cluster, "squall-worker")
    forged = Prover(elsewhere.cert, elsewhere.key).answer(challenge)
    assert verifier.check(member.cert, forged, challenge) == (
        "its proof does not match its certificate (CN=squall-worker)")


def test_expired_and_server_only_certificates_are_refused(cluster: certs.Issued) -> None:
    ca_cert = x509.load_pem_x509_certificate(cluster.cert)
    ca_key = serialization.load_pem_private_key(cluster.key, password=None)
    verifier, challenge = Verifier(cluster.cert), new_challenge()
    for cert_args, reason in (({"days": -1}, "is expired or not yet valid"),
                              ({"usages": [ExtendedKeyUsageOID.SERVER_AUTH]},
                               "is not for client authentication")):
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _pem(_cert("old", (ca_cert, ca_key), key, **cert_args))
        answer = Prover(cert, _pem_key(key)).answer(challenge)
        assert reason in str(verifier.check(cert, answer, challenge))


def test_chains_through_intermediates_and_other_key_types() -> None:
    root_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    root = _cert("root", None, root_key, ca=True, days=30)
    mid_key = ec.generate_private_key(ec.SECP256R1())
    mid = _cert("intermediate", (root, root_key), mid_key, ca=True, days=30)
    not_ca_key = ec.generate_private_key(ec.SECP256R1())
    not_ca = _cert("not a CA", (root, root_key), not_ca_key)
    verifier, challenge = Verifier(_pem(root)), new_challenge()
    for key in (ed25519.Ed25519PrivateKey.generate(),
                rsa.generate_private_key(public_exponent=65537, key_size=2048)):
        leaf = _cert("worker", (mid, mid_key), key, usages=[ExtendedKeyUsageOID.CLIENT_AUTH])
        pem_key = _pem_key(key)
        chain = _pem(leaf) + _pem(mid)
        assert verifier.check(chain, Prover(chain, pem_key).answer(challenge), challenge) is None
        alone = _pem(leaf)           # without its intermediate it leads nowhere
        assert "not signed" in str(verifier.check(alone, Prover(alone, pem_key).answer(
            challenge), challenge))
    # an intermediate must be a CA to sign certificates
    ec_key = ec.generate_private_key(ec.SECP256R1())
    chain = _pem(_cert("worker", (not_ca, not_ca_key), ec_key)) + _pem(not_ca)
    answer = Prover(chain, _pem_key(ec_key)).answer(challenge)
    assert "not signed" in str(verifier.check(chain, answer, challenge))


def test_bad_files_are_config_errors(cluster: certs.Issued) -> None:
    member, other = certs.issue(cluster, "a"), certs.issue(cluster, "b")
    with pytest.raises(ConfigError, match="not the certificate's"):
        Prover(member.cert, other.key)
    with pytest.raises(ConfigError, match="not a PEM"):
        Prover(b"nope", member.key)
    with pytest.raises(ConfigError, match="no PEM certificate"):
        Verifier(b"nope")
