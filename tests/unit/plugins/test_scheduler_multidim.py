"""The multidim scheduler: packing over cpu/memory/net/disk, reasons, isolation, stability."""
from __future__ import annotations

from collections import Counter

from squall.plugins.scheduler_multidim import MultiDimScheduler
from squall.scheduling.cluster import Cluster, Resources, SupervisorDetails, Topologies
from squall.testing.contracts.scheduler import (
    check_placement,
    make_supervisors,
    make_topology,
    placements,
)

R = Resources


def run(supervisors, topologies, existing=None) -> Cluster:  # type: ignore[no-untyped-def]
    tops = Topologies(topologies)
    cluster = Cluster(supervisors, existing, tops)
    MultiDimScheduler({}).schedule(tops, cluster)
    check_placement(tops, cluster, resource_aware=True)
    return cluster


def sup(sid: str, res: Resources, ports: int = 4, host: str | None = None) -> SupervisorDetails:
    return SupervisorDetails(sid, host or f"h-{sid}", range(6700, 6700 + ports), res)


def reason(cluster: Cluster, tid: str) -> str:
    status = cluster.get_status(tid)
    assert status is not None and status.status == "pending", status
    return status.reason


def test_workers_go_where_every_dimension_fits() -> None:
    sups = [sup("cpu-rich", R(8, 1, 8, 0)), sup("mem-rich", R(1, 8, 8, 0)),
            sup("balanced", R(4, 4, 4, 0))]
    top = make_topology("t-1", {"a": 2}, 2, resources={"a": R(2, 2, 1, 0)})
    cluster = run(sups, [top])
    assert cluster.get_assignment(top.id).nodes() == ["balanced"]  # type: ignore[union-attr]
    assert cluster.available_resources("balanced") == R(0, 0, 2, 0)


def test_memory_is_counted_in_whole_1024_mib_slots() -> None:
    need = R.from_request(cpu=1, memory_mb=1500, net=0)
    top = make_topology("t-1", {"a": 2}, 1, resources={"a": need})
    cluster = run([sup("s", R(8, 3, 8, 0))], [top])
    assert reason(cluster, top.id) == "needs 1 more memory slots (have 3, need 4)"


def test_shortfall_names_each_short_dimension() -> None:
    tight = R(cpu=2, memory=2, net=2, disk=0)
    top = make_topology("fat-1", {"a": 4}, 2, resources={"a": R(1, 3, 1, 0)})
    cluster = run([sup("s0", tight), sup("s1", tight)], [top])
    assert reason(cluster, top.id) == "needs 8 more memory slots (have 4, need 12)"
    assert cluster.get_assignment(top.id) is None
    top = make_topology("fat-2", {"a": 4}, 2, resources={"a": R(2, 3, 1, 1)})
    cluster = run([sup("s0", tight), sup("s1", tight)], [top])
    assert reason(cluster, top.id) == ("needs 4 more cpu slots (have 4, need 8); needs 8 more "
                                       "memory slots (have 4, need 12); needs 4 more disk slots "
                                       "(have 0, need 4)")


def test_shortfall_of_worker_slots_and_of_a_single_supervisor() -> None:
    cluster = run([sup("s0", R(8, 8, 8, 0), ports=1)], [make_topology("t-1", {"a": 4}, 2)])
    assert reason(cluster, "t-1") == "needs 1 more worker slots (have 1, need 2)"
    cluster = run([sup("s0", R(3, 8, 8, 0)), sup("s1", R(3, 8, 8, 0))],
                  [make_topology("t-1", {"a": 4}, 1)])
    assert reason(cluster, "t-1") == \
        "needs 1 more cpu slots on one supervisor for a worker (have 3, need 4)"


def test_a_worker_blocked_by_its_own_topologys_other_worker_is_reported_as_such() -> None:
    # cpu=7 fits the cpu=8 supervisor, but the cpu=8 worker, placed first, takes it: the
    # reason measures what is left then, and says what took the room
    sups = [sup("s0", R(4, 8, 8, 0)), sup("s1", R(4, 8, 8, 0)), sup("s2", R(8, 8, 8, 0))]
    top = make_topology("t-1", {"a": 1, "b": 1}, 2,
                        resources={"a": R(8, 1, 1, 0), "b": R(7, 1, 1, 0)})
    cluster = run(sups, [top])
    assert reason(cluster, "t-1") == (
        "needs 3 more cpu slots on one supervisor for a worker (have 4, need 7) once its "
        "other workers are placed (before them, most free per dimension: cpu=8 memory=8 "
        "net=8 disk=0)")
    assert cluster.get_assignment("t-1") is None


