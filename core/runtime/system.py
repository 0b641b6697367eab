"""System components: what nimbus and LocalCluster add to a user topology, and how each
component's instance is made.

``add_system_components`` completes a user topology before it is scheduled (nimbus and
LocalCluster both call it): ``__acker`` tasks (``topology.acker.executors``; null means one per
worker) and one ``__metrics_<name>`` bolt per registered metrics consumer. (The builder adds
``__checkpoint`` itself, see :mod:`squall.stateful.wiring`; a topology with it and without
ackers is refused here.)
"""
from __future__ import annotations

from typing import Any

from squall import drivers
from squall.api.topology import ACKER, ComponentSpec, Topology
from squall.runtime.streams import METRICS_PREFIX as METRICS_PREFIX  # re-exported



def add_system_components(topology: Topology, conf: dict[str, Any]) -> Topology:
    """Return ``topology`` with its acker and metrics-consumer components (idempotent)."""
    from squall.stateful.checkpoint import CHECKPOINT
    from squall.stateful.wiring import check_ackers
    check_ackers(topology, conf)
    if any(c.startswith("__") and c != CHECKPOINT for c in topology.components):
        return topology
    extra = []
    ackers = conf.get("topology.acker.executors")
    if ackers is None:
        ackers = int(conf.get("topology.workers") or 1)
    if ackers:
        extra.append(ComponentSpec(id=ACKER, kind="acker", cls=None, ref="", parallelism=ackers,
                                   num_tasks=ackers))
    from squall.metrics.consumer_bolt import MetricsConsumerBolt, consumer_components
    for cid, config, parallelism in consumer_components(conf):
        drivers.check("squall.metrics_consumers", config["squall.metrics.consumer"]["class"])
        extra.append(ComponentSpec(
            id=cid, kind="bolt", cls=MetricsConsumerBolt,
            ref="squall.metrics.consumer_bolt:MetricsConsumerBolt",
            parallelism=parallelism, num_tasks=parallelism, config=config))
    return topology.with_components(extra) if extra else topology


def instantiate(spec: ComponentSpec, conf: dict[str, Any]) -> Any:
    if spec.kind == "acker":
        return drivers.driver("acker", conf)
    cls = spec.cls
    if cls is None:
        from squall.api.topology import resolve_class
        cls = spec.cls = resolve_class(spec.ref)
    return cls()
