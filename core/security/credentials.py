"""The cluster's credentials in a worker's conf, kept out of its components' (API.md section 14).

A worker's conf is its supervisor's merged with the topology's, so it holds what the worker
needs to reach the cluster: the supervisor's token (``squall.auth.token``, an admin's), the
token table, the ZooKeeper identity, TLS files and the transports' keys
(:func:`is_credential`). A component gets its conf without them (:func:`without_credentials`,
once per component and worker; a shell component's handshake and a metrics consumer's conf
come from that conf too). The worker keeps them for the parts of squall a component opens
from its conf (:func:`keep`, at the worker's build): Trident's state in the cluster's store,
the Spark spout's progress, the DRPC requests a topology fetches; those ask
:func:`for_runtime` for a conf with the credentials back.

This keeps the secrets out of what a component is handed, logs or passes on; it is no wall
between a topology's code and them: that code runs in the worker's process, as the
supervisor's OS user, and code that sets out to read them (through this module, or the
supervisor's files) can.
"""
from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from squall.security import is_secret_key

#: keys under these prefixes are credentials (``squall.transport.tls.*``: a worker's copy of
#: the generated transport credentials; ``squall.transport.tls`` itself is only a switch)
PREFIXES = ("squall.auth.", "nimbus.auth.", "storm.zookeeper.auth.", "squall.tls.",
            "squall.transport.tls.")
#: the conf key holding command-line overrides (``squall.config.OVERRIDES_KEY``), which a
#: component's conf re-applies: a credential given with ``-c`` is also in there
_OVERRIDES = "squall.cli.overrides"

__all__ = ["PREFIXES", "for_runtime", "is_credential", "keep", "without_credentials"]

_kept: dict[str, Any] = {}
_lock = threading.Lock()


def is_credential(key: str) -> bool:
    """Whether ``key`` holds a credential of the cluster: under :data:`PREFIXES`, or a
    transport's secret (``squall.transport.<name>.tls.key.file``, its CURVE keys)."""
    key = str(key)
    return key.startswith(PREFIXES) or (key.startswith("squall.transport.")
                                        and is_secret_key(key))


def without_credentials(conf: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``conf`` without its credentials (see :func:`is_credential`), in its
    command-line overrides too. ``nimbus.authentication`` and ``nimbus.admins`` stay."""
    out = {k: v for k, v in conf.items() if not is_credential(k)}
    overrides = out.get(_OVERRIDES)
    if isinstance(overrides, Mapping):
        out[_OVERRIDES] = {k: v for k, v in overrides.items() if not is_credential(k)}
    elif isinstance(overrides, (list, tuple)):
        out[_OVERRIDES] = [o for o in overrides if not is_credential(
            (o.partition("=")[0] if isinstance(o, str) else o[0]).strip())]
    return out


def keep(conf: Mapping[str, Any]) -> None:
    """Keep ``conf``'s credentials for :func:`for_runtime` in this process (a worker, when it
    builds; the latest call wins)."""
    found = {k: v for k, v in conf.items() if is_credential(k) and v not in (None, "", {})}
    with _lock:
        _kept.clear()
        _kept.update(found)


def for_runtime(conf: Mapping[str, Any]) -> dict[str, Any]:
    """``conf`` with the credentials :func:`keep` kept, for a part of squall that a component
    opens from its conf (the cluster's state store, DRPC). A credential ``conf`` sets itself
    wins."""
    with _lock:
        missing = {k: v for k, v in _kept.items() if conf.get(k) in (None, "", {})}
    return {**conf, **missing}