def test_a_topology_is_placed_whole_or_not_at_all() -> None:
    top = make_topology("t-1", {"a": 6}, 3, resources={"a": R(2, 1, 1, 0)})
    cluster = run([sup("s0", R(4, 8, 8, 0)), sup("s1", R(4, 8, 8, 0))], [top])
    assert cluster.get_assignment(top.id) is None and cluster.used_slots() == []
    assert "cpu" in reason(cluster, top.id)


def test_older_topologies_get_capacity_first() -> None:
    old = make_topology("zz-1", {"a": 2}, 1, launch_time=1)
    new = make_topology("aa-2", {"a": 2}, 1, launch_time=2)
    cluster = run([sup("s0", R(2, 2, 2, 0))], [new, old])
    assert cluster.get_assignment("zz-1") is not None
    assert cluster.get_assignment("aa-2") is None and reason(cluster, "aa-2")


def test_pending_topology_starts_when_capacity_appears() -> None:
    top = make_topology("t-1", {"a": 4}, 2, resources={"a": R(1, 2, 1, 0)})
    small = run([sup("s0", R(8, 4, 8, 0))], [top])
    assert reason(small, top.id) == "needs 4 more memory slots (have 4, need 8)"
    grown = run([sup("s0", R(8, 4, 8, 0)), sup("s1", R(8, 8, 8, 0))], [top], small.assignments())
    assert grown.unassigned_executors(top) == [] and grown.get_status(top.id) is None


def test_components_spread_across_nodes() -> None:
    top = make_topology("wc-1", {"spout": 4, "split": 4, "count": 4}, 4)
    cluster = run(make_supervisors(6), [top])
    assignment = cluster.get_assignment(top.id)
    assert assignment is not None and len(assignment.nodes()) == 4
    for comp, executors in top.component_executors().items():
        assert len({assignment.slot_of(e).node_id for e in executors}) == 4, comp  # type: ignore[union-attr]


def test_isolated_topology_runs_only_on_its_hosts_and_keeps_them() -> None:
    iso = make_topology("iso-1", {"a": 4}, 4, conf={"topology.isolated.hosts": ["host002",
                                                                                "host003"]})
    other = make_topology("other-2", {"b": 8}, 4)
    before = run(make_supervisors(4), [other])          # other spreads over all four hosts
    assert len(before.get_assignment("other-2").nodes()) == 4  # type: ignore[union-attr]
    cluster = run(make_supervisors(4), [iso, other], before.assignments())
    assert set(cluster.get_assignment("iso-1").nodes()) <= {"sup002", "sup003"}  # type: ignore[union-attr]
    assert set(cluster.get_assignment("other-2").nodes()) <= {"sup000", "sup001"}  # type: ignore[union-attr]
    assert cluster.unassigned_executors(other) == []


def test_isolated_hosts_without_a_live_supervisor_say_so() -> None:
    iso = make_topology("iso-1", {"a": 2}, 1,
                        conf={"topology.isolated.hosts": ["nowhere", "gone"]})
    cluster = run(make_supervisors(2), [iso])
    assert reason(cluster, "iso-1") == (
        "no live supervisor runs on its isolated hosts gone, nowhere (topology.isolated.hosts "
        "is matched against each supervisor's storm.local.hostname)")
    assert cluster.get_assignment("iso-1") is None and cluster.used_slots() == []


def test_isolated_hosts_partly_alive_name_the_dead_ones() -> None:
    iso = make_topology("iso-1", {"a": 2}, 1,
                        conf={"topology.isolated.hosts": ["host001", "gone"]})
    sups = [sup("sup000", R(8, 8, 8, 0), host="host000"), sup("sup001", R(1, 8, 8, 0),
                                                                   host="host001")]
    cluster = run(sups, [iso])
    assert reason(cluster, "iso-1") == ("needs 1 more cpu slots (have 1, need 2) on isolated "
                                        "hosts gone, host001 (no live supervisor on gone)")


def test_rescheduling_keeps_placements() -> None:
    tops = [make_topology(f"t{i}-{i}", {"a": 3, "b": 5}, 3, launch_time=i) for i in range(4)]
    first = run(make_supervisors(5), tops)
    grown = run(make_supervisors(8), tops, first.assignments())
    assert placements(grown) == placements(first)


