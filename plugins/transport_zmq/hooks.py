"""The ZeroMQ transport's hooks (entry point ``transport_zmq`` in ``squall.plugins``): its
config keys, ``squall.transport.zmq.*``, with their defaults, types and ranges.

Importing this module does not import zmq (every process loads it to read its configuration);
the transport itself loads through ``squall.transports`` when it is chosen.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from squall.hookspecs import hookimpl

__all__ = ["check_options", "squall_add_config_types", "squall_add_defaults",
           "squall_add_worker_shared_keys", "squall_validate_config"]

PREFIX = "squall.transport.zmq."
#: the keys this plugin owns (see :mod:`squall.plugins.transport_zmq.transport` for meanings)
DEFAULTS: dict[str, Any] = {
    PREFIX + "bind.host": "127.0.0.1",       # 0.0.0.0 to accept tuples from other machines
    # 0 to 2147483647: how long closing waits for queued batches (zmq's -1, wait forever,
    # is refused: a worker's shutdown would hang on a peer that is gone)
    PREFIX + "linger.ms": 1000,
    # batches queued per connection, 0 to 2147483647; 0: no limit (zmq's meaning: send then
    # never reports a slow or gone peer, and memory grows); null:
    # squall.transport.send.buffer.messages when that is set, else 10000
    PREFIX + "hwm": None,
    PREFIX + "curve.enabled": False,
    PREFIX + "curve.server.secret.key": None,   # Z85 text
    PREFIX + "curve.server.public.key": None,
}


@hookimpl
def squall_add_defaults() -> dict[str, Any]:
    return DEFAULTS


@hookimpl
def squall_add_worker_shared_keys() -> tuple[str, ...]:
    """Workers with and without CURVE cannot connect to each other."""
    return (PREFIX + "curve.enabled",)


@hookimpl
def squall_add_config_types() -> dict[str, type]:
    return {PREFIX + "hwm": int, PREFIX + "curve.server.secret.key": str,
            PREFIX + "curve.server.public.key": str}


#: zmq's socket options are C ints: a larger value fails in every worker with EINVAL
_INT_MAX = 2**31 - 1


def check_options(conf: Mapping[str, Any]) -> None:
    """ConfigError naming the first key of ``conf`` under ``squall.transport.zmq.`` whose
    value zmq refuses (missing keys pass: their defaults are good)."""
    from squall.config import check_host, check_range
    check_host(conf, PREFIX + "bind.host")
    check_range(conf, PREFIX + "linger.ms", 0, _INT_MAX)
    check_range(conf, PREFIX + "hwm", 0, _INT_MAX, nullable=True)


@hookimpl
def squall_validate_config(conf: Mapping[str, Any]) -> None:
    """A value zmq refuses is refused at submit, not by every worker at start with zmq's
    "Invalid argument", which names no key."""
    check_options(conf)
