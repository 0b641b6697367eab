"""Trident's hook implementations (registered through ``squall.plugins`` as ``trident``)."""
from __future__ import annotations

from typing import Any

from squall.errors import TopologyError
from squall.hookspecs import hookimpl

COORDINATOR = "squall.trident.runtime.coordinator:TridentCoordinator"


@hookimpl
def squall_worker_start(topology_id: str, port: int, conf: dict[str, Any]) -> None:
    """A worker returns DRPC results with its own credentials (API.md section 14)."""
    from squall.drpc.client import use_process_credentials
    use_process_credentials(conf)


@hookimpl
def squall_validate_topology(topology: Any, conf: dict[str, Any]) -> None:
    """A Trident topology needs ackers: its batches complete through the acker."""
    trident = any(getattr(spec, "ref", None) == COORDINATOR
                  for spec in topology.components.values())
    if trident and conf.get("topology.acker.executors") == 0:
        raise TopologyError("a Trident topology needs ackers (its batches complete through "
                            "them): topology.acker.executors must not be 0")
