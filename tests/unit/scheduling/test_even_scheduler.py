"""The even scheduler: Storm's slot-only round-robin placement."""
from __future__ import annotations

import logging
from collections import Counter

import pytest

from squall.scheduling.cluster import Cluster, Resources, Topologies, WorkerSlot
from squall.scheduling.even import EvenScheduler, first_free_slots, sort_slots
from squall.testing.contracts.scheduler import make_supervisors, make_topology, placements


def run(supervisors, topologies, existing=None) -> Cluster:  # type: ignore[no-untyped-def]
    tops = Topologies(topologies)
    cluster = Cluster(supervisors, existing, tops)
    EvenScheduler({}).schedule(tops, cluster)
    return cluster


def test_slots_interleave_across_nodes_most_free_first() -> None:
    slots = [WorkerSlot("a", 1), WorkerSlot("b", 2), WorkerSlot("b", 1), WorkerSlot("c", 5),
             WorkerSlot("c", 6), WorkerSlot("c", 7)]
    assert sort_slots(slots) == [WorkerSlot("c", 5), WorkerSlot("b", 1), WorkerSlot("a", 1),
                                 WorkerSlot("c", 6), WorkerSlot("b", 2), WorkerSlot("c", 7)]


def test_first_free_slots_matches_the_full_interleaving() -> None:
    sups = make_supervisors(3, ports=3) + make_supervisors(2, ports=1, start=3)
    cluster = Cluster(sups, None, Topologies([make_topology("t-1", {"a": 3}, 1)]))
    cluster.assign(WorkerSlot("sup001", 6700), "t-1", [])
    full = sort_slots(cluster.available_slots())
    for k in range(len(full) + 2):
        assert first_free_slots(cluster, k) == full[:k]


def test_workers_spread_over_supervisors_and_executors_even() -> None:
    top = make_topology("wc-1", {"spout": 3, "split": 6, "count": 6}, 3)
    cluster = run(make_supervisors(3), [top])
    assignment = cluster.get_assignment(top.id)
    assert assignment is not None
    assert assignment.nodes() == ["sup000", "sup001", "sup002"]
    per_slot = Counter(assignment.executor_to_slot.values())
    assert sorted(per_slot.values()) == [5, 5, 5]
    for comp, executors in top.component_executors().items():
        assert len({assignment.slot_of(e) for e in executors}) == 3, comp


def test_fewer_slots_than_workers_uses_what_is_free() -> None:
    top = make_topology("big-1", {"a": 10}, 8)
    cluster = run(make_supervisors(1, ports=3), [top])
    assert len(cluster.get_assignment(top.id).slots()) == 3  # type: ignore[union-attr]
    assert cluster.unassigned_executors(top) == []
    assert cluster.get_status(top.id) is None


def test_no_free_slot_means_pending() -> None:
    first = make_topology("a-1", {"a": 2}, 2, launch_time=1)
    second = make_topology("b-2", {"b": 2}, 3, launch_time=2)
    cluster = run(make_supervisors(1, ports=2), [second, first])
    assert cluster.get_assignment("b-2") is None
    assert cluster.get_status("b-2") == ("pending", "needs 2 more worker slots (have 0 free, need 2)")


def test_homeless_executors_join_existing_workers_when_workers_are_complete() -> None:
    small = make_topology("t-1", {"a": 4}, 2)
    cluster = run(make_supervisors(2), [small])
    grown = make_topology("t-1", {"a": 7}, 2)           # a rebalance added executors
    again = run(make_supervisors(2), [grown], cluster.assignments())
    before, after = placements(cluster)["t-1"], placements(again)["t-1"]
    assert all(after[e] == slot for e, slot in before.items())
    assert len(set(after.values())) == 2
    assert sorted(Counter(after.values()).values()) == [3, 4]


def test_resources_are_ignored() -> None:
    tiny = [s for s in make_supervisors(1, resources=Resources(0, 0, 0, 0))]
    top = make_topology("t-1", {"a": 4}, 2, resources={"a": Resources(9, 9, 9, 9)})
    assert run(tiny, [top]).unassigned_executors(top) == []


def test_same_input_same_output_regardless_of_input_order() -> None:
    tops = [make_topology(f"t{i}-{i}", {"a": 5, "b": 7}, 3, launch_time=i) for i in range(5)]
    sups = make_supervisors(6)
    assert placements(run(sups, tops)) == placements(run(list(reversed(sups)), tops[::-1]))


def test_isolated_hosts_are_ignored_with_one_warning_per_topology(
        caplog: pytest.LogCaptureFixture) -> None:
    iso = make_topology("iso-1", {"a": 4}, 2, conf={"topology.isolated.hosts": ["host001"]})
    plain = make_topology("plain-2", {"a": 2}, 1)
    scheduler = EvenScheduler({})
    sups = make_supervisors(3)
    cluster = None
    with caplog.at_level(logging.WARNING, logger="squall.scheduling.even"):
        for _ in range(3):                              # three scheduling passes
            tops = Topologies([iso, plain])
            existing = cluster.assignments() if cluster is not None else None
            cluster = Cluster(sups, existing, tops)
            scheduler.schedule(tops, cluster)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == ["topology iso-1 sets topology.isolated.hosts (host001) but the even "
                        "scheduler ignores it: host isolation needs squall.scheduler: multidim"]
    assert cluster is not None and len(cluster.get_assignment("iso-1").nodes()) == 2  # type: ignore[union-attr]
