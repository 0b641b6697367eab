"""Rebalance with the fewest moves: the planning helpers, ``Cluster.unassign``, and the number of
executors ``even`` and ``multidim`` move to grow, shrink or re-split a running topology."""
from __future__ import annotations

import pytest

from squall import drivers
from squall.errors import SchedulingError
from squall.scheduling.cluster import Cluster, ExecutorDetails, Topologies, WorkerSlot
from squall.scheduling.rebalance import join_least_loaded, spread, surplus_workers
from squall.scheduling.resources import Resources
from squall.testing.contracts.scheduler import (
    make_supervisors,
    make_topology,
    moves,
    placements,
    rebalanced,
)

E = ExecutorDetails


def _run(name, sups, tops, existing=None):
    topologies = Topologies(tops)
    cluster = Cluster(sups, existing, topologies)
    drivers.driver("scheduler", {"squall.scheduler": name}).schedule(topologies, cluster)
    return cluster


def _workers(cluster, tid):
    assignment = cluster.get_assignment(tid)
    return {s: assignment.executors_on(s) for s in assignment.slots()}


# -- the pure helpers --------------------------------------------------------------------------

def test_surplus_workers_are_those_with_the_fewest_executors():
    a, b, c = WorkerSlot("a", 1), WorkerSlot("b", 1), WorkerSlot("c", 1)
    placed = {a: [E(1, 1), E(2, 2)], b: [E(3, 3)], c: [E(4, 4), E(5, 5), E(6, 6)]}
    assert surplus_workers(placed, 2) == [b]
    assert surplus_workers(placed, 1) == [a, b]
    assert surplus_workers(placed, 3) == [] and surplus_workers(placed, 0) == [a, b]


def test_spread_takes_only_what_exceeds_each_workers_share():
    a, b = WorkerSlot("a", 1), WorkerSlot("b", 1)
    placed = {a: [E(i, i) for i in range(1, 7)], b: [E(i, i) for i in range(7, 11)]}
    taken, hands, added = spread(placed, [], 2, {})
    # 10 executors over 4 workers: 3, 3, 2, 2; a (6) keeps 3, b (4) keeps 3
    assert len(taken) == 4 and [len(h) for h in hands] == [2, 2] and added == {}
    assert sum(1 for e in taken if e in placed[a]) == 3
    assert sorted(taken) == sorted(e for h in hands for e in h)


def test_spread_leaves_the_larger_shares_to_the_most_loaded_workers():
    a, b = WorkerSlot("a", 1), WorkerSlot("b", 1)
    placed = {a: [E(i, i) for i in range(1, 6)], b: [E(6, 6), E(7, 7)]}
    taken, hands, _ = spread(placed, [], 1, {})
    assert len(taken) == 2 and [len(h) for h in hands] == [2]     # 7 as 3 (a), 2 (b), 2 (new)


def test_spread_gives_homeless_executors_to_workers_below_their_share():
    a, b = WorkerSlot("a", 1), WorkerSlot("b", 1)
    placed = {a: [E(1, 1), E(2, 2), E(3, 3)], b: [E(4, 4)]}
    taken, hands, added = spread(placed, [E(5, 5), E(6, 6)], 1, {})
    # 6 executors over 3 workers, 2 each: a gives one up, b and the new worker take the rest
    assert taken == [E(3, 3)]
    assert hands == [[E(3, 3), E(6, 6)]] and added == {b: [E(5, 5)]}


def test_spread_moves_a_mix_of_components_off_a_worker():
    a = WorkerSlot("a", 1)
    comp = {E(1, 1): "x", E(2, 2): "x", E(3, 3): "x", E(4, 4): "y"}
    taken, _, _ = spread({a: sorted(comp)}, [], 1, comp)
    assert taken == [E(2, 2), E(3, 3)]          # the most represented component first


def test_join_least_loaded_fills_the_emptiest_worker_first():
    a, b = WorkerSlot("a", 1), WorkerSlot("b", 1)
    assert join_least_loaded({a: 3, b: 1}, [E(9, 9), E(8, 8), E(7, 7)]) == {
        a: [E(9, 9)], b: [E(7, 7), E(8, 8)]}
    assert join_least_loaded({}, [E(1, 1)]) == {}


# -- Cluster.unassign --------------------------------------------------------------------------

