"""System components: what nimbus and LocalCluster add to a user topology, and how each
component's instance is made.

``add_system_components`` completes a user topology before it is scheduled (nimbus and
LocalCluster both call it): ``__acker`` tasks (``topology.acker.executors``; null means one per
worker) and one ``__metrics_<name>`` bolt per registered metrics consumer. (The builder adds
``__checkpoint`` itself, see :mod:`squall.stateful.wiring`; a topology with it and without
ackers is refused here.) Before that, both apply ``topology.max.task.parallelism`` with
``cap_parallelism``.
"""
from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from squall import drivers
from squall.api.topology import ACKER, ComponentSpec, Topology
from squall.config import component_conf
from squall.runtime.streams import METRICS_PREFIX as METRICS_PREFIX  # re-exported

log = logging.getLogger(__name__)
MAX_TASK_PARALLELISM = "topology.max.task.parallelism"


def cap_parallelism(topology: Topology, conf: dict[str, Any]) -> Topology:
    """``topology`` with every component's tasks and executors capped at its
    ``topology.max.task.parallelism`` (as the component reads it: ``-c`` overrides, else its
    own config, else ``conf``'s; null or absent: no cap), as Storm's nimbus does when it
    normalizes a submitted topology.

    Like Storm, only the components of the submitted topology are capped: the ackers and
    metrics consumers :func:`add_system_components` adds keep their own counts (Storm adds
    them after capping). Task ids are assigned afresh, so call it before the topology runs.
    """
    specs, capped = [], []
    for cid, spec in sorted(topology.components.items()):
        cap = component_conf(conf, spec.config).get(MAX_TASK_PARALLELISM)   # -c wins
        if cap is None or cid == ACKER or cid.startswith(METRICS_PREFIX) or \
                spec.num_tasks <= int(cap) and spec.parallelism <= int(cap):
            specs.append(spec)
            continue
        tasks = min(spec.num_tasks, int(cap))
        config = dict(spec.config)
        if "topology.tasks" in config:       # what set_num_tasks wrote: the count it gets
            config["topology.tasks"] = tasks
        specs.append(replace(spec, num_tasks=tasks, parallelism=min(spec.parallelism, tasks),
                             config=config))
        capped.append(f"{cid} {spec.parallelism}/{spec.num_tasks} -> "
                      f"{min(spec.parallelism, tasks)}/{tasks}")
    if not capped:
        return topology
    log.info("topology.max.task.parallelism caps executors/tasks: %s", ", ".join(capped))
    return Topology(specs, topology.conf)



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
