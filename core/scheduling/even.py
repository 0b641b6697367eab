"""The ``even`` scheduler: Storm's default, counting worker slots only.

For each topology that needs scheduling (oldest first): placements that are still valid stay
where they are; the topology gets up to ``num_workers`` workers in total (fewer when the cluster
has fewer free slots, and more later as slots free up: once the topologies with executors
without a slot have theirs, one running on fewer workers than asked for spreads out over free
slots as after a rebalance); new slots are taken round-robin across supervisors (the supervisor with
the most free slots first, ties by id, then port order), and the executors without a slot are
dealt over the new slots in task order, so each component's executors spread across workers and
nodes. When the topology already has its workers, homeless executors join them instead. A
topology that gets no slot at all is reported ``pending``. Resources are ignored, and so is
``topology.isolated.hosts`` (host isolation needs ``multidim``): a topology that sets it gets one
warning in nimbus's log.

After a rebalance (see :mod:`squall.scheduling.rebalance`) the surviving placement is kept:
with fewer workers the workers with the fewest executors are freed and their executors join
the rest; with more workers each new worker takes only its share of executors from the most
loaded ones; executors of a component whose count changed join the least loaded workers.

The same input always yields the same assignment.
"""
from __future__ import annotations

import logging
from typing import Any

from squall.scheduling.cluster import (
    Cluster,
    ExecutorDetails,
    Topologies,
    TopologyDetails,
    WorkerSlot,
)
from squall.scheduling.rebalance import join_least_loaded, spread, surplus_workers
from squall.spi.scheduler import Scheduler

__all__ = ["EvenScheduler", "deal", "first_free_slots", "sort_slots"]

log = logging.getLogger(__name__)


def sort_slots(slots: list[WorkerSlot]) -> list[WorkerSlot]:
    """Interleave free slots across nodes: one slot of every node, then a second of every
    node, ...; nodes with more free slots first, ties by node id; ports ascending."""
    by_node: dict[str, list[int]] = {}
    for slot in slots:
        by_node.setdefault(slot.node_id, []).append(slot.port)
    nodes = sorted(by_node, key=lambda n: (-len(by_node[n]), n))
    for ports in by_node.values():
        ports.sort()
    out: list[WorkerSlot] = []
    depth = max((len(p) for p in by_node.values()), default=0)
    for i in range(depth):
        out.extend(WorkerSlot(n, by_node[n][i]) for n in nodes if i < len(by_node[n]))
    return out


def first_free_slots(cluster: Cluster, k: int) -> list[WorkerSlot]:
    """``sort_slots(cluster.available_slots())[:k]`` without listing every free slot: only
    the nodes' free counts are sorted and the interleaving stops after ``k`` slots."""
    counts = {s.id: cluster.available_slot_count(s.id) for s in cluster.supervisors()}
    nodes = sorted((n for n, c in counts.items() if c), key=lambda n: (-counts[n], n))
    ports: dict[str, list[WorkerSlot]] = {}
    out: list[WorkerSlot] = []
    depth = 0
    while len(out) < k and nodes:
        for n in nodes:
            if n not in ports:
                ports[n] = cluster.available_slots(n)
            out.append(ports[n][depth])
            if len(out) == k:
                break
        depth += 1
        nodes = [n for n in nodes if counts[n] > depth]
    return out


def deal(executors: list[ExecutorDetails], n: int) -> list[list[ExecutorDetails]]:
    """Deal sorted ``executors`` round-robin into ``n`` hands (``n >= 1``)."""
    hands: list[list[ExecutorDetails]] = [[] for _ in range(n)]
    for i, e in enumerate(sorted(executors)):
        hands[i % n].append(e)
    return hands


