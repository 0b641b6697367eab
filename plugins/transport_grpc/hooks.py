"""The gRPC transport's hooks (entry point ``transport_grpc`` in ``squall.plugins``): its
config keys, ``squall.transport.grpc.*``, with their defaults, types and ranges.

Importing this module does not import grpc (every process loads it to read its
configuration); the transport itself loads through ``squall.transports`` when it is chosen.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from squall.errors import ConfigError, TopologyError
from squall.hookspecs import hookimpl

__all__ = ["check_options", "max_message_bytes", "squall_add_config_types",
           "squall_add_defaults", "squall_add_worker_shared_keys", "squall_configure",
           "squall_validate_config", "squall_validate_topology"]

PREFIX = "squall.transport.grpc."
#: the keys this plugin owns (see :mod:`squall.plugins.transport_grpc.transport` for meanings)
DEFAULTS: dict[str, Any] = {
    PREFIX + "bind.host": "127.0.0.1",       # 0.0.0.0 to accept tuples from other machines
    # MiB above 0 and below 2048; a float default, so a fraction (0.5) passes the type check
    PREFIX + "max.message.mb": 256.0,
    PREFIX + "linger.ms": 1000,              # at least 0
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
    return {PREFIX + f"tls.{name}.file": str for name in ("cert", "key", "ca")}


#: gRPC counts a message's size in a C int
_GRPC_MAX_MESSAGE = 1 << 31


def max_message_bytes(conf: Mapping[str, Any]) -> int:
    """``max.message.mb`` of ``conf`` in bytes; ConfigError unless above 0 and below 2048."""
    mb = conf.get(PREFIX + "max.message.mb", DEFAULTS[PREFIX + "max.message.mb"])
    if (mb.__class__ is bool or not isinstance(mb, (int, float))
            or not 0 < mb * (1 << 20) < _GRPC_MAX_MESSAGE):
        raise ConfigError(f"{PREFIX}max.message.mb must be a number above 0 and below 2048 "
                          f"(gRPC's limit), got {mb!r}")
    return int(mb * (1 << 20))


def check_options(conf: Mapping[str, Any]) -> None:
    """ConfigError naming the first key of ``conf`` under ``squall.transport.grpc.`` whose
    value the transport cannot use (missing keys pass: their defaults are good)."""
    from squall.config import check_host, check_range
    check_host(conf, PREFIX + "bind.host")
    check_range(conf, PREFIX + "linger.ms", 0)
    if conf.get(PREFIX + "max.message.mb") is not None:
        max_message_bytes(conf)


@hookimpl
def squall_validate_config(conf: Mapping[str, Any]) -> None:
    """A value the transport cannot use is refused at submit, not in every worker."""
    check_options(conf)


@hookimpl
def squall_configure(conf: dict[str, Any]) -> None:
    """A nimbus, supervisor or LocalCluster on grpc refuses to start with a size it cannot
    use."""
    if conf.get("squall.transport") == "grpc":
        max_message_bytes(conf)


@hookimpl
def squall_validate_topology(topology: Any, conf: dict[str, Any]) -> None:
    """A topology that chooses grpc (or runs where it is chosen) with a size it cannot use is
    refused at submit, not by every worker at start."""
    if conf.get("squall.transport") == "grpc":
        try:
            max_message_bytes(conf)
        except ConfigError as exc:
            raise TopologyError(str(exc)) from None
