"""squall's own hook implementations, registered through ``squall.plugins`` like any plugin."""
from __future__ import annotations

from typing import Any

from squall.errors import PluginLoadError, TopologyError
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
    from squall.metrics.consumer_bolt import load_consumers
    load_consumers(conf)            # one whose library is missing: refused here, not per bucket
    _check_requirements(topology)


def _check_requirements(topology: Any) -> None:
    """PluginLoadError naming the first component whose class lists in ``squall_requires``
    a module that is not installed (a SparkSpout without pyspark), with the extra to install,
    instead of its tasks failing to start."""
    from squall import drivers
    for cid, spec in sorted(topology.components.items()):
        missing = drivers.missing_requirement(spec.cls)
        if missing is not None:
            raise PluginLoadError(f"component {cid!r} ({spec.ref}) needs the {missing!r} "
                                  f"module{drivers.install_hint(missing)}")
