"""The scheduler contract: what every ``squall.schedulers`` implementation must do.

Use it from pytest by subclassing (the subclass name must start with ``Test``)::

    from squall.testing.contracts.scheduler import SchedulerContract

    class TestMyScheduler(SchedulerContract):
        resource_aware = False            # True: capacity per dimension is checked too
        def scheduler_factory(self, conf):
            return MyScheduler(conf)

The checks are plain functions too (:func:`check_placement`), and :func:`make_supervisors` /
:func:`make_topology` build inputs. Nothing here needs pytest, threads or I/O.
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from squall.scheduling.cluster import (
    Cluster,
    SchedulerAssignment,
    SupervisorDetails,
    Topologies,
    TopologyDetails,
    split_tasks,
)
from squall.scheduling.resources import Resources
from squall.spi.scheduler import Scheduler

__all__ = ["SchedulerContract", "check_placement", "make_supervisors", "make_topology", "moves",
           "placements", "rebalanced"]

ROOMY = Resources(cpu=16, memory=32, net=16, disk=4)
REASON = re.compile(r"needs \d+ more \w+ slots")


def make_supervisors(n: int, ports: int = 4, resources: Resources = ROOMY, start: int = 0,
                     prefix: str = "sup") -> list[SupervisorDetails]:
    """``n`` supervisors ``sup000..`` on hosts ``host000..`` with ports 6700.. each."""
    return [SupervisorDetails(f"{prefix}{i:03d}", f"host{i:03d}", range(6700, 6700 + ports),
                              resources) for i in range(start, start + n)]


def make_topology(tid: str, components: Mapping[str, int], num_workers: int,
                  resources: Mapping[str, Resources] | None = None, launch_time: float = 0.0,
                  conf: Mapping[str, Any] | None = None) -> TopologyDetails:
    """A topology whose components (sorted by id) get consecutive tasks from 1, one task per
    executor; ``components`` maps component id -> executor count."""
    executors, task = {}, 1
    for comp in sorted(components):
        for e in split_tasks(task, components[comp], components[comp]):
            executors[e] = comp
        task += components[comp]
    return TopologyDetails(tid, tid.split("-")[0], dict(conf or {}), num_workers, executors,
                           dict(resources or {}), launch_time)


def placements(cluster: Cluster) -> dict[str, dict[str, tuple[str, int]]]:
    """topology id -> {"[s, e]": (node, port)}: a comparable snapshot of the assignments."""
    return {tid: {str(e): tuple(s) for e, s in a.executor_to_slot.items()}  # type: ignore[misc]
            for tid, a in cluster.assignments().items()}


def check_placement(topologies: Topologies, cluster: Cluster, resource_aware: bool) -> None:
    """Assert the cluster's assignments are sound: executors belong to their topology and sit
    on existing slots, no slot has two topologies, and (``resource_aware``) no supervisor's
    advertised resources are exceeded. Raises AssertionError naming what is wrong."""
    owner: dict[tuple[str, int], str] = {}
    supervisors = {s.id: s for s in cluster.supervisors()}
    for tid, assignment in cluster.assignments().items():
        topology = topologies.get(tid)
        for e, slot in assignment.executor_to_slot.items():
            assert topology is None or e in topology.executors, f"{tid}: unknown executor {e}"
            sup = supervisors.get(slot.node_id)
            assert sup is not None and slot.port in sup.ports, f"{tid}: {e} on no slot {slot}"
            other = owner.setdefault(tuple(slot), tid)  # type: ignore[arg-type]
            assert other == tid, f"slot {slot} used by {other} and {tid}"
    if resource_aware:
        for sid, sup in supervisors.items():
            used = Resources()
            for tid, assignment in cluster.assignments().items():
                topology = topologies.get(tid)
                for e, slot in assignment.executor_to_slot.items():
                    if slot.node_id == sid and topology is not None:
                        used = used + topology.resources_for(e)
            assert used.fits_in(sup.resources), f"{sid} over capacity: uses {used} of {sup.resources}"


def rebalanced(topology: TopologyDetails, num_workers: int | None = None,
               components: Mapping[str, int] | None = None) -> TopologyDetails:
    """``topology`` as nimbus hands it over after ``squall rebalance``: marked ``rebalanced``,
    with ``num_workers`` and (for :func:`make_topology` topologies, one task per executor
    before) ``components`` (component id -> new executor count, tasks unchanged) applied."""
    executors = dict(topology.executors)
    for comp, count in (components or {}).items():
        mine = sorted(e for e, c in executors.items() if c == comp)
        for e in mine:
            del executors[e]
        for e in split_tasks(mine[0].start_task, mine[-1].end_task - mine[0].start_task + 1,
                             count):
            executors[e] = comp
    return replace(topology, num_workers=topology.num_workers if num_workers is None
                   else num_workers, executors=executors, rebalanced=True)


def moves(before: Cluster, after: Cluster, topology_id: str) -> int:
    """How many executors present in both placements changed slot."""
    old, new = placements(before).get(topology_id, {}), placements(after).get(topology_id, {})
    return sum(1 for e, slot in old.items() if e in new and new[e] != slot)


def _fully_placed(cluster: Cluster, topology: TopologyDetails) -> bool:
    assignment = cluster.get_assignment(topology.id)
    return assignment is not None and sorted(assignment.executors()) == sorted(topology.executors)


class SchedulerContract:
    """Base class of the scheduler contract tests; override :meth:`scheduler_factory`."""

    #: Check per-dimension capacity and expect ``pending`` (not a partial placement) when a
    #: topology asks for more workers than there are slots.
    resource_aware: bool = False
    #: Promise that after a rebalance the worker count becomes ``num_workers`` with the fewest
    #: moves (``even`` and ``multidim`` do). Without it a scheduler only has to keep every
    #: executor placed once and leave unchanged executors where they are.
    reshapes_on_rebalance: bool = False

    def scheduler_factory(self, conf: Mapping[str, Any]) -> Scheduler:
        raise NotImplementedError("override scheduler_factory(conf) to return your scheduler")

    def run(self, supervisors: list[SupervisorDetails], topologies: list[TopologyDetails],
            existing: Mapping[str, SchedulerAssignment] | None = None) -> Cluster:
        """One scheduling pass on a fresh cluster; checks soundness and returns the cluster."""
        tops = Topologies(topologies)
        cluster = Cluster(supervisors, existing, tops)
        self.scheduler_factory({}).schedule(tops, cluster)
        check_placement(tops, cluster, self.resource_aware)
        return cluster

    def _mixed(self) -> list[TopologyDetails]:
        return [make_topology("alpha-1", {"spout": 2, "split": 4, "count": 6}, 3, launch_time=1),
                make_topology("beta-2", {"src": 3, "sink": 5}, 2, launch_time=2),
                make_topology("gamma-3", {"one": 1}, 4, launch_time=3)]

    def test_every_executor_placed_exactly_once(self) -> None:
        tops = self._mixed()
        cluster = self.run(make_supervisors(6), tops)
        for t in tops:
            assert _fully_placed(cluster, t), f"{t.id} not fully placed"
            assert cluster.get_status(t.id) is None or cluster.get_status(t.id).status != "pending"

    def test_deterministic_for_the_same_input(self) -> None:
        first = placements(self.run(make_supervisors(7), self._mixed()))
        second = placements(self.run(make_supervisors(7), self._mixed()))
        assert first == second

    def test_rescheduling_unchanged_cluster_moves_nothing(self) -> None:
        cluster = self.run(make_supervisors(5), self._mixed())
        again = self.run(make_supervisors(5), self._mixed(), cluster.assignments())
        assert placements(again) == placements(cluster)

    def test_other_topologies_keep_their_slots(self) -> None:
        foreign = SchedulerAssignment.from_executor_node_port(
            "foreign-9", {"[1, 1]": ["sup000", 6700], "[2, 2]": ["sup001", 6700]})
        cluster = self.run(make_supervisors(3, ports=2), self._mixed()[:2], {"foreign-9": foreign})
        assert placements(cluster)["foreign-9"] == {"[1, 1]": ("sup000", 6700),
                                                    "[2, 2]": ("sup001", 6700)}

    def test_supervisor_joining_schedules_the_pending_topology(self) -> None:
        first = make_topology("first-1", {"a": 2, "b": 2}, 2, launch_time=1)
        later = make_topology("later-2", {"c": 2}, 2, launch_time=2)
        small = self.run(make_supervisors(1, ports=2), [first, later])
        assert _fully_placed(small, first), (
            f"{first.id} (2 workers) must get both free slots: {placements(small)}")
        assert small.get_assignment(later.id) is None, (
            f"{later.id} wants min(workers, executors) = 2 slots and no slot is free: it must "
            f"stay unassigned (pending), not be placed partly: {placements(small)}")
        status = small.get_status(later.id)
        assert status is not None and status.status == "pending" and status.reason, (
            f"{later.id} must have status 'pending' with a reason, got {status}")
        grown = self.run(make_supervisors(2, ports=2), [first, later], small.assignments())
        assert _fully_placed(grown, later), (
            f"{later.id} must be placed once a supervisor joins: {placements(grown)}")
        assert placements(grown)[first.id] == placements(small)[first.id]

    def test_supervisor_leaving_moves_only_its_executors(self) -> None:
        top = make_topology("wc-1", {"spout": 4, "split": 4, "count": 4}, 4)
        before = self.run(make_supervisors(4), [top])
        lost = before.get_assignment(top.id).slots()[0].node_id  # type: ignore[union-attr]
        survivors = [s for s in make_supervisors(4) if s.id != lost]
        after = self.run(survivors, [top], before.assignments())
        assert _fully_placed(after, top)
        old, new = placements(before)[top.id], placements(after)[top.id]
        for e, (node, port) in old.items():
            if node == lost:
                assert new[e][0] != lost
            else:
                assert new[e] == (node, port), f"{e} moved from {node}:{port} to {new[e]}"

    def test_more_workers_than_slots(self) -> None:
        top = make_topology("big-1", {"a": 6, "b": 6}, 6)
        cluster = self.run(make_supervisors(2, ports=2), [top])
        if self.resource_aware:
            status = cluster.get_status(top.id)
            assert status is not None and status.status == "pending"
            assert REASON.search(status.reason), status.reason
            assert cluster.get_assignment(top.id) is None
        else:
            assert _fully_placed(cluster, top)
            assert len(cluster.get_assignment(top.id).slots()) == 4  # type: ignore[union-attr]

    def test_capacity_shortfall_is_reported_or_ignored(self) -> None:
        tight = Resources(cpu=2, memory=2, net=2, disk=0)
        top = make_topology("fat-1", {"a": 4}, 2, resources={"a": Resources(1, 3, 1, 0)})
        cluster = self.run(make_supervisors(2, ports=4, resources=tight), [top])
        if self.resource_aware:
            status = cluster.get_status(top.id)
            assert status is not None and status.status == "pending"
            assert "memory" in status.reason and REASON.search(status.reason), status.reason
            assert cluster.get_assignment(top.id) is None
        else:
            assert _fully_placed(cluster, top)

    # -- rebalance: the surviving placement is handed over, the topology marked rebalanced ----

    def _placed_wc(self, workers: int) -> tuple[TopologyDetails, Cluster]:
        top = make_topology("wc-1", {"spout": 2, "split": 4, "count": 4}, workers)
        return top, self.run(make_supervisors(4), [top])

    def test_rebalance_of_one_component_moves_no_other_executor(self) -> None:
        top, before = self._placed_wc(2)
        changed = rebalanced(top, components={"split": 2})
        after = self.run(make_supervisors(4), [changed], before.assignments())
        assert _fully_placed(after, changed)
        old, new = placements(before)[top.id], placements(after)[top.id]
        kept = [e for e in old if e in new]
        assert len(kept) == 6          # spout and count did not change
        assert all(new[e] == old[e] for e in kept), "an unchanged executor moved"

    def test_rebalance_to_more_or_fewer_workers_keeps_every_executor_placed(self) -> None:
        top, before = self._placed_wc(2)
        for n in (3, 1, 4):
            wanted = rebalanced(top, n)
            after = self.run(make_supervisors(4), [wanted], before.assignments())
            again = self.run(make_supervisors(4), [wanted], before.assignments())
            assert _fully_placed(after, wanted), f"not fully placed after a rebalance to {n}"
            assert placements(after) == placements(again), "not deterministic"

    def test_rebalance_grows_moving_only_the_new_workers_share(self) -> None:
        if not self.reshapes_on_rebalance:
            return
        top, before = self._placed_wc(2)
        for n in (3, 4):
            after = self.run(make_supervisors(4), [rebalanced(top, n)], before.assignments())
            assert after.assigned_worker_count(top.id) == n
            share = math.ceil(len(top.executors) / n)
            assert moves(before, after, top.id) <= (n - 2) * share, f"too many moves for {n}"

    def test_rebalance_shrinks_moving_only_the_freed_workers_executors(self) -> None:
        if not self.reshapes_on_rebalance:
            return
        top, before = self._placed_wc(4)           # 10 executors on 4 workers: 3, 3, 2, 2
        for n in (3, 2, 1):
            after = self.run(make_supervisors(4), [rebalanced(top, n)], before.assignments())
            assert after.assigned_worker_count(top.id) == n
            assignment = before.get_assignment(top.id)
            sizes = sorted(len(assignment.executors_on(s)) for s in assignment.slots())  # type: ignore[union-attr]
            assert moves(before, after, top.id) == sum(sizes[:4 - n]), f"moves for {n}"
            kept = {s for s in after.get_assignment(top.id).slots()}  # type: ignore[union-attr]
            assert kept <= set(assignment.slots()), "a new worker was started"  # type: ignore[union-attr]
