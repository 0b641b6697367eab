"""The nng transport's hooks (entry point ``transport_nng`` in ``squall.plugins``): its config
keys, ``squall.transport.nng.*``, with their defaults and types.

Importing this module does not import pynng (every process loads it to read its
configuration); the transport itself loads through ``squall.transports`` when it is chosen.
"""
from __future__ import annotations

from typing import Any

from squall.hookspecs import hookimpl

__all__ = ["squall_add_config_types", "squall_add_defaults"]

PREFIX = "squall.transport.nng."
#: the keys this plugin owns (see :mod:`squall.plugins.transport_nng.transport` for meanings)
DEFAULTS: dict[str, Any] = {
    PREFIX + "bind.host": "127.0.0.1",       # 0.0.0.0 to accept tuples from other machines
    PREFIX + "linger.ms": 1000,
    # null: squall.transport.send.buffer.messages when that is set, else 1024
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
def squall_add_config_types() -> dict[str, type]:
    return {PREFIX + "send.buffer": int,
            **{PREFIX + f"tls.{name}.file": str for name in ("cert", "key", "ca")}}
