"""squall's own hook implementations, registered through ``squall.plugins`` like any plugin."""
from __future__ import annotations

from typing import Any

from squall.errors import TopologyError
from squall.hookspecs import hookimpl


@hookimpl
def squall_validate_topology(topology: Any, conf: dict[str, Any]) -> None:
    workers = conf.get("topology.workers", 1)
    if not isinstance(workers, int) or workers < 1:
        raise TopologyError(f"topology.workers must be a positive integer, got {workers!r}")
    from squall.config import validate_components
    validate_components(topology.components.values())
    from squall.windowing.topology import check_timeouts
    check_timeouts(topology, conf)      # windowed bolts against the submitted timeout
    from squall.runtime.routing import check_groupings
    check_groupings(topology, conf)
