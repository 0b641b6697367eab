"""Nimbus's rebalance against the memory state store: the surviving placement is reshaped with
the fewest moves by either scheduler, and a rebalance that cannot be placed never takes the
running topology down (refused up front, or the old shape kept if capacity went away)."""
from __future__ import annotations

import time
from typing import Any

import pytest

from squall import Bolt, Spout, TopologyBuilder, drivers
from squall.daemon import packaging
from squall.daemon.nimbus_code import CodeStore
from squall.daemon.nimbus_schedule import NOT_APPLIED, Scheduling
from squall.daemon.nimbus_topologies import TopologyLifecycle
from squall.errors import TopologyError
from squall.state.cluster_state import SUPERVISORS, ClusterState

TID = "wc-1-1000"
ROOMY = {"cpu": 16, "memory": 32, "net": 16, "disk": 0}


class Src(Spout):
    outputs = ["line"]

    def next_tuple(self) -> None:
        pass


class Work(Bolt):
    outputs = ["word"]

    def process(self, tup: Any) -> None:
        pass


def _topology() -> Any:
    b = TopologyBuilder()
    b.set_spout("spout", Src, parallelism=2)
    b.set_bolt("split", Work, parallelism=4).shuffle_grouping("spout")
    b.set_bolt("count", Work, parallelism=4).shuffle_grouping("split")
    return b.create_topology()           # 10 executors, tasks 1..10


def _store_package(directory: Any, topology: Any) -> None:
    """What a submit leaves in nimbus's code store (the code itself is never read here)."""
    directory.mkdir(parents=True)
    packaging.write_json(directory / packaging.CONF_FILE, {})
    packaging.write_json(directory / packaging.TOPOLOGY_FILE, topology.to_json())
    (directory / packaging.CODE_FILE).write_bytes(b"")


class Harness:
    """The leader's parts of a nimbus (code store, scheduling, topology lifecycle) on the
    memory state store, without the gRPC server and the threads."""

    def __init__(self, scheduler: str, tmp_path: Any) -> None:
        conf = {"squall.scheduler": scheduler, "squall.state": "memory",
                "storm.local.dir": str(tmp_path), "topology.message.timeout.secs": 0}
        self.store = drivers.driver("state", conf)
        self.store.start()
        self.state = ClusterState(self.store, conf)
        self.state.setup()
        code = CodeStore(tmp_path / "nimbus", conf)
        code.prepare()
        _store_package(code.directory(TID), _topology())
        self.topology = code.topology_of(TID)[1]
        scheduling = Scheduling(conf, self.state, drivers.driver("scheduler", conf), code)
        self.topologies = TopologyLifecycle(conf, self.state, code, scheduling,
                                            require_leader=lambda: None, wake=lambda: None)
        self.state.set_storm(TID, {
            "name": "wc", "launch_time": 1000, "status": "active", "status_reason": "",
            "num_workers": 2, "component_executors": {c: s.parallelism
                                                      for c, s in self.topology.components.items()}})

    def supervisor(self, sid: str, ports: int = 4, resources: dict[str, int] = ROOMY) -> None:
        self.state.register_supervisor(sid, {"hostname": f"host-{sid}",
                                             "ports": list(range(6700, 6700 + ports)),
                                             "resources": resources})

    def schedule(self) -> None:
        self.topologies.monitor_pass()

    def placement(self) -> dict[str, tuple[str, int]]:
        got = self.state.get_assignment(TID) or {}
        return {k: tuple(v) for k, v in (got.get("executor_node_port") or {}).items()}

    def storm(self) -> dict[str, Any]:
        return self.state.get_storm(TID) or {}

    def rebalance(self, **kwargs: Any) -> None:
        self.topologies.rebalance("wc", wait_secs=0, **kwargs)
        self.schedule()


