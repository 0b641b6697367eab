"""Placement for LocalCluster, where every worker lives in the calling process.

LocalCluster has no supervisors or ports to choose between, only ``num_workers`` in-process
workers numbered ``0 .. n-1``; :func:`assign_local` spreads executors over them like the even
scheduler does over slots.
"""
from __future__ import annotations

from squall.scheduling.model import ExecutorDetails, TopologyDetails

__all__ = ["assign_local"]


def assign_local(topology: TopologyDetails, num_workers: int) -> dict[ExecutorDetails, int]:
    """executor -> worker index in ``range(n)``, ``n = max(1, min(num_workers, executors))``.

    Executors are taken in task order and dealt round-robin, so worker loads differ by at most
    one executor and each component's executors spread over the workers. Pure and
    deterministic; never raises for a valid topology.

    >>> from squall.scheduling.model import split_tasks
    >>> t = TopologyDetails("t-1", "t", {}, 2, {e: "c" for e in split_tasks(1, 3, 3)})
    >>> sorted(assign_local(t, 2).values())
    [0, 0, 1]
    """
    executors = sorted(topology.executors)
    n = max(1, min(num_workers, len(executors)))
    return {e: i % n for i, e in enumerate(executors)}
