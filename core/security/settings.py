"""The security keys of a conf, read and checked in one place (API.md section 14).

:func:`check` runs inside :func:`squall.config.validate` for every process; the readers below
are what nimbus, its clients and the transports ask. Nothing here imports grpc.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from squall.errors import ConfigError

#: values of ``nimbus.authentication``
MODES = ("none", "token", "mtls")
TLS_KEYS = ("squall.tls.ca", "squall.tls.cert", "squall.tls.key")

__all__ = ["MODES", "TLS_KEYS", "admins", "authentication_mode", "check", "tls_files"]


def authentication_mode(conf: Mapping[str, Any]) -> str:
    """``nimbus.authentication``: ``none``, ``token`` or ``mtls``; ConfigError otherwise."""
    mode = conf.get("nimbus.authentication") or "none"
    if mode not in MODES:
        raise ConfigError(f"nimbus.authentication must be one of {', '.join(MODES)}, "
                          f"got {mode!r}")
    return str(mode)


def admins(conf: Mapping[str, Any]) -> frozenset[str]:
    """The users of ``nimbus.admins``."""
    return frozenset(str(u) for u in conf.get("nimbus.admins") or ())


def tls_files(conf: Mapping[str, Any], *, required: tuple[str, ...] = TLS_KEYS,
              why: str = "") -> dict[str, str]:
    """``{"ca": path, "cert": path, "key": path}`` for the ``squall.tls.*`` keys that are set;
    ConfigError naming every key of ``required`` that is missing (``why`` says who needs it)."""
    missing = [k for k in required if not conf.get(k)]
    if missing:
        raise ConfigError(f"{why or 'TLS'} needs {', '.join(missing)} (PEM files)")
    return {k.rsplit(".", 1)[1]: str(conf[k]) for k in TLS_KEYS if conf.get(k)}


def check(conf: Mapping[str, Any]) -> None:
    """ConfigError for a security key whose value cannot work: an unknown authentication
    mode, tokens that are not a ``{token: user}`` mapping of strings, admins that are not
    names."""
    mode = authentication_mode(conf)
    tokens = conf.get("nimbus.auth.tokens") or {}
    if not isinstance(tokens, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) and k and v for k, v in tokens.items()):
        raise ConfigError("nimbus.auth.tokens must map each token (a string) to its user")
    users = conf.get("nimbus.admins") or []
    if not isinstance(users, list) or not all(isinstance(u, str) and u for u in users):
        raise ConfigError("nimbus.admins must be a list of user names")
    if mode == "mtls":
        tls_files(conf, why="nimbus.authentication: mtls")
