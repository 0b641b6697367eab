"""Proof that a transport peer holds a certificate of the cluster (``squall.transport.tls``).

For a transport whose TLS library decides client authentication out of squall's sight (grpc:
a failed handshake reaches no Python code, so a refused stranger could not be logged). There
the receiver serves TLS with its own certificate without asking for the client's, and
authenticates the client itself, before it takes any of its data:

1. the receiver sends each new stream a fresh random challenge (:func:`new_challenge`);
2. the sender, which has checked the receiver's TLS certificate against ``squall.tls.ca``,
   answers with its certificate chain and its key's signature of the challenge
   (:meth:`Prover.answer`);
3. the receiver checks that the chain leads to a certificate of ``squall.tls.ca`` and that
   the signature is the leaf certificate's (:meth:`Verifier.check`).

A stranger cannot answer without a key the CA certified, a recorded answer is useless for any
other challenge, and a member answers only a receiver that showed it a certificate of the
CA, so a stranger cannot have a member answer for it either. Chains are checked as TLS
libraries check them by default: every signature up to a trusted certificate, every
certificate within its validity period, intermediates marked as CAs, and a leaf whose
extended key usage, when it has one, allows client authentication. Keys: EC (ECDSA with
SHA-256), RSA (PSS with SHA-256), Ed25519 and Ed448.

Needs the ``cryptography`` package (the ``security`` and ``cluster`` extras). Objects are
immutable after construction and safe to share between threads.
"""
from __future__ import annotations

import datetime
import os
from collections.abc import Sequence
from typing import Any

from squall.errors import ConfigError
from squall.security.certs import x509_module

__all__ = ["CHALLENGE_BYTES", "Prover", "Verifier", "new_challenge"]

CHALLENGE_BYTES = 32
#: what is signed: this label, then the challenge (a signature made for anything else never
#: matches)
_LABEL = b"squall transport peer proof v1\0"
#: the longest chain followed from the leaf to a trusted certificate
_MAX_DEPTH = 8


def _crypto() -> Any:
    return x509_module("squall.transport.tls with this transport")


def new_challenge() -> bytes:
    """A fresh random challenge for one stream."""
    return os.urandom(CHALLENGE_BYTES)


def _sign(key: Any, data: bytes) -> bytes:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, padding, rsa
    if isinstance(key, ec.EllipticCurvePrivateKey):
        return bytes(key.sign(data, ec.ECDSA(hashes.SHA256())))
    if isinstance(key, rsa.RSAPrivateKey):
        return bytes(key.sign(data, padding.PSS(mgf=padding.MGF1(hashes.SHA256()),
                                                salt_length=padding.PSS.DIGEST_LENGTH),
                              hashes.SHA256()))
    if isinstance(key, (ed25519.Ed25519PrivateKey, ed448.Ed448PrivateKey)):
        return bytes(key.sign(data))
    raise ConfigError(f"squall.tls.key: a {type(key).__name__} cannot sign a transport "
                      "proof (use an EC, RSA, Ed25519 or Ed448 key)")


def _signed_by(public: Any, signature: bytes, data: bytes) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, padding, rsa
    try:
        if isinstance(public, ec.EllipticCurvePublicKey):
            public.verify(signature, data, ec.ECDSA(hashes.SHA256()))
        elif isinstance(public, rsa.RSAPublicKey):
            public.verify(signature, data, padding.PSS(mgf=padding.MGF1(hashes.SHA256()),
                                                       salt_length=padding.PSS.DIGEST_LENGTH),
                          hashes.SHA256())
        elif isinstance(public, (ed25519.Ed25519PublicKey, ed448.Ed448PublicKey)):
            public.verify(signature, data)
        else:
            return False
    except (InvalidSignature, ValueError, TypeError):
        return False
    return True


def _valid_at(cert: Any, now: datetime.datetime) -> bool:
    start = getattr(cert, "not_valid_before_utc", None)
    end = getattr(cert, "not_valid_after_utc", None)
    if start is None or end is None:        # cryptography < 42: naive UTC datetimes
        start = cert.not_valid_before.replace(tzinfo=datetime.timezone.utc)
        end = cert.not_valid_after.replace(tzinfo=datetime.timezone.utc)
    return bool(start <= now <= end)


