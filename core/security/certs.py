"""X.509 material for squall's TLS: a certificate authority and the certificates it signs.

Nimbus uses it to make a cluster's transport credentials when ``squall.tls.*`` does not name
them; tests use it to make users' certificates. Needs the ``cryptography`` package (the
``security`` extra; also in ``cluster``); imported inside the functions. Keys are EC P-256,
certificates valid for ``days`` (default ten years: a cluster's own CA is not rotated).
"""
from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from squall.errors import PluginLoadError

__all__ = ["Issued", "issue", "make_ca", "write_private"]


@dataclass(frozen=True)
class Issued:
    """A certificate and its private key, PEM-encoded."""

    cert: bytes
    key: bytes


def x509_module(needed_for: str = "generating TLS certificates") -> Any:
    """``cryptography.x509``; PluginLoadError naming what ``needed_for`` it when the package
    is missing."""
    try:
        from cryptography import x509
    except ImportError as exc:
        raise PluginLoadError(f"{needed_for} needs the 'cryptography' package: "
                              "pip install 'squall[security]'") from exc
    return x509


def _builder(subject_cn: str, issuer: Any, public_key: Any, days: int) -> Any:
    x509 = x509_module()
    from cryptography.x509.oid import NameOID
    now = datetime.datetime.now(datetime.timezone.utc)
    return (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject_cn)]))
            .issuer_name(issuer)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=days)))


def _pem_key(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization
    return bytes(key.private_bytes(serialization.Encoding.PEM,
                                   serialization.PrivateFormat.PKCS8,
                                   serialization.NoEncryption()))


def make_ca(common_name: str, days: int = 3650) -> Issued:
    """A self-signed certificate authority."""
    x509 = x509_module()
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    key = ec.generate_private_key(ec.SECP256R1())
    from cryptography.x509.oid import NameOID
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (_builder(common_name, name, key.public_key(), days)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True,
                                         crl_sign=True, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False,
                                         decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    return Issued(cert.public_bytes(serialization.Encoding.PEM), _pem_key(key))


def issue(ca: Issued, common_name: str, hosts: Sequence[str] = ("localhost", "127.0.0.1"),
          days: int = 3650) -> Issued:
    """A certificate for ``common_name`` signed by ``ca``, usable by servers (for ``hosts``,
    names or IP addresses) and by clients (the CN is the user of ``nimbus.authentication:
    mtls``)."""
    x509 = x509_module()
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID
    ca_cert = x509.load_pem_x509_certificate(ca.cert)
    ca_key = serialization.load_pem_private_key(ca.key, password=None)
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[Any] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    builder = (_builder(common_name, ca_cert.subject, key.public_key(), days)
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                     ExtendedKeyUsageOID.CLIENT_AUTH]),
                              critical=False))
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return Issued(cert.public_bytes(serialization.Encoding.PEM), _pem_key(key))


def write_private(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` readable by its owner only (0600), atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return path