def test_unassign_takes_executors_off_and_frees_an_emptied_worker():
    top = make_topology("t-1", {"a": 3}, 2, resources={"a": Resources(2, 1, 1, 0)})
    sups = make_supervisors(1, ports=2)
    cluster = Cluster(sups, None, Topologies([top]))
    s0, s1 = WorkerSlot("sup000", 6700), WorkerSlot("sup000", 6701)
    cluster.assign(s0, "t-1", [E(1, 1), E(2, 2)])
    cluster.assign(s1, "t-1", [E(3, 3)])
    cluster.unassign("t-1", [E(2, 2), E(3, 3), E(9, 9)])
    assert placements(cluster) == {"t-1": {"[1, 1]": ("sup000", 6700)}}
    assert cluster.get_assignment("t-1").worker_resources[s0] == Resources(2, 1, 1, 0)
    assert cluster.used_resources("sup000") == Resources(2, 1, 1, 0)
    assert cluster.available_slots() == [s1]
    cluster.unassign("t-1", [E(1, 1)])
    assert cluster.get_assignment("t-1") is None and cluster.available_slot_count() == 2
    with pytest.raises(SchedulingError, match="not being scheduled"):
        cluster.unassign("other-2", [E(1, 1)])


# -- the schedulers ----------------------------------------------------------------------------

@pytest.fixture(params=["even", "multidim"])
def name(request):
    return request.param


def _wc(workers):
    return make_topology("wc-1", {"spout": 2, "split": 4, "count": 4}, workers)


def test_grow_two_to_three_workers_moves_three_of_ten(name):
    sups = make_supervisors(4)
    before = _run(name, sups, [_wc(2)])
    after = _run(name, sups, [rebalanced(_wc(2), 3)], before.assignments())
    assert after.assigned_worker_count("wc-1") == 3
    assert moves(before, after, "wc-1") == 3
    assert sorted(len(v) for v in _workers(after, "wc-1").values()) == [3, 3, 4]
    # the new worker's executors come from both old workers and mix components
    new = [s for s in _workers(after, "wc-1") if s not in _workers(before, "wc-1")]
    assert len(new) == 1 and len({after.topologies["wc-1"].executors[e]
                                  for e in _workers(after, "wc-1")[new[0]]}) > 1


def test_shrink_three_to_two_workers_moves_only_the_freed_workers_executors(name):
    sups = make_supervisors(4)
    before = _run(name, sups, [_wc(3)])
    sizes = sorted(len(v) for v in _workers(before, "wc-1").values())
    after = _run(name, sups, [rebalanced(_wc(3), 2)], before.assignments())
    assert after.assigned_worker_count("wc-1") == 2
    assert moves(before, after, "wc-1") == sizes[0] == 3
    assert set(_workers(after, "wc-1")) < set(_workers(before, "wc-1"))


def test_changing_executor_counts_moves_only_that_components_executors(name):
    sups = make_supervisors(4)
    before = _run(name, sups, [_wc(3)])
    changed = rebalanced(_wc(3), components={"split": 2, "count": 2})
    after = _run(name, sups, [changed], before.assignments())
    assert moves(before, after, "wc-1") == 0
    old, new = placements(before)["wc-1"], placements(after)["wc-1"]
    fresh = {e for e in new if e not in old}
    comps = {changed.executors[E(*map(int, e.strip("[]").split(",")))] for e in fresh}
    assert comps == {"split", "count"} and len(fresh) == 4
    assert after.assigned_worker_count("wc-1") == 3
    assert sorted(len(v) for v in _workers(after, "wc-1").values()) == [2, 2, 2]


def test_grow_and_resplit_together(name):
    sups = make_supervisors(4)
    before = _run(name, sups, [_wc(2)])
    changed = rebalanced(_wc(2), 4, components={"split": 2})
    after = _run(name, sups, [changed], before.assignments())
    assert after.assigned_worker_count("wc-1") == 4
    assert sorted(placements(after)["wc-1"]) == sorted(str(e) for e in changed.executors)
    # 8 executors over 4 workers; the 6 unchanged ones may move only to fill the 2 new workers
    assert moves(before, after, "wc-1") <= 4


