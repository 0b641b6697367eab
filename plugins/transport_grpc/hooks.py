"""The gRPC transport's hooks (entry point ``transport_grpc`` in ``squall.plugins``): its
config keys, ``squall.transport.grpc.*``, with their defaults and types.

Importing this module does not import grpc (every process loads it to read its
configuration); the transport itself loads through ``squall.transports`` when it is chosen.
"""
from __future__ import annotations

from typing import Any

from squall.hookspecs import hookimpl

__all__ = ["squall_add_config_types", "squall_add_defaults"]

PREFIX = "squall.transport.grpc."
#: the keys this plugin owns (see :mod:`squall.plugins.transport_grpc.transport` for meanings)
DEFAULTS: dict[str, Any] = {
    PREFIX + "max.message.mb": 256,
    PREFIX + "linger.ms": 1000,
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
    return {PREFIX + f"tls.{name}.file": str for name in ("cert", "key", "ca")}
