"""Scheduling: the cluster model schedulers work on, resources, and the ``even`` scheduler.

The model lives in :mod:`squall.scheduling.cluster` (nimbus builds a ``Cluster``, the configured
scheduler fills it in); resource values and supervisor defaults in
:mod:`squall.scheduling.resources`; LocalCluster's placement in :mod:`squall.scheduling.local`.
"""
from __future__ import annotations

from squall.scheduling.cluster import (
    Cluster,
    ExecutorDetails,
    SchedulerAssignment,
    SupervisorDetails,
    Topologies,
    TopologyDetails,
    TopologyStatus,
    WorkerSlot,
    split_tasks,
)
from squall.scheduling.resources import (
    Resources,
    component_resources,
    default_supervisor_resources,
)

__all__ = [
    "Cluster", "ExecutorDetails", "Resources", "SchedulerAssignment", "SupervisorDetails",
    "Topologies", "TopologyDetails", "TopologyStatus", "WorkerSlot", "component_resources",
    "default_supervisor_resources", "split_tasks",
]