@pytest.fixture(params=["even", "multidim"])
def cluster(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    h = Harness(request.param, tmp_path)
    for sid in ("s1", "s2", "s3", "s4"):
        h.supervisor(sid)
    h.schedule()
    assert len(h.placement()) == 10 and len(set(h.placement().values())) == 2
    yield h
    h.store.close()


def _moved(before: dict[str, Any], after: dict[str, Any]) -> int:
    return sum(1 for k, slot in before.items() if k in after and after[k] != slot)


def test_growing_two_to_three_workers_moves_only_the_new_workers_share(cluster):
    before = cluster.placement()
    cluster.rebalance(num_workers=3)
    after = cluster.placement()
    assert sorted(after) == sorted(before)
    assert len(set(after.values())) == 3
    assert _moved(before, after) == 3            # 10 over 3 workers: 4, 3, 3 (was 6 moved)
    assert cluster.storm()["status"] == "active" and cluster.storm()["num_workers"] == 3


def test_shrinking_frees_one_worker_and_moves_only_its_executors(cluster):
    cluster.rebalance(num_workers=3)
    before = cluster.placement()
    smallest = min(len([k for k, v in before.items() if v == slot])
                   for slot in set(before.values()))
    cluster.rebalance(num_workers=2)
    after = cluster.placement()
    assert len(set(after.values())) == 2 and sorted(after) == sorted(before)
    assert _moved(before, after) == smallest == 3
    assert set(after.values()) < set(before.values())       # no new worker was started


def test_changing_one_components_executors_moves_nothing_else(cluster):
    before = cluster.placement()
    cluster.rebalance(executors={"count": 3})
    after = cluster.placement()
    # count's 4 tasks in 3 executors: one new range, two unchanged ones that keep their slots
    count = {f"[{s}, {e}]" for s, e in _topology().with_parallelism({"count": 3})
             .executors("count")}
    new = {k for k in after if k not in before}
    assert len(count) == 3 and len(new) == 1 and new < count
    unchanged = [k for k in before if k in after]
    assert len(unchanged) == 8
    assert all(after[k] == before[k] for k in unchanged)
    assert len(set(after.values())) == 2
    assert cluster.storm()["component_executors"]["count"] == 3


def test_a_rebalance_that_cannot_fit_is_refused_and_the_topology_keeps_running(tmp_path):
    h = Harness("multidim", tmp_path)
    h.supervisor("s1", ports=2)
    h.supervisor("s2", ports=2)
    h.schedule()
    before = h.placement()
    assert len(before) == 10
    with pytest.raises(TopologyError) as err:
        h.topologies.rebalance("wc", wait_secs=0, num_workers=6)
    message = str(err.value)
    assert "\n" not in message
    assert "does not fit" in message and "needs 2 more worker slots (have 2, need 4)" in message
    assert "keeps running" in message
    h.schedule()
    assert h.placement() == before
    assert h.storm()["status"] == "active" and h.storm()["num_workers"] == 2
    assert not h.storm().get("rebalance")
    h.store.close()


def test_capacity_lost_during_the_wait_keeps_the_old_shape_and_placement(tmp_path):
    h = Harness("multidim", tmp_path)
    for sid in ("s1", "s2", "s3"):
        h.supervisor(sid, ports=1)
    h.schedule()
    before = h.placement()
    spare = ({"s1", "s2", "s3"} - {node for node, _ in before.values()}).pop()
    h.topologies.rebalance("wc", wait_secs=0, num_workers=3, executors={"count": 2})  # fits now
    h.state.store.delete(f"{SUPERVISORS}/{spare}")      # ... but the spare node goes away
    h.schedule()
    storm = h.storm()
    assert h.placement() == before
    assert storm["status"] == "active" and storm["num_workers"] == 2
    assert storm["component_executors"]["count"] == 4
    assert storm["status_reason"] == NOT_APPLIED + "needs 1 more worker slots (have 0, need 1)"
    h.schedule()                                        # the reason stays until a rebalance
    assert h.storm()["status_reason"].startswith(NOT_APPLIED)
    h.supervisor(spare, ports=1)
    h.rebalance(num_workers=3)
    assert len(set(h.placement().values())) == 3 and h.storm()["status_reason"] == ""
    h.store.close()


def test_a_topology_whose_resources_cannot_be_read_says_so_in_its_status(tmp_path):
    h = Harness("even", tmp_path)
    h.supervisor("s1")
    h.topology.components["split"].resources["cpu"] = True  # past submit
    h.schedule()
    assert h.placement() == {}
    assert h.storm()["status_reason"] == ("cannot be scheduled: resource cpu must be a "
                                          "non-negative number, got True")
    h.store.close()


def test_only_executors_of_untouched_workers_keep_their_start_time(cluster):
    cluster.rebalance(num_workers=3)
    record = cluster.state.get_assignment(TID)
    early = int(time.time()) - 50                   # still within the launch grace
    record["executor_start_time_secs"] = {k: early for k in record["executor_node_port"]}
    cluster.state.set_assignment(TID, record)
    before = cluster.placement()
    cluster.rebalance(num_workers=4)                 # 4, 3, 3 -> 3, 3, 2, 2
    after = cluster.placement()
    starts = cluster.state.get_assignment(TID)["executor_start_time_secs"]

    def on(placement, slot):
        return {k for k, v in placement.items() if v == slot}

    untouched = {slot for slot in set(before.values()) if on(before, slot) == on(after, slot)}
    assert len(untouched) == 1 and _moved(before, after) == 2
    for key, slot in after.items():
        # a worker whose executors changed is restarted: all of its executors start again
        assert (starts[key] == early) == (slot in untouched), key


@pytest.mark.parametrize("scheduler", ["even", "multidim"])
def test_a_pending_topology_is_logged_when_its_reason_changes_not_every_pass(
        scheduler: str, tmp_path: Any, caplog: Any) -> None:
    h = Harness(scheduler, tmp_path)
    try:
        caplog.set_level("DEBUG")
        for _ in range(3):                      # no supervisor: pending, pass after pass
            h.schedule()
        assert h.storm()["status"] == "pending"
        said = [r for r in caplog.records if r.levelname == "INFO"
                and r.getMessage().startswith(f"topology {TID} pending")]
        assert len(said) == 1, [r.getMessage() for r in said]
        h.supervisor("s1")
        h.schedule()
        assert h.storm()["status"] == "active"
    finally:
        h.store.close()