def test_lost_supervisor_moves_only_its_executors() -> None:
    tops = [make_topology(f"t{i}-{i}", {"a": 3, "b": 5}, 3, launch_time=i) for i in range(4)]
    first = run(make_supervisors(5), tops)
    survivors = [s for s in make_supervisors(5) if s.id != "sup001"]
    after = run(survivors, tops, first.assignments())
    moved = placements(after)
    for tid, executors in placements(first).items():
        assert moved[tid].keys() == executors.keys()
        for e, (node, port) in executors.items():
            if node != "sup001":
                assert moved[tid][e] == (node, port)


def test_shrunk_supervisor_sheds_workers_until_it_fits() -> None:
    top = make_topology("t-1", {"a": 4}, 2, resources={"a": R(2, 1, 1, 0)})
    first = run([sup("s0", R(8, 8, 8, 0)), sup("s1", R(8, 8, 8, 0))], [top])
    assert first.get_assignment(top.id).nodes() == ["s0", "s1"]  # type: ignore[union-attr]
    after = run([sup("s0", R(8, 8, 8, 0)), sup("s1", R(3, 8, 8, 0))], [top], first.assignments())
    assert after.get_assignment(top.id).nodes() == ["s0"]  # type: ignore[union-attr]
    assert after.unassigned_executors(top) == []


def test_new_executors_join_workers_with_room_or_wait() -> None:
    small = make_topology("t-1", {"a": 2}, 2)
    first = run([sup("s0", R(2, 8, 8, 0)), sup("s1", R(3, 8, 8, 0))], [small])
    grown = make_topology("t-1", {"a": 3}, 2)
    after = run([sup("s0", R(2, 8, 8, 0)), sup("s1", R(3, 8, 8, 0))], [grown],
                first.assignments())
    assert Counter(s.node_id for s in after.get_assignment("t-1").executor_to_slot.values()) \
        == {"s0": 2, "s1": 1}  # type: ignore[union-attr]
    bigger = make_topology("t-1", {"a": 6}, 2)
    blocked = run([sup("s0", R(2, 8, 8, 0)), sup("s1", R(3, 8, 8, 0))], [bigger],
                  after.assignments())
    assert reason(blocked, "t-1") == "needs 1 more cpu slots (have 2, need 3)"
    assert placements(blocked)["t-1"] == placements(after)["t-1"]


def test_same_input_same_output_regardless_of_input_order() -> None:
    tops = [make_topology(f"t{i}-{i}", {"a": 5, "b": 7}, 3, launch_time=i,
                          resources={"a": R(1, 2, 1, 0)}) for i in range(6)]
    sups = make_supervisors(9, resources=R(6, 8, 6, 1))
    assert placements(run(sups, tops)) == placements(run(list(reversed(sups)), tops[::-1]))


def test_an_over_committed_supervisor_frees_the_newest_topologys_workers_first() -> None:
    # ids sort the other way round from their age: the age decides
    old = make_topology("zz-1", {"a": 1}, 1, resources={"a": R(4, 1, 1, 0)}, launch_time=1)
    new = make_topology("bb-2", {"a": 1}, 1, resources={"a": R(4, 1, 1, 0)}, launch_time=2)
    first = run([sup("s0", R(8, 8, 8, 0))], [old, new])
    after = run([sup("s0", R(5, 8, 8, 0))], [old, new], first.assignments())
    assert after.unassigned_executors(old) == []
    assert reason(after, new.id)


def test_a_rebalancing_topologys_workers_keep_their_resources_while_it_waits() -> None:
    from squall.scheduling.cluster import SchedulerAssignment
    running = make_topology("zz-1", {"a": 1}, 1, resources={"a": R(7, 1, 1, 0)}, launch_time=1)
    first = run([sup("s0", R(10, 8, 8, 0))], [running])
    stored = first.assignment_state(running.id)    # what /assignments holds
    held = SchedulerAssignment.from_state(running.id, stored)
    assert held.worker_resources == first.get_assignment(running.id).worker_resources  # type: ignore[union-attr]
    # during its rebalance wait nimbus hands it over held, not as a topology to schedule
    waiting = make_topology("bb-2", {"a": 1}, 1, resources={"a": R(7, 1, 1, 0)}, launch_time=2)
    during = run([sup("s0", R(10, 8, 8, 0))], [waiting], {running.id: held})
    assert "cpu" in reason(during, waiting.id)
