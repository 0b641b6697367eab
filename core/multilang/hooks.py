"""Multi-lang's hooks: a topology naming an unknown multi-lang serializer, or with a shell
component whose ``command`` is not an argv list, is refused at submit, and a worker that
shuts down stops the subprocesses its shell components run once its loop has stopped, before
their threads are waited for (a call waiting on a subprocess, or on its handshake, ends then,
and the components' cleanup runs); its stop is the backstop for a worker whose stopping was
never told."""
from __future__ import annotations

from typing import Any

from squall.errors import ConfigError, TopologyError
from squall.hookspecs import hookimpl
from squall.multilang.link import SERIALIZER_KEY, check_commands
from squall.multilang.process import stop_worker
from squall.multilang.protocol import codec_class


@hookimpl
def squall_validate_topology(topology: Any, conf: dict[str, Any]) -> None:
    for where, c in [("the topology", conf)] + [
            (f"component {spec.id!r}", spec.config)
            for spec in topology.components.values()]:
        if SERIALIZER_KEY in c:
            try:
                codec_class(c[SERIALIZER_KEY])
            except ConfigError as exc:
                raise TopologyError(f"{where}: {exc}") from exc
    check_commands(topology.components.values())


@hookimpl
def squall_worker_stopping(topology_id: str, port: int) -> None:
    stop_worker(topology_id, port)


@hookimpl
def squall_worker_stop(topology_id: str, port: int) -> None:
    stop_worker(topology_id, port)