def test_a_topology_on_fewer_workers_than_asked_spreads_out_once_a_slot_is_free(name):
    full = make_supervisors(1, ports=2)
    before = _run(name, full, [_wc(2)])
    # asks for 3 (not a rebalance): no slot is free, so it keeps its 2 workers
    assert placements(_run(name, full, [_wc(3)], before.assignments())) == placements(before)
    # a supervisor joins: it takes a third worker, moving only that worker's share
    grown = _run(name, make_supervisors(2, ports=2), [_wc(3)], before.assignments())
    assert grown.assigned_worker_count("wc-1") == 3
    assert moves(before, grown, "wc-1") == 3
    assert sorted(len(v) for v in _workers(grown, "wc-1").values()) == [3, 3, 4]
    status = grown.get_status("wc-1")
    assert status is None or status.status != "pending"


def test_free_slots_go_to_a_topology_without_any_before_one_that_runs_short(name):
    one_node = make_supervisors(1, ports=2)
    before = _run(name, one_node, [make_topology("short-1", {"a": 4}, 2, launch_time=1)])
    # it now asks for 3 workers (older: visited first); a younger topology has no slot
    short = make_topology("short-1", {"a": 4}, 3, launch_time=1)
    waiting = make_topology("waiting-2", {"b": 2}, 1, launch_time=2)
    after = _run(name, make_supervisors(2, ports=2)[:1] + make_supervisors(1, ports=1, start=1),
                 [short, waiting], before.assignments())
    assert after.assigned_worker_count("waiting-2") == 1        # the one new slot
    assert after.assigned_worker_count("short-1") == 2


def test_a_lost_supervisor_with_no_free_slot_left_joins_the_running_workers(name):
    """Its executors join the surviving workers (they have room) rather than the topology
    waiting, spouts stopped, for a free slot; it spreads out again when the supervisor is
    back."""
    top = _wc(2)
    both = make_supervisors(2, ports=1)
    before = _run(name, both, [top])
    survivors = [s for s in both if s.id == "sup000"]
    alone = _run(name, survivors, [top], before.assignments())
    assert alone.assigned_worker_count("wc-1") == 1
    assert sorted(placements(alone)["wc-1"]) == sorted(str(e) for e in top.executors)
    status = alone.get_status("wc-1")
    assert status is None or status.status != "pending", status
    back = _run(name, both, [top], alone.assignments())
    assert back.assigned_worker_count("wc-1") == 2
    assert sorted(len(v) for v in _workers(back, "wc-1").values()) == [5, 5]


def test_multidim_shrink_without_room_keeps_the_placement_and_is_pending():
    tight = Resources(cpu=6, memory=6, net=6, disk=0)       # one worker per supervisor fits
    need = {c: Resources(1, 1, 1, 0) for c in ("spout", "split", "count")}
    top = make_topology("wc-1", {"spout": 2, "split": 4, "count": 4}, 2, resources=need)
    sups = make_supervisors(2, resources=tight)
    before = _run("multidim", sups, [top])
    assert before.assigned_worker_count("wc-1") == 2
    after = _run("multidim", sups, [rebalanced(top, 1)], before.assignments())
    assert placements(after) == placements(before)
    status = after.get_status("wc-1")
    assert status is not None and status.status == "pending"
    assert "cpu" in status.reason and "needs" in status.reason


def test_multidim_shrink_places_afresh_when_the_workers_kept_have_no_room():
    """The worker kept by the fewest-moves rule sits on a small supervisor: the topology
    moves whole to the one with room instead of the rebalance being refused."""
    need = {c: Resources(1, 1, 1, 0) for c in ("spout", "split")}
    top = make_topology("wc-1", {"spout": 1, "split": 1}, 2, resources=need)
    small = make_supervisors(1, ports=1, resources=Resources(1, 1, 1, 0))
    big = make_supervisors(1, ports=1, resources=Resources(8, 8, 8, 0), start=1)
    before = _run("multidim", small + big, [top])
    assert before.assigned_worker_count("wc-1") == 2
    after = _run("multidim", small + big, [rebalanced(top, 1)], before.assignments())
    assert after.get_status("wc-1") is None
    assert set(placements(after)["wc-1"].values()) == {("sup001", 6700)}


def test_multidim_names_missing_worker_slots_not_resources_when_every_port_is_taken():
    first = make_topology("first-1", {"a": 2}, 2, launch_time=1)
    second = make_topology("second-2", {"b": 2}, 2, launch_time=2)
    cluster = _run("multidim", make_supervisors(1, ports=2), [first, second])
    status = cluster.get_status("second-2")
    assert status is not None and status.status == "pending"
    assert status.reason == "needs 2 more worker slots (have 0, need 2)"
