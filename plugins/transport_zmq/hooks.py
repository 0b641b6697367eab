"""The ZeroMQ transport's hooks (entry point ``transport_zmq`` in ``squall.plugins``): its
config keys, ``squall.transport.zmq.*``, with their defaults and types.

Importing this module does not import zmq (every process loads it to read its configuration);
the transport itself loads through ``squall.transports`` when it is chosen.
"""
from __future__ import annotations

from typing import Any

from squall.hookspecs import hookimpl

__all__ = ["squall_add_config_types", "squall_add_defaults"]

PREFIX = "squall.transport.zmq."
#: the keys this plugin owns (see :mod:`squall.plugins.transport_zmq.transport` for meanings)
DEFAULTS: dict[str, Any] = {
    PREFIX + "bind.host": "127.0.0.1",       # 0.0.0.0 to accept tuples from other machines
    PREFIX + "linger.ms": 1000,
    # null: squall.transport.send.buffer.messages when that is set, else 10000
    PREFIX + "hwm": None,
    PREFIX + "curve.enabled": False,
    PREFIX + "curve.server.secret.key": None,   # Z85 text
    PREFIX + "curve.server.public.key": None,
}


@hookimpl
def squall_add_defaults() -> dict[str, Any]:
    return DEFAULTS


@hookimpl
def squall_add_config_types() -> dict[str, type]:
    return {PREFIX + "hwm": int, PREFIX + "curve.server.secret.key": str,
            PREFIX + "curve.server.public.key": str}
