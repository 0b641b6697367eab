"""The nng transport's hooks (entry point ``transport_nng`` in ``squall.plugins``): its config
keys, ``squall.transport.nng.*``, with their defaults, types and ranges.

Importing this module does not import pynng (every process loads it to read its
configuration); the transport itself loads through ``squall.transports`` when it is chosen.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from squall.hookspecs import hookimpl

__all__ = ["MAX_SEND_BUFFER", "check_options", "squall_add_config_types",
           "squall_add_defaults", "squall_add_worker_shared_keys", "squall_validate_config"]

PREFIX = "squall.transport.nng."
#: the largest window of unacknowledged batches a sender keeps
MAX_SEND_BUFFER = 8192
#: the keys this plugin owns (see :mod:`squall.plugins.transport_nng.transport` for meanings)
DEFAULTS: dict[str, Any] = {
    PREFIX + "bind.host": "127.0.0.1",       # 0.0.0.0 to accept tuples from other machines
    PREFIX + "linger.ms": 1000,              # at least 0
    # batches sent and not yet acknowledged, 1 to 8192 (0 is refused: no batch could be
    # sent); null: squall.transport.send.buffer.messages when that is set (at most 8192
    # taken), else 1024
    PREFIX + "send.buffer": None,
    PREFIX + "tls.enabled": False,
    PREFIX + "tls.cert.file": None,
    PREFIX + "tls.key.file": None,
    PREFIX + "tls.ca.file": None,
    PREFIX + "tls.server.name": "localhost",
}


@hookimpl
def squall_add_defaults() -> dict[str, Any]:
    return DEFAULTS


@hookimpl
def squall_add_worker_shared_keys() -> tuple[str, ...]:
    """Workers with and without TLS cannot connect to each other."""
    return (PREFIX + "tls.enabled",)


@hookimpl
def squall_add_config_types() -> dict[str, type]:
    return {PREFIX + "send.buffer": int,
            **{PREFIX + f"tls.{name}.file": str for name in ("cert", "key", "ca")}}


def check_options(conf: Mapping[str, Any]) -> None:
    """ConfigError naming the first key of ``conf`` under ``squall.transport.nng.`` whose
    value the transport cannot use (missing keys pass: their defaults are good)."""
    from squall.config import check_host, check_range
    check_host(conf, PREFIX + "bind.host")
    check_range(conf, PREFIX + "linger.ms", 0)
    check_range(conf, PREFIX + "send.buffer", 1, MAX_SEND_BUFFER, nullable=True)


@hookimpl
def squall_validate_config(conf: Mapping[str, Any]) -> None:
    """A value the transport cannot use is refused at submit, not in every worker."""
    check_options(conf)
