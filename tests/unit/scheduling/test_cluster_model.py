"""The scheduling model: executors, topologies, assignments and the Cluster's bookkeeping."""
from __future__ import annotations

import pytest
from squall.errors import ConfigError, SchedulingError
from squall.scheduling.cluster import (
    Cluster,
    ExecutorDetails,
    Resources,
    SchedulerAssignment,
    SupervisorDetails,
    Topologies,
    TopologyDetails,
    WorkerSlot,
    split_tasks,
)
from squall.scheduling.local import assign_local

E = ExecutorDetails


def topo(tid: str = "t-1", n: int = 4, workers: int = 2, launch: float = 0.0,
         **kw: object) -> TopologyDetails:
    return TopologyDetails(tid, tid, {}, workers, {E(i, i): "c" for i in range(1, n + 1)},
                           launch_time=launch, **kw)  # type: ignore[arg-type]


def sups(n: int = 2, ports: int = 2) -> list[SupervisorDetails]:
    return [SupervisorDetails(f"s{i}", f"h{i}", range(6700, 6700 + ports), Resources(4, 4, 4, 0))
            for i in range(n)]


def test_executor_keys_round_trip() -> None:
    assert str(E(3, 5)) == "[3, 5]" and E.parse(" [3,5] ") == E(3, 5)
    assert list(E(3, 5).tasks) == [3, 4, 5]
    assert len({E(1, 1), E(1, 1)}) == 1
    with pytest.raises(ConfigError, match="bad executor key"):
        E.parse("3-5")


def test_split_tasks_is_contiguous_and_balanced() -> None:
    assert split_tasks(10, 7, 3) == [E(10, 12), E(13, 14), E(15, 16)]
    assert split_tasks(1, 2, 5) == [E(1, 1), E(2, 2)]
    assert split_tasks(1, 0, 2) == []


def test_topology_details() -> None:
    t = TopologyDetails("t-1", "t", {"topology.component.memory.mb": 2048,
                                     "topology.isolated.hosts": ["b", "a"]}, 2,
                        {E(3, 4): "bolt", E(1, 2): "spout"}, {"spout": Resources(2, 1, 1, 0)})
    assert list(t.executors) == [E(1, 2), E(3, 4)]
    assert t.resources_for(E(1, 2)) == Resources(2, 1, 1, 0)
    assert t.resources_for(E(3, 4)) == Resources(1, 2, 1, 0)
    assert t.total_resources() == Resources(3, 3, 2, 0)
    assert t.component_executors() == {"spout": [E(1, 2)], "bolt": [E(3, 4)]}
    assert t.isolated_hosts == ("a", "b")
    with pytest.raises(ConfigError, match="overlaps"):
        TopologyDetails("x", "x", {}, 1, {E(1, 3): "a", E(3, 4): "b"})


def test_topologies_iterate_oldest_first() -> None:
    tops = Topologies([topo("b-2", launch=5), topo("a-1", launch=9), topo("c-3", launch=5)])
    assert [t.id for t in tops] == ["b-2", "c-3", "a-1"]
    assert tops.by_name("a-1") is tops["a-1"] and "c-3" in tops and len(tops) == 3
    with pytest.raises(ConfigError, match="twice"):
        Topologies([topo("a-1"), topo("a-1")])


def test_slots_and_assign() -> None:
    t = topo()
    c = Cluster(sups(), None, Topologies([t]))
    assert c.available_slots() == [WorkerSlot("s0", 6700), WorkerSlot("s0", 6701),
                                   WorkerSlot("s1", 6700), WorkerSlot("s1", 6701)]
    assert c.needs_scheduling(t) and c.unassigned_executors(t) == list(t.executors)
    c.assign(WorkerSlot("s1", 6701), t.id, [E(1, 1), E(2, 2)])
    c.assign(WorkerSlot("s1", 6701), t.id, [E(3, 3)])          # same topology: joins the worker
    assert c.available_slots("s1") == [WorkerSlot("s1", 6700)]
    assert c.used_slots() == [WorkerSlot("s1", 6701)]
    assert c.slot_owner(WorkerSlot("s1", 6701)) == t.id
    assert c.unassigned_executors(t) == [E(4, 4)]
    assert c.used_resources("s1") == Resources(3, 3, 3, 0)
    assert c.available_resources("s1") == Resources(1, 1, 1, 0)
    a = c.get_assignment(t.id)
    assert a is not None and a.worker_resources[WorkerSlot("s1", 6701)] == Resources(3, 3, 3, 0)


@pytest.mark.parametrize("slot,tid,executors,match", [
    (WorkerSlot("s0", 6700), "other-2", [E(1, 1)], "already used by topology t-1"),
    (WorkerSlot("s9", 6700), "t-1", [E(2, 2)], "no slot s9:6700"),
    (WorkerSlot("s0", 6799), "t-1", [E(2, 2)], "no slot"),
    (WorkerSlot("s1", 6700), "t-1", [E(1, 1)], "already on s0:6700"),
    (WorkerSlot("s1", 6700), "t-1", [E(9, 9)], "not part of topology"),
])
def test_assign_refuses(slot: WorkerSlot, tid: str, executors: list[E], match: str) -> None:
    c = Cluster(sups(), None, Topologies([topo(), topo("other-2")]))
    c.assign(WorkerSlot("s0", 6700), "t-1", [E(1, 1)])
    with pytest.raises(SchedulingError, match=match):
        c.assign(slot, tid, executors)


