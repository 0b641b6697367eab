"""Who is calling, and what must never be shown (API.md §14).

- :func:`user_for_token` maps a bearer token to its user through ``nimbus.auth.tokens``
  (``{token: user}``); nimbus, DRPC and the UI authenticate ``token`` clients with it.
- :func:`redact` returns a copy of a configuration with secret values replaced, for
  ``squall config``, the UI's configuration view and log lines. A key is secret when its last
  dotted part is ``password`` or ``payload``, or any part starts with ``token`` or ``key``
  (``*.password``, ``*.payload``, ``*.token*``, ``*.key*``).
"""
from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Any

REDACTED = "******"

__all__ = ["REDACTED", "is_secret_key", "redact", "user_for_token"]


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
