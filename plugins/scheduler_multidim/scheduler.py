"""The ``multidim`` scheduler: JStorm-style packing over cpu, memory, net and disk slots.

One pass (``schedule``), on nimbus's scheduling thread:

1. Placements that became invalid are freed: a worker on a host its topology may not use
   (``topology.isolated.hosts``: an isolated topology runs only on those hosts and they are kept
   for the topologies naming them), and, on a supervisor whose workers need more than it has,
   workers are freed (highest topology id, then port, first) until the rest fit.
2. Topologies are visited oldest first. Placements that are still valid stay (fewest moves).
   A topology with homeless executors gets new workers up to ``num_workers`` in total; its
   homeless executors are dealt round-robin (task order) over those workers, so a component's
   executors spread over workers, and each worker goes to the roomiest supervisor that fits it,
   preferring nodes the topology does not use yet (spreading the component over nodes). When
   the topology already has all its workers, homeless executors join its least loaded worker
   whose supervisor has room; so do they when a running topology lost a supervisor and no
   supervisor has room for a new worker (it keeps running on fewer workers). A topology
   running on fewer workers than asked for takes as many new workers as fit once ports are
   free, after the topologies with homeless executors had their turn.
   After a rebalance (``TopologyDetails.rebalanced``) or with more workers than asked for, the
   surviving placement is reshaped with the fewest moves (:mod:`squall.scheduling.rebalance`):
   surplus workers (fewest executors first) are freed and their executors join the least
   loaded remaining workers with room; new workers take only their share of executors from
   the most loaded ones; a changed component's executors join the least loaded workers.
   When the workers kept have no room for what joins them, the topology is placed afresh
   on ``num_workers`` new workers (every executor may move) before a reshape is refused.
3. A topology is placed entirely or not at all: if something does not fit, nothing new is
   placed for it and it is reported ``pending`` with a reason naming the dimension and the
   shortfall, e.g. ``needs 3 more memory slots (have 5, need 8)``, or, when the whole would
   fit but one worker fits no single supervisor, that worker's shortfall on the roomiest one
   left after the topology's own workers placed before it (saying so when they took the
   room), or, for an isolated topology none of whose hosts has a live supervisor, says so.
   The next pass tries again, so it starts when a supervisor with room joins.

Deterministic: every choice is ordered by values and ids.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from squall.plugins.scheduler_multidim.pool import Pool
from squall.scheduling.cluster import Cluster, ExecutorDetails, Topologies, TopologyDetails
from squall.scheduling.model import WorkerSlot
from squall.scheduling.rebalance import spread, surplus_workers
from squall.scheduling.resources import DIMENSIONS, Resources
from squall.spi.scheduler import Scheduler

__all__ = ["MultiDimScheduler"]

log = logging.getLogger(__name__)


class _NoRoom(Exception):
    """Internal: the worker needing ``demand`` fits none of the supervisors ``where`` (with a
    free port if ``need_port``), which had ``left`` free per dimension at most at that point
    of the trial placement: after the topology's own workers placed before it, which the
    rollback that follows forgets (the pending reason compares the two)."""

    def __init__(self, demand: Resources, pool: Pool, where: Iterable[str],
                 need_port: bool) -> None:
        self.demand = demand
        self.where = tuple(sorted(set(where)))
        self.need_port = need_port
        self.left = pool.largest(self.where, need_port)


@dataclass
class _Change:
    """A planned reshape: workers to free, executors to take off the workers kept, then
    where executors go (new workers and joins), and how many executors move."""

    freed: list[WorkerSlot]
    taken: list[ExecutorDetails]
    plan: list[tuple[WorkerSlot, list[ExecutorDetails]]]
    moved: int


class MultiDimScheduler(Scheduler):
    """Resource-aware scheduler (entry point ``multidim``); see the module docstring."""

    name = "multidim"
    resource_aware = True

    def schedule(self, topologies: Topologies, cluster: Cluster) -> None:
        reserved = self._reserved_hosts(topologies)
        self._free_invalid(topologies, cluster, reserved)
        pool = Pool(cluster)
        open_view = pool.view(s.id for s in cluster.supervisors() if s.host not in reserved)
        short = []    # running on fewer workers than asked for, nothing else to do
        for topology in topologies:
            hosts = set(topology.isolated_hosts)
            view = open_view if not hosts else pool.view(
                s.id for s in cluster.supervisors() if s.host in hosts)
            if not self._needs_work(topology, cluster, pool, view):
                continue
            if (topology.rebalanced or cluster.unassigned_executors(topology)
                    or cluster.assigned_worker_count(topology.id) > topology.num_workers):
                self._schedule_topology(topology, cluster, pool, view)
            else:
                short.append((topology, view))
        # free room goes first to executors without a slot; what is left spreads out those
        for topology, view in short:
            if self._needs_work(topology, cluster, pool, view):
                self._schedule_topology(topology, cluster, pool, view)

    # -- step 1 --------------------------------------------------------------------------------

    @staticmethod
    def _reserved_hosts(topologies: Topologies) -> set[str]:
        return {h for t in topologies for h in t.isolated_hosts}

    @staticmethod
    def _free_invalid(topologies: Topologies, cluster: Cluster, reserved: set[str]) -> None:
        for topology in topologies:
            assignment = cluster.get_assignment(topology.id)
            if assignment is None:
                continue
            allowed = set(topology.isolated_hosts)
            for slot in assignment.slots():
                host = cluster.get_supervisor(slot.node_id).host  # type: ignore[union-attr]
                if (host not in allowed) if allowed else (host in reserved):
                    log.info("moving %s off %s (host isolation)", topology.id, slot)
                    cluster.free_slot(slot)
        movable = set(topologies.ids())
        # an over-committed supervisor frees the newest topologies' slots first: what ran
        # before keeps running
        launched = {t.id: t.launch_time for t in topologies}
        for sup in cluster.supervisors():
            if cluster.used_resources(sup.id).fits_in(sup.resources):
                continue
            slots = sorted((s for s in cluster.used_slots()
                            if s.node_id == sup.id and cluster.slot_owner(s) in movable),
                           key=lambda s: (launched.get(cluster.slot_owner(s) or "", 0.0),
                                          cluster.slot_owner(s) or "", s.port), reverse=True)
            for slot in slots:
                if cluster.used_resources(sup.id).fits_in(sup.resources):
                    break
                log.info("freeing %s on over-committed supervisor %s", slot, sup.id)
                cluster.free_slot(slot)

    # -- step 2 --------------------------------------------------------------------------------

    @staticmethod
    def _needs_work(topology: TopologyDetails, cluster: Cluster, pool: Pool,
                    view: tuple[str, ...]) -> bool:
        if cluster.unassigned_executors(topology):
            return True
        have = cluster.assigned_worker_count(topology.id)
        wanted = topology.wanted_workers
        return have > wanted or (have < wanted and (
            topology.rebalanced or pool.totals(view, need_port=True)[1] > 0))

    def _schedule_topology(self, topology: TopologyDetails, cluster: Cluster, pool: Pool,
                           view: tuple[str, ...]) -> None:
        homeless = cluster.unassigned_executors(topology)
        assignment = cluster.get_assignment(topology.id)
        existing = assignment.slots() if assignment is not None else []
        wanted = topology.wanted_workers
        if existing and (topology.rebalanced or len(existing) > wanted):
            self._reshape(topology, cluster, pool, view, wanted)
            return
        if existing and not homeless:
            self._regrow(topology, cluster, pool, view, wanted)
            return
        new_workers = min(max(0, wanted - len(existing)), len(homeless))
        pool.checkpoint()
        try:
            if new_workers:
                plan = self._plan_new(topology, homeless, new_workers, existing, pool, view)
            else:
                plan = self._plan_join(topology, homeless, cluster, pool)
        except _NoRoom as exc:
            pool.rollback()
            reason = self._reason(topology, homeless, new_workers, exc, existing, pool, view,
                                  cluster)
            if new_workers and existing:
                # no room for new workers (a supervisor went away and nothing is free): the
                # running workers take the homeless executors if they have room, and the
                # topology spreads out again once slots free up (_regrow)
                pool.checkpoint()
                try:
                    plan = self._plan_join(topology, homeless, cluster, pool)
                except _NoRoom:
                    pool.rollback()
                else:
                    pool.commit()
                    log.info("topology %s: %d executors joined its %d running workers (%s)",
                             topology.id, len(homeless), len(existing), reason)
                    for slot, executors in plan:
                        cluster.assign(slot, topology.id, executors)
                    return
            cluster.set_status(topology.id, "pending", reason)
            log.debug("topology %s pending: %s", topology.id, reason)
            return
        pool.commit()
        for slot, executors in plan:
            cluster.assign(slot, topology.id, executors)

    def _reshape(self, topology: TopologyDetails, cluster: Cluster, pool: Pool,
                 view: tuple[str, ...], wanted: int) -> None:
        """After a rebalance, or with more workers than asked for: keep the surviving
        placement and move as few executors as fit (:mod:`squall.scheduling.rebalance`);
        when the workers kept have no room for the executors of those freed, place the
        whole topology afresh. All or nothing: if nothing fits, the placement stays as it
        is and the topology is reported ``pending``."""
        assignment = cluster.get_assignment(topology.id)
        new_workers = (max(0, wanted - len(assignment.slots()))  # type: ignore[union-attr]
                       if topology.rebalanced else 0)
        pool.checkpoint()
        change: _Change | None
        try:
            change = self._plan_reshape(topology, cluster, pool, view, wanted, new_workers)
        except _NoRoom as exc:
            pool.rollback()
            change = self._afresh(topology, cluster, pool, view, wanted)
            if change is None:
                self._refuse(topology, cluster, pool, view, wanted, new_workers, exc)
                return
        pool.commit()
        self._apply(topology, cluster, change)
        log.info("topology %s reshaped to %d workers: %d executors moved", topology.id,
                 wanted, change.moved)

    def _regrow(self, topology: TopologyDetails, cluster: Cluster, pool: Pool,
                view: tuple[str, ...], wanted: int) -> None:
        """A topology running on fewer workers than asked for (it had no room for more)
        while ports are free: as many new workers as fit take their share of executors, as
        after a rebalance. Nothing changes, and no status, when none fits."""
        have = cluster.assigned_worker_count(topology.id)
        ports = pool.totals(view, need_port=True)[1]
        for new_workers in range(min(wanted - have, ports), 0, -1):
            pool.checkpoint()
            try:
                change = self._plan_reshape(topology, cluster, pool, view, wanted, new_workers)
            except _NoRoom:
                pool.rollback()
                continue
            pool.commit()
            self._apply(topology, cluster, change)
            log.info("topology %s grew from %d to %d of its %d workers: %d executors moved",
                     topology.id, have, have + new_workers, wanted, change.moved)
            return

    def _plan_reshape(self, topology: TopologyDetails, cluster: Cluster, pool: Pool,
                      view: tuple[str, ...], wanted: int, new_workers: int) -> _Change:
        """Plan keeping the surviving placement: surplus workers over ``wanted`` are freed
        and their executors (and any homeless ones) join the rest; ``new_workers`` more take
        their share. Takes from ``pool``; raises _NoRoom."""
        assignment = cluster.get_assignment(topology.id)
        placed = {s: assignment.executors_on(s) for s in assignment.slots()}  # type: ignore[union-attr]
        homeless = cluster.unassigned_executors(topology)
        freed = surplus_workers(placed, wanted)
        for slot in freed:
            pool.release(slot.node_id, assignment.worker_resources[slot], slot.port)  # type: ignore[union-attr]
            homeless.extend(placed.pop(slot))
        moved = len(homeless) - len(cluster.unassigned_executors(topology))
        homeless.sort()
        taken: list[ExecutorDetails] = []
        if new_workers > 0:
            taken, hands, added = spread(placed, homeless, new_workers, topology.executors)
            for e in taken:
                pool.release(assignment.slot_of(e).node_id,  # type: ignore[union-attr]
                             topology.resources_for(e), None)
            plan = self._plan_hands(topology, hands, list(placed), pool, view)
            plan += self._plan_add(topology, added, pool)
        else:
            loads = {s: len(es) for s, es in placed.items()}
            plan = self._plan_join_loads(topology, homeless, loads, pool)
        return _Change(freed, taken, plan, moved + len(taken))

    def _afresh(self, topology: TopologyDetails, cluster: Cluster, pool: Pool,
                view: tuple[str, ...], wanted: int) -> _Change | None:
        """Plan the whole topology anew on ``wanted`` workers (every worker freed first),
        or None (nothing taken from ``pool``) when that does not fit either."""
        assignment = cluster.get_assignment(topology.id)
        pool.checkpoint()
        slots = assignment.slots()  # type: ignore[union-attr]
        for slot in slots:
            pool.release(slot.node_id, assignment.worker_resources[slot], slot.port)  # type: ignore[union-attr]
        executors = sorted(topology.executors)
        try:
            plan = self._plan_new(topology, executors, min(wanted, len(executors)), [], pool,
                                  view)
        except _NoRoom:
            pool.rollback()
            return None
        before = {e: assignment.slot_of(e) for e in executors if assignment.is_assigned(e)}  # type: ignore[union-attr]
        moved = sum(1 for slot, es in plan for e in es if before.get(e) != slot)
        return _Change(list(slots), [], plan, moved)

    @staticmethod
    def _apply(topology: TopologyDetails, cluster: Cluster, change: _Change) -> None:
        for slot in change.freed:
            cluster.free_slot(slot)
        cluster.unassign(topology.id, change.taken)
        for slot, executors in change.plan:
            cluster.assign(slot, topology.id, executors)

    def _refuse(self, topology: TopologyDetails, cluster: Cluster, pool: Pool,
                view: tuple[str, ...], wanted: int, new_workers: int, exc: _NoRoom) -> None:
        """Report why a reshape to ``wanted`` workers fits nowhere (the placement stays)."""
        assignment = cluster.get_assignment(topology.id)
        ports = pool.totals(view, need_port=True)[1]
        if new_workers > ports and view:   # the new workers have no port: resources are moot
            reason = (f"needs {new_workers - ports} more worker slots (have {ports}, "
                      f"need {new_workers})") + self._isolation_note(topology, cluster, view)
        else:
            reason = self._reason(topology, sorted(topology.executors), 0, exc,
                                  assignment.slots(), pool, view, cluster)  # type: ignore[union-attr]
        cluster.set_status(topology.id, "pending", reason)
        log.debug("topology %s cannot be reshaped to %d workers: %s", topology.id,
                  wanted, reason)

    def _plan_hands(self, topology: TopologyDetails, hands: list[list[ExecutorDetails]],
                    existing: list[WorkerSlot], pool: Pool, view: tuple[str, ...],
                    ) -> list[tuple[WorkerSlot, list[ExecutorDetails]]]:
        """A new worker for each non-empty hand, the largest first, each on the roomiest
        supervisor that fits it (nodes the topology does not use yet preferred)."""
        hands = [h for h in hands if h]
        demands = [self._demand(topology, hand) for hand in hands]
        order = sorted(range(len(hands)), key=lambda i: (_size(demands[i]), -i), reverse=True)
        used_nodes = {slot.node_id for slot in existing}
        plan = []
        for i in order:
            sid = pool.find(view, demands[i], used_nodes)
            if sid is None:
                raise _NoRoom(demands[i], pool, view, need_port=True)
            port = pool.take(sid, demands[i], new_worker=True)
            used_nodes.add(sid)
            plan.append((WorkerSlot(sid, port), hands[i]))  # type: ignore[arg-type]
        return plan

    def _plan_add(self, topology: TopologyDetails,
                  added: dict[WorkerSlot, list[ExecutorDetails]], pool: Pool,
                  ) -> list[tuple[WorkerSlot, list[ExecutorDetails]]]:
        """Executors joining existing workers (below their share) whose supervisors have room."""
        for slot, executors in added.items():
            need = self._demand(topology, executors)
            if not pool.fits(slot.node_id, need):
                raise _NoRoom(need, pool, [slot.node_id], need_port=False)
            pool.take(slot.node_id, need, new_worker=False)
        return sorted(added.items())

    def _plan_new(self, topology: TopologyDetails, homeless: list[ExecutorDetails], n: int,
                  existing: list[WorkerSlot], pool: Pool, view: tuple[str, ...],
                  ) -> list[tuple[WorkerSlot, list[ExecutorDetails]]]:
        """``n`` new workers (``n`` at most the homeless executors: none is empty), the
        homeless executors dealt round-robin over them, placed as :meth:`_plan_hands`."""
        hands: list[list[ExecutorDetails]] = [[] for _ in range(n)]
        for i, e in enumerate(homeless):
            hands[i % n].append(e)
        return self._plan_hands(topology, hands, existing, pool, view)

    def _plan_join(self, topology: TopologyDetails, homeless: list[ExecutorDetails],
                   cluster: Cluster, pool: Pool) -> list[tuple[WorkerSlot, list[ExecutorDetails]]]:
        assignment = cluster.get_assignment(topology.id)
        load = {slot: len(assignment.executors_on(slot)) for slot in assignment.slots()}  # type: ignore[union-attr]
        return self._plan_join_loads(topology, homeless, load, pool)

    @staticmethod
    def _plan_join_loads(topology: TopologyDetails, homeless: list[ExecutorDetails],
                         loads: dict[WorkerSlot, int], pool: Pool,
                         ) -> list[tuple[WorkerSlot, list[ExecutorDetails]]]:
        """Each homeless executor to the least loaded worker whose supervisor has room."""
        load = dict(loads)
        added: dict[WorkerSlot, list[ExecutorDetails]] = {}
        for e in homeless:
            need = topology.resources_for(e)
            room = [s for s in load if pool.fits(s.node_id, need)]
            if not room:
                raise _NoRoom(need, pool, (s.node_id for s in load), need_port=False)
            slot = min(room, key=lambda s: (load[s], s))
            pool.take(slot.node_id, need, new_worker=False)
            load[slot] += 1
            added.setdefault(slot, []).append(e)
        return sorted(added.items())

    @staticmethod
    def _demand(topology: TopologyDetails, executors: list[ExecutorDetails]) -> Resources:
        total = Resources()
        for e in executors:
            total = total + topology.resources_for(e)
        return total

    # -- step 3 --------------------------------------------------------------------------------

    def _reason(self, topology: TopologyDetails, homeless: list[ExecutorDetails],
                new_workers: int, exc: _NoRoom, existing: list[WorkerSlot], pool: Pool,
                view: tuple[str, ...], cluster: Cluster) -> str:
        """Why the topology stays pending, measured on ``pool`` as it was before the failed
        trial placement (rolled back): the shortfall of the whole, else of the one worker
        that did not fit, measured where it was tried once the topology's own workers placed
        before it had taken their room (saying so when that is what blocked it)."""
        if topology.isolated_hosts and not view:
            return ("no live supervisor runs on its isolated hosts "
                    f"{', '.join(topology.isolated_hosts)} (topology.isolated.hosts is matched "
                    "against each supervisor's storm.local.hostname)")
        where = view if new_workers else tuple(sorted({s.node_id for s in existing}))
        have, ports = pool.totals(where, need_port=bool(new_workers))
        need = self._demand(topology, homeless)
        parts = []
        if new_workers > ports:     # first: without a port, a supervisor's room is moot
            parts.append(f"needs {new_workers - ports} more worker slots "
                         f"(have {ports}, need {new_workers})")
        if ports or not new_workers:
            parts += [f"needs {missing} more {dim} slots (have {getattr(have, dim)}, "
                      f"need {getattr(need, dim)})"
                      for dim, missing in need.shortfall(have).items()]
        if not parts:
            failed, left = exc.demand, exc.left
            parts = [f"needs {missing} more {dim} slots on one supervisor for a worker "
                     f"(have {getattr(left, dim)}, need {getattr(failed, dim)})"
                     for dim, missing in failed.shortfall(left).items()]
            if not parts:
                parts.append(f"no single supervisor has room for a worker needing {failed} "
                             f"(most free per dimension: {left})")
            before = pool.largest(exc.where, exc.need_port)
            if before.shortfall(left):
                # the room was there, but the topology's own workers placed first took it
                parts[-1] += (" once its other workers are placed (before them, most free "
                              f"per dimension: {before})")
        return "; ".join(parts) + self._isolation_note(topology, cluster, view)

    @staticmethod
    def _isolation_note(topology: TopologyDetails, cluster: Cluster,
                        view: tuple[str, ...]) -> str:
        """For an isolated topology, `` on isolated hosts a, b`` and which of them have no
        live supervisor; empty for a topology that may run anywhere."""
        if not topology.isolated_hosts:
            return ""
        note = " on isolated hosts " + ", ".join(topology.isolated_hosts)
        live = {cluster.get_supervisor(sid).host for sid in view}  # type: ignore[union-attr]
        dead = [h for h in topology.isolated_hosts if h not in live]
        if dead:
            note += f" (no live supervisor on {', '.join(dead)})"
        return note


def _size(r: Resources) -> tuple[int, ...]:
    return tuple(getattr(r, dim) for dim in DIMENSIONS)
