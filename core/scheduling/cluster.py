"""The cluster a scheduler works on: supervisors, their slots, and the current placements.

How nimbus uses it (every time topologies, supervisors or worker heartbeats change)::

    supervisors = [SupervisorDetails(sid, info["hostname"], info["ports"],
                                     Resources.from_dict(info.get("resources")))
                   for sid, info in live_supervisors.items()]
    existing = {tid: SchedulerAssignment.from_executor_node_port(tid, a["executor_node_port"])
                for tid, a in assignments_from_zk.items()}      # only alive executors
    topologies = Topologies(TopologyDetails(...) for each active topology)
    cluster = Cluster(supervisors, existing, topologies)
    scheduler.schedule(topologies, cluster)
    for tid, assignment in cluster.assignments().items():
        state = cluster.assignment_state(tid)     # node_host, executor_node_port, worker_resources
        ...write /assignments/<tid> (adding code_dir and executor_start_time_secs)
    for tid, status in cluster.statuses().items():  # e.g. ("pending", "needs 2 more cpu ...")
        ...write status / status_reason into /storms/<tid>

The constructor copies what it is given and drops placements that cannot be valid any more
(a slot of a supervisor that is gone or a port it no longer offers, an executor the topology no
longer has, a slot claimed by two topologies); :attr:`Cluster.dropped` lists them. Placements of
topologies not in ``topologies`` are kept and keep their slots occupied.

Not thread-safe: one scheduling pass at a time, on the caller's thread; nothing blocks.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from squall.errors import SchedulingError
from squall.scheduling.assignment import SchedulerAssignment
from squall.scheduling.model import (
    ExecutorDetails,
    SupervisorDetails,
    Topologies,
    TopologyDetails,
    WorkerSlot,
    details_from_topology,
    split_tasks,
)
from squall.scheduling.resources import Resources

__all__ = [
    "Cluster", "ExecutorDetails", "Resources", "SchedulerAssignment", "SupervisorDetails",
    "Topologies", "TopologyDetails", "TopologyStatus", "WorkerSlot", "details_from_topology",
    "split_tasks",
]

log = logging.getLogger(__name__)


class TopologyStatus(NamedTuple):
    """A status a scheduler reported, e.g. ``("pending", "needs 2 more memory slots ...")``."""

    status: str
    reason: str = ""


class Cluster:
    """Supervisors, slots and assignments for one scheduling pass (see the module docstring).

    ``Cluster(supervisors, assignments=None, topologies=None)``: ``assignments`` maps topology
    id -> :class:`SchedulerAssignment` (existing, alive placements); ``topologies`` is the
    :class:`Topologies` being scheduled (used to validate executors and to compute worker
    resources).
    """

    def __init__(self, supervisors: Iterable[SupervisorDetails],
                 assignments: Mapping[str, SchedulerAssignment] | None = None,
                 topologies: Topologies | None = None) -> None:
        self._supervisors: dict[str, SupervisorDetails] = {}
        for sup in sorted(supervisors, key=lambda s: s.id):
            if sup.id in self._supervisors:
                raise SchedulingError(f"supervisor id {sup.id!r} given twice")
            self._supervisors[sup.id] = sup
        self._topologies = topologies if topologies is not None else Topologies()
        self._free_ports: dict[str, set[int]] = {s.id: set(s.ports) for s in self._supervisors.values()}
        self._used: dict[str, Resources] = {sid: Resources() for sid in self._supervisors}
        self._slot_owner: dict[WorkerSlot, str] = {}
        self._assignments: dict[str, SchedulerAssignment] = {}
        self._statuses: dict[str, TopologyStatus] = {}
        #: ``(topology id, executor, slot, why)`` for every existing placement dropped.
        self.dropped: list[tuple[str, ExecutorDetails, WorkerSlot, str]] = []
        for tid in sorted(assignments or {}):
            self._load_existing(assignments[tid])  # type: ignore[index]

    def _load_existing(self, given: SchedulerAssignment) -> None:
        tid = given.topology_id
        topology = self._topologies.get(tid)
        for slot in given.slots():
            keep = []
            for e in given.executors_on(slot):
                why = self._invalid_reason(tid, topology, e, slot)
                if why:
                    self.dropped.append((tid, e, slot, why))
                    log.debug("dropping %s %s on %s: %s", tid, e, slot, why)
                else:
                    keep.append(e)
            if keep:
                res = given.worker_resources.get(slot, Resources()) if topology is None else None
                self._assign(slot, tid, keep, res)

    def _invalid_reason(self, tid: str, topology: TopologyDetails | None, e: ExecutorDetails,
                        slot: WorkerSlot) -> str:
        sup = self._supervisors.get(slot.node_id)
        if sup is None:
            return "supervisor is gone"
        if slot.port not in sup.ports:
            return "port no longer offered"
        if topology is not None and e not in topology.executors:
            return "executor no longer in the topology"
        owner = self._slot_owner.get(slot)
        if owner is not None and owner != tid:
            return f"slot already used by {owner}"
        current = self._assignments.get(tid)
        if current is not None and current.is_assigned(e):
            return "executor placed twice"
        return ""

    # -- supervisors and slots -----------------------------------------------------------------

    def supervisors(self) -> list[SupervisorDetails]:
        """Every live supervisor, sorted by id."""
        return list(self._supervisors.values())

    def get_supervisor(self, supervisor_id: str) -> SupervisorDetails | None:
        return self._supervisors.get(supervisor_id)

    @property
    def topologies(self) -> Topologies:
        return self._topologies

    def available_slots(self, supervisor: str | None = None) -> list[WorkerSlot]:
        """Free slots, sorted by (supervisor id, port); only those of supervisor id
        ``supervisor`` when given (an unknown id has none)."""
        if supervisor is not None:
            return [WorkerSlot(supervisor, p) for p in sorted(self._free_ports.get(supervisor, ()))]
        return [WorkerSlot(sid, p) for sid, ports in self._free_ports.items()
                for p in sorted(ports)]

    def available_slot_count(self, supervisor: str | None = None) -> int:
        if supervisor is not None:
            return len(self._free_ports.get(supervisor, ()))
        return sum(len(p) for p in self._free_ports.values())

    def used_slots(self) -> list[WorkerSlot]:
        """Occupied slots, sorted."""
        return sorted(self._slot_owner)

    def slot_owner(self, slot: WorkerSlot) -> str | None:
        """The id of the topology using ``slot``, or None when it is free."""
        return self._slot_owner.get(slot)

    def used_resources(self, supervisor: str) -> Resources:
        """What the workers on supervisor id ``supervisor`` need in total."""
        return self._used.get(supervisor, Resources())

    def available_resources(self, supervisor: str) -> Resources:
        """Capacity minus use (may be negative if placements over-commit it)."""
        sup = self._supervisors.get(supervisor)
        if sup is None:
            return Resources()
        return sup.resources - self._used[supervisor]

    # -- changing placements -------------------------------------------------------------------

    def assign(self, slot: WorkerSlot, topology_id: str,
               executors: Iterable[ExecutorDetails]) -> None:
        """Run ``executors`` of ``topology_id`` in the worker on ``slot`` (adding to that
        topology's worker if it already has the slot).

        The worker's resources are the sum of its executors' needs (from the topology's
        details). Capacity is NOT checked here: resource-aware schedulers check
        :meth:`available_resources` first. Raises :class:`SchedulingError` when the slot does
        not exist, is used by another topology, an executor is not part of a known topology,
        or an executor is already placed on a different slot.
        """
        slot = WorkerSlot(*slot)
        executors = [ExecutorDetails(*e) for e in executors]
        sup = self._supervisors.get(slot.node_id)
        if sup is None or slot.port not in sup.ports:
            raise SchedulingError(f"no slot {slot} in the cluster")
        owner = self._slot_owner.get(slot)
        if owner is not None and owner != topology_id:
            raise SchedulingError(f"slot {slot} is already used by topology {owner}")
        topology = self._topologies.get(topology_id)
        current = self._assignments.get(topology_id)
        for e in executors:
            if topology is not None and e not in topology.executors:
                raise SchedulingError(f"executor {e} is not part of topology {topology_id}")
            placed = current.slot_of(e) if current is not None else None
            if placed is not None and placed != slot:
                raise SchedulingError(f"executor {e} of {topology_id} is already on {placed}")
        self._assign(slot, topology_id, executors, None)

    def _assign(self, slot: WorkerSlot, tid: str, executors: list[ExecutorDetails],
                resources: Resources | None) -> None:
        assignment = self._assignments.get(tid)
        if assignment is None:
            assignment = self._assignments[tid] = SchedulerAssignment(tid)
        new = [e for e in executors if not assignment.is_assigned(e)]
        if resources is None:
            topology = self._topologies.get(tid)
            resources = Resources()
            if topology is not None:
                for e in new:
                    resources = resources + topology.resources_for(e)
        assignment.place(slot, new, resources)
        self._slot_owner[slot] = tid
        self._free_ports[slot.node_id].discard(slot.port)
        self._used[slot.node_id] = self._used[slot.node_id] + resources

    def free_slot(self, slot: WorkerSlot) -> list[ExecutorDetails]:
        """Stop using ``slot``; its executors become unassigned. Returns them (sorted).
        A free or unknown slot is a no-op."""
        tid = self._slot_owner.pop(slot, None)
        if tid is None:
            return []
        assignment = self._assignments[tid]
        res = assignment.worker_resources.get(slot, Resources())
        executors = assignment.clear_slot(slot)
        if not len(assignment):
            del self._assignments[tid]
        self._free_ports[slot.node_id].add(slot.port)
        self._used[slot.node_id] = self._used[slot.node_id] - res
        return sorted(executors)

    def unassign(self, topology_id: str, executors: Iterable[ExecutorDetails]) -> None:
        """Take ``executors`` of ``topology_id`` off their workers (they become unassigned, so
        a scheduler can move a few executors instead of freeing whole workers); a worker left
        with no executor frees its slot. Executors not placed are ignored. Raises
        :class:`SchedulingError` when ``topology_id`` is not being scheduled (its executors'
        needs are unknown)."""
        topology = self._topologies.get(topology_id)
        assignment = self._assignments.get(topology_id)
        if topology is None:
            raise SchedulingError(f"topology {topology_id} is not being scheduled")
        if assignment is None:
            return
        by_slot: dict[WorkerSlot, list[ExecutorDetails]] = {}
        for e in {ExecutorDetails(*e) for e in executors}:
            slot = assignment.slot_of(e)
            if slot is not None:
                by_slot.setdefault(slot, []).append(e)
        for slot, moved in sorted(by_slot.items()):
            freed = Resources()
            for e in moved:
                freed = freed + topology.resources_for(e)
            before = assignment.worker_resources.get(slot, Resources())
            if assignment.unplace(moved):       # the worker is empty: its slot is free
                self._used[slot.node_id] = self._used[slot.node_id] - before
                del self._slot_owner[slot]
                self._free_ports[slot.node_id].add(slot.port)
            else:
                self._used[slot.node_id] = self._used[slot.node_id] - freed
                assignment.set_worker_resources(slot, before - freed)
        if not len(assignment):
            del self._assignments[topology_id]

    def free_topology(self, topology_id: str) -> None:
        """Free every slot of ``topology_id`` (e.g. before rescheduling it from scratch)."""
        assignment = self._assignments.get(topology_id)
        for slot in assignment.slots() if assignment is not None else ():
            self.free_slot(slot)

    # -- what needs doing ----------------------------------------------------------------------

    def unassigned_executors(self, topology: TopologyDetails) -> list[ExecutorDetails]:
        """The executors of ``topology`` without a slot, sorted."""
        assignment = self._assignments.get(topology.id)
        if assignment is None:
            return list(topology.executors)
        return [e for e in topology.executors if not assignment.is_assigned(e)]

    def assigned_worker_count(self, topology_id: str) -> int:
        assignment = self._assignments.get(topology_id)
        return len(assignment.slots()) if assignment is not None else 0

    def needs_scheduling(self, topology: TopologyDetails) -> bool:
        """True when some executor has no slot, the topology has more workers than it asked
        for (a rebalance to fewer workers), or fewer workers than it asked for and a slot is
        free (Storm's rule, so a grown cluster spreads it out)."""
        if self.unassigned_executors(topology):
            return True
        wanted = topology.wanted_workers
        have = self.assigned_worker_count(topology.id)
        return have > wanted or (have < wanted and self.available_slot_count() > 0)

    # -- results -------------------------------------------------------------------------------

    def get_assignment(self, topology_id: str) -> SchedulerAssignment | None:
        return self._assignments.get(topology_id)

    def assignments(self) -> dict[str, SchedulerAssignment]:
        """topology id -> its assignment (topologies with no executor placed are absent)."""
        return dict(sorted(self._assignments.items()))

    def node_host(self, topology_id: str) -> dict[str, str]:
        """supervisor id -> host for every node ``topology_id`` has a worker on."""
        assignment = self._assignments.get(topology_id)
        nodes = assignment.nodes() if assignment is not None else []
        return {n: self._supervisors[n].host for n in nodes}

    def assignment_state(self, topology_id: str) -> dict[str, Any]:
        """``node_host``, ``executor_node_port`` and ``worker_resources`` for
        ``/assignments/<topology_id>`` (API.md section 9); empty maps when nothing is placed."""
        assignment = self._assignments.get(topology_id) or SchedulerAssignment(topology_id)
        return {"node_host": self.node_host(topology_id),
                "executor_node_port": assignment.executor_node_port(),
                "worker_resources": assignment.worker_resources_state()}

    def set_status(self, topology_id: str, status: str, reason: str = "") -> None:
        """Report a scheduling status, e.g. ``("pending", "needs 2 more cpu slots (have 6,
        need 8)")``. Nimbus writes it to ``/storms/<id>`` as ``status`` / ``status_reason``.
        A topology reported nothing whose executors are all assigned is not pending."""
        self._statuses[topology_id] = TopologyStatus(status, reason)

    def get_status(self, topology_id: str) -> TopologyStatus | None:
        return self._statuses.get(topology_id)

    def statuses(self) -> dict[str, TopologyStatus]:
        """Everything reported with :meth:`set_status` during this pass."""
        return dict(self._statuses)

    def __repr__(self) -> str:
        return (f"Cluster({len(self._supervisors)} supervisors, {len(self._slot_owner)} of "
                f"{sum(len(s.ports) for s in self._supervisors.values())} slots used)")