def _is_ca(cert: Any) -> bool:
    x509 = _crypto()
    try:
        return bool(cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
    except x509.ExtensionNotFound:
        return False


def _client_use(cert: Any) -> bool:
    x509 = _crypto()
    from cryptography.x509.oid import ExtendedKeyUsageOID
    try:
        usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        return True
    return (ExtendedKeyUsageOID.CLIENT_AUTH in usages
            or ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE in usages)


def _issued_by(cert: Any, issuer: Any) -> bool:
    if cert.issuer != issuer.subject:
        return False
    try:
        cert.verify_directly_issued_by(issuer)
    except Exception:   # InvalidSignature, ValueError, TypeError: not this issuer
        return False
    return True


def _name(cert: Any) -> str:
    from cryptography.x509.oid import NameOID
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return f"CN={names[0].value}" if names else cert.subject.rfc4514_string() or "no name"


class Prover:
    """A sender's side: its certificate chain (PEM, leaf first) and private key (PEM,
    unencrypted), read from the files ``squall.tls.cert`` / ``.key`` name. ConfigError when
    they cannot be read or parsed (``what`` names the setting in the message)."""

    def __init__(self, chain_pem: bytes, key_pem: bytes,
                 what: str = "squall.tls.cert / squall.tls.key") -> None:
        x509 = _crypto()
        from cryptography.hazmat.primitives import serialization
        try:
            leaf = x509.load_pem_x509_certificates(chain_pem)[0]
            self._key = serialization.load_pem_private_key(key_pem, password=None)
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"{what}: not a PEM certificate and unencrypted key: "
                              f"{exc}") from exc
        public = serialization.PublicFormat.SubjectPublicKeyInfo
        if (leaf.public_key().public_bytes(serialization.Encoding.DER, public)
                != self._key.public_key().public_bytes(serialization.Encoding.DER, public)):
            raise ConfigError(f"{what}: the key is not the certificate's")
        self.chain = chain_pem
        _sign(self._key, _LABEL)     # a key that cannot sign fails here, not per stream

    def answer(self, challenge: bytes) -> bytes:
        """This sender's signature of ``challenge``."""
        return _sign(self._key, _LABEL + challenge)


class Verifier:
    """A receiver's side: trusts the certificates of ``ca_pem`` (the ``squall.tls.ca`` file).
    ConfigError when it holds none."""

    def __init__(self, ca_pem: bytes, what: str = "squall.tls.ca") -> None:
        x509 = _crypto()
        try:
            self._roots: Sequence[Any] = x509.load_pem_x509_certificates(ca_pem)
        except ValueError as exc:
            raise ConfigError(f"{what}: no PEM certificate in it: {exc}") from exc

    def check(self, chain_pem: bytes, signature: bytes, challenge: bytes) -> str | None:
        """None when ``chain_pem`` (leaf first) leads to a trusted certificate and
        ``signature`` is its leaf's signature of ``challenge``; otherwise why not, as a phrase
        that follows "refused a peer at <host>: " (e.g. ``"it presented no certificate"``)."""
        if not chain_pem:
            return "it presented no certificate"
        x509 = _crypto()
        try:
            chain = x509.load_pem_x509_certificates(chain_pem)
        except ValueError:
            return "its certificate could not be read"
        leaf, now = chain[0], datetime.datetime.now(datetime.timezone.utc)
        name = _name(leaf)
        if not self._leads_to_root(chain, now):
            return f"its certificate ({name}) is not signed by this cluster's CA"
        if not _valid_at(leaf, now):
            return f"its certificate ({name}) is expired or not yet valid"
        if not _client_use(leaf):
            return f"its certificate ({name}) is not for client authentication"
        if not _signed_by(leaf.public_key(), signature, _LABEL + challenge):
            return f"its proof does not match its certificate ({name})"
        return None

    def _leads_to_root(self, chain: Sequence[Any], now: datetime.datetime) -> bool:
        cert, intermediates = chain[0], chain[1:]
        for _ in range(_MAX_DEPTH):
            if any(_issued_by(cert, root) and _valid_at(root, now) for root in self._roots):
                return True
            issuer = next((i for i in intermediates if _is_ca(i) and _valid_at(i, now)
                           and _issued_by(cert, i)), None)
            if issuer is None:
                return False
            cert = issuer
        return False