def test_free_slot_returns_its_executors() -> None:
    t = topo()
    c = Cluster(sups(), None, Topologies([t]))
    c.assign(WorkerSlot("s0", 6700), t.id, [E(2, 2), E(1, 1)])
    c.assign(WorkerSlot("s1", 6700), t.id, [E(3, 3), E(4, 4)])
    assert c.free_slot(WorkerSlot("s0", 6700)) == [E(1, 1), E(2, 2)]
    assert c.free_slot(WorkerSlot("s0", 6700)) == []
    assert c.used_resources("s0") == Resources()
    assert WorkerSlot("s0", 6700) in c.available_slots()
    c.free_topology(t.id)
    assert c.get_assignment(t.id) is None and c.used_slots() == []


def test_constructor_drops_invalid_placements_and_keeps_foreign_ones() -> None:
    t = topo(n=3)
    mine = SchedulerAssignment.from_executor_node_port(t.id, {
        "[1, 1]": ["s0", 6700],        # fine
        "[2, 2]": ["gone", 6700],      # supervisor is gone
        "[3, 3]": ["s1", 6799],        # port no longer offered
        "[7, 7]": ["s1", 6700],        # executor removed by a rebalance
    })
    foreign = SchedulerAssignment("f-9", {E(1, 1): WorkerSlot("s0", 6701)},
                                  {WorkerSlot("s0", 6701): Resources(2, 0, 0, 0)})
    thief = SchedulerAssignment("z-8", {E(1, 1): WorkerSlot("s0", 6700)})
    c = Cluster(sups(), {t.id: mine, "f-9": foreign, "z-8": thief}, Topologies([t]))
    assert c.assignment_state(t.id)["executor_node_port"] == {"[1, 1]": ["s0", 6700]}
    assert c.slot_owner(WorkerSlot("s0", 6701)) == "f-9"
    assert c.used_resources("s0") == Resources(3, 1, 1, 0)
    assert c.get_assignment("z-8") is None
    assert sorted(why for *_, why in c.dropped) == [
        "executor no longer in the topology", "port no longer offered",
        "slot already used by t-1", "supervisor is gone"]
    mine_before = mine.executor_node_port()
    c.free_slot(WorkerSlot("s0", 6700))
    assert mine.executor_node_port() == mine_before     # the caller's object is not changed


def test_needs_scheduling_counts_workers_when_slots_are_free() -> None:
    t = topo(n=2, workers=2)
    c = Cluster(sups(1, ports=2), None, Topologies([t]))
    c.assign(WorkerSlot("s0", 6700), t.id, [E(1, 1), E(2, 2)])
    assert c.needs_scheduling(t)                    # wants 2 workers, a slot is free
    c.assign(WorkerSlot("s0", 6701), "other-1", [])
    assert not c.needs_scheduling(t)


def test_assignment_state_and_statuses() -> None:
    t = topo(n=2)
    c = Cluster(sups(), None, Topologies([t]))
    c.assign(WorkerSlot("s1", 6700), t.id, [E(1, 1), E(2, 2)])
    assert c.assignment_state(t.id) == {
        "node_host": {"s1": "h1"},
        "executor_node_port": {"[1, 1]": ["s1", 6700], "[2, 2]": ["s1", 6700]},
        "worker_resources": {"s1-6700": {"cpu": 2, "memory": 2, "net": 2, "disk": 0}},
    }
    assert c.assignment_state("none-1")["executor_node_port"] == {}
    c.set_status("x-1", "pending", "needs 1 more cpu slots (have 0, need 1)")
    assert c.statuses() == {"x-1": ("pending", "needs 1 more cpu slots (have 0, need 1)")}
    assert c.get_status("x-1").status == "pending" and c.get_status(t.id) is None  # type: ignore[union-attr]


def test_bad_assignment_json_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        SchedulerAssignment.from_executor_node_port("t", {"[1, 1]": ["s0"]})


def test_assign_local_spreads_evenly() -> None:
    t = TopologyDetails("t-1", "t", {}, 3,
                        {**{E(i, i): "a" for i in range(1, 4)}, **{E(i, i): "b" for i in range(4, 8)}})
    placed = assign_local(t, 3)
    counts = [list(placed.values()).count(w) for w in range(3)]
    assert sorted(counts) == [2, 2, 3]
    assert {placed[E(i, i)] for i in range(1, 4)} == {0, 1, 2}
    assert set(assign_local(t, 0).values()) == {0}
    assert len(set(assign_local(t, 50).values())) == 7


def test_details_from_a_built_topology() -> None:
    from squall import Bolt, Spout, TopologyBuilder
    from squall.scheduling.cluster import details_from_topology

    class Src(Spout):
        outputs = ("x",)

        def next_tuple(self) -> None:
            pass

    class Sink(Bolt):
        def process(self, tup: object) -> None:
            pass

    b = TopologyBuilder()
    b.set_spout("src", Src, parallelism=2)
    b.set_bolt("sink", Sink, parallelism=3).shuffle_grouping("src").set_resources(
        cpu=2, memory_mb=1500)
    topology = b.create_topology()
    conf = {"topology.component.net.slots": 0}
    details = details_from_topology("t-1", "t", conf, topology, 2, 7.0)
    assert details.executors == {ExecutorDetails(*e): c
                                 for e, c in topology.executor_component().items()}
    sink = details.component_executors()["sink"]
    assert len(sink) == 3 and details.resources_for(sink[0]) == Resources(2, 2, 0, 0)
    assert details.resources_for(details.component_executors()["src"][0]) == Resources(1, 1, 0, 0)