class EvenScheduler(Scheduler):
    """Storm's even scheduler (entry point ``even``). Called on nimbus's scheduling thread."""

    name = "even"
    resource_aware = False

    def __init__(self, conf: Any = None) -> None:
        super().__init__(conf)
        self._warned_isolation: set[str] = set()   # topology ids warned about isolated hosts

    def schedule(self, topologies: Topologies, cluster: Cluster) -> None:
        short = []    # running on fewer workers than asked for, nothing else to do
        for topology in topologies:
            if topology.isolated_hosts and topology.id not in self._warned_isolation:
                self._warned_isolation.add(topology.id)
                log.warning("topology %s sets topology.isolated.hosts (%s) but the even "
                            "scheduler ignores it: host isolation needs squall.scheduler: "
                            "multidim", topology.id, ", ".join(topology.isolated_hosts))
            if not cluster.needs_scheduling(topology):
                continue
            if topology.rebalanced or cluster.unassigned_executors(topology):
                self.schedule_topology(topology, cluster)
            else:
                short.append(topology)
        # free slots go first to executors without one; what is left spreads out those
        for topology in short:
            if cluster.needs_scheduling(topology):
                self.schedule_topology(topology, cluster)

    def schedule_topology(self, topology: TopologyDetails, cluster: Cluster) -> None:
        """Place ``topology``'s homeless executors (see the module docstring)."""
        wanted = topology.wanted_workers
        assignment = cluster.get_assignment(topology.id)
        if assignment is not None and len(assignment.slots()) > wanted:
            self._shrink(topology, cluster, wanted)
            return
        unassigned = cluster.unassigned_executors(topology)
        if topology.rebalanced or not unassigned:
            # after a rebalance, or running on fewer workers than asked for while slots are
            # free (a supervisor came back, another topology ended): spread out over them
            self._grow(topology, cluster, wanted)
            return
        alive = assignment.slots() if assignment is not None else []
        targets = first_free_slots(cluster, max(0, wanted - len(alive)))
        if not targets:
            targets = self._least_loaded(alive, assignment)
        if not targets:
            self._pending(topology, cluster, wanted)
            return
        for slot, hand in zip(targets, deal(unassigned, len(targets))):
            if hand:
                cluster.assign(slot, topology.id, hand)

    @staticmethod
    def _pending(topology: TopologyDetails, cluster: Cluster, wanted: int) -> None:
        cluster.set_status(topology.id, "pending",
                           f"needs {wanted} more worker slots (have 0 free, need {wanted})")
        log.debug("topology %s pending: no free worker slot", topology.id)

    @staticmethod
    def _placed(cluster: Cluster, topology_id: str) -> dict[WorkerSlot, list[ExecutorDetails]]:
        assignment = cluster.get_assignment(topology_id)
        if assignment is None:
            return {}
        return {s: assignment.executors_on(s) for s in assignment.slots()}

    def _shrink(self, topology: TopologyDetails, cluster: Cluster, wanted: int) -> None:
        """More workers than asked for (a rebalance): free the workers with the fewest
        executors; theirs and any homeless executors join the least loaded of the rest."""
        placed = self._placed(cluster, topology.id)
        for slot in surplus_workers(placed, wanted):
            cluster.free_slot(slot)
            del placed[slot]
        homeless = cluster.unassigned_executors(topology)
        loads = {s: len(es) for s, es in placed.items()}
        for slot, executors in join_least_loaded(loads, homeless).items():
            cluster.assign(slot, topology.id, executors)

    def _grow(self, topology: TopologyDetails, cluster: Cluster, wanted: int) -> None:
        """At most ``wanted`` workers (after a rebalance, or fewer than asked for): new
        workers on free slots take only their share of executors from the existing ones;
        homeless executors fill the gaps."""
        placed = self._placed(cluster, topology.id)
        homeless = cluster.unassigned_executors(topology)
        new = first_free_slots(cluster, max(0, wanted - len(placed)))
        if new and placed and not topology.rebalanced:
            log.info("topology %s runs on %d of %d workers: adding %d on free slots",
                     topology.id, len(placed), wanted, len(new))
        if new:
            taken, hands, added = spread(placed, homeless, len(new), topology.executors)
            cluster.unassign(topology.id, taken)
            for slot, hand in zip(new, hands):
                if hand:
                    cluster.assign(slot, topology.id, hand)
            for slot, executors in added.items():
                cluster.assign(slot, topology.id, executors)
        elif placed:
            loads = {s: len(es) for s, es in placed.items()}
            for slot, executors in join_least_loaded(loads, homeless).items():
                cluster.assign(slot, topology.id, executors)
        elif homeless:
            self._pending(topology, cluster, wanted)

    @staticmethod
    def _least_loaded(slots: list[WorkerSlot], assignment: Any) -> list[WorkerSlot]:
        return sorted(slots, key=lambda s: (len(assignment.executors_on(s)), s))
