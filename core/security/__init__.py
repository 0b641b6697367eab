"""Who is calling, and what must never be shown (API.md §14).

- :func:`user_for_token` maps a bearer token to its user through ``nimbus.auth.tokens``
  (``{token: user}``); nimbus, DRPC and the UI authenticate ``token`` clients with it.
- :func:`redact` returns a copy of a configuration with secret values replaced, for
  ``squall config``, the UI's configuration view and log lines. A key is secret when its last
  dotted part is ``password`` or ``payload``, or any part starts with ``token`` or ``key``
  (``*.password``, ``*.payload``, ``*.token*``, ``*.key*``).
- :func:`scrubber` returns a function that replaces the conf's secret values wherever they
  appear in a text (error reports of components: an exception message may quote a password).
- :class:`FirstSeen` tells whether a key (a refused peer, a reason) is new, so that a refusal
  is logged once per key however often a client retries.

The package's modules:

=================================  ==========================================================
:mod:`.settings`                   the security keys read and checked (``config.validate``)
:mod:`.grpc_auth`                  gRPC authentication: server interceptor, TLS credentials,
                                   client channels (nimbus; DRPC)
:mod:`.certs`                      a CA and the certificates it signs (``cryptography``)
:mod:`.transport_creds`            the credentials workers authenticate each other with
:mod:`.credentials`                the cluster's credentials in a worker's conf, kept out of
                                   its components' conf
:mod:`.peer_proof`                 a transport peer's proof that it holds a certificate of
                                   the cluster (grpc under ``squall.transport.tls``)
:mod:`.log_links`                  links to a topology's logs the UI signs for a user it
                                   authenticated, which the logviewer checks
:mod:`.http_access`                who is asking the UI or a logviewer over HTTP
=================================  ==========================================================

ZooKeeper ACLs live with the store: :mod:`squall.state._zk_auth`; who may do what on nimbus:
:mod:`squall.daemon.nimbus_access`; who may read which log on a logviewer:
:mod:`squall.daemon.logviewer_access`.
"""
from __future__ import annotations

import hmac
import threading
from collections.abc import Callable, Hashable, Mapping
from typing import Any

REDACTED = "******"

__all__ = ["REDACTED", "FirstSeen", "is_secret_key", "redact", "scrubber", "user_for_token"]
#: secret values shorter than this are not scrubbed from texts (they would match by chance)
MIN_SCRUBBED = 4


def is_secret_key(key: str) -> bool:
    """True for a configuration key whose value must not be shown."""
    parts = str(key).lower().split(".")
    if parts[-1] in ("password", "payload"):
        return True
    return any(p.startswith(("token", "key")) for p in parts[1:])


def redact(conf: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``conf`` with every secret value (and secrets in nested mappings) replaced."""
    out: dict[str, Any] = {}
    for key, value in conf.items():
        if is_secret_key(key) and value not in (None, "", {}, []):
            out[key] = REDACTED
        elif isinstance(value, Mapping):
            out[key] = redact(value)
        else:
            out[key] = value
    return out


def _secret_values(conf: Mapping[str, Any], inside: bool = False) -> set[str]:
    out: set[str] = set()
    for key, value in conf.items():
        secret = inside or is_secret_key(key)
        if isinstance(value, Mapping):
            if secret:   # e.g. nimbus.auth.tokens: the tokens are the keys
                out.update(str(k) for k in value)
            out |= _secret_values(value, secret)
        elif isinstance(value, (list, tuple)) and secret:
            out.update(str(v) for v in value if isinstance(v, (str, bytes)))
        elif secret and isinstance(value, str):
            out.add(value)
    return out


def scrubber(conf: Mapping[str, Any]) -> Callable[[str], str]:
    """A function replacing every secret value of ``conf`` (see :func:`is_secret_key`; at
    least :data:`MIN_SCRUBBED` characters) found in a text by :data:`REDACTED`; the identity
    when the conf holds none. Build it once, call it per text."""
    values = sorted((v for v in _secret_values(conf) if len(v) >= MIN_SCRUBBED),
                    key=len, reverse=True)
    if not values:
        return _same

    def scrub(text: str) -> str:
        for value in values:
            if value in text:
                text = text.replace(value, REDACTED)
        return text
    return scrub


def _same(text: str) -> str:
    return text


def user_for_token(conf: Mapping[str, Any], token: str | None) -> str | None:
    """The user ``nimbus.auth.tokens`` gives ``token``, or ``None`` for an unknown token.

    Compares in constant time so that a caller cannot learn a token byte by byte."""
    if not token:
        return None
    tokens = conf.get("nimbus.auth.tokens") or {}
    found = None
    for known, user in tokens.items():
        if hmac.compare_digest(str(known).encode(), str(token).encode()):
            found = str(user)
    return found


class FirstSeen:
    """The keys seen so far, up to ``limit`` of them (past that it starts over, so a flood of
    new keys cannot grow it). Thread-safe."""

    def __init__(self, limit: int = 1024) -> None:
        self.limit = limit
        self._seen: set[Hashable] = set()
        self._lock = threading.Lock()

    def first(self, key: Hashable) -> bool:
        """Whether ``key`` is seen for the first time (it is remembered from now on)."""
        with self._lock:
            if key in self._seen:
                return False
            if len(self._seen) >= self.limit:
                self._seen.clear()
            self._seen.add(key)
            return True
