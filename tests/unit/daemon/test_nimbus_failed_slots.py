"""A worker that can never start on its slot (its port held by another process): nimbus moves
its executors to a free slot once they time out, and says so once, not on every pass; with no
other slot free they stay and one line says why. Nimbus's parts over the memory store, with
worker beats written by the test and start times moved into the past."""
from __future__ import annotations

import time
from typing import Any

import pytest

from squall import Bolt, Spout, TopologyBuilder, drivers
from squall.daemon import packaging
from squall.daemon.nimbus_code import CodeStore
from squall.daemon.nimbus_schedule import Scheduling
from squall.daemon.nimbus_slot_failures import NEVER_STARTED, Outage, SlotFailures
from squall.daemon.nimbus_topologies import TopologyLifecycle
from squall.scheduling.cluster import WorkerSlot
from squall.state.cluster_state import ClusterState

TID = "ft-1-1000"
LAUNCH_SECS = 120
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
    b.set_bolt("count", Work, parallelism=2).shuffle_grouping("spout")
    return b.create_topology()


class Harness:
    """The leader's scheduling parts on the memory store; the test plays the workers."""

    def __init__(self, scheduler: str, tmp_path: Any, ports: dict[str, list[int]]) -> None:
        conf = {"squall.scheduler": scheduler, "squall.state": "memory",
                "storm.local.dir": str(tmp_path), "topology.message.timeout.secs": 0,
                "nimbus.task.launch.secs": LAUNCH_SECS, "nimbus.task.timeout.secs": 30}
        self.store = drivers.driver("state", conf)
        self.store.start()
        self.state = ClusterState(self.store, conf)
        self.state.setup()
        code = CodeStore(tmp_path / "nimbus", conf)
        code.prepare()
        directory = code.directory(TID)
        directory.mkdir(parents=True)
        packaging.write_json(directory / packaging.CONF_FILE, {})
        packaging.write_json(directory / packaging.TOPOLOGY_FILE, _topology().to_json())
        (directory / packaging.CODE_FILE).write_bytes(b"")
        topology = code.topology_of(TID)[1]
        scheduling = Scheduling(conf, self.state, drivers.driver("scheduler", conf), code)
        self.lifecycle = TopologyLifecycle(conf, self.state, code, scheduling,
                                           require_leader=lambda: None, wake=lambda: None)
        self.state.set_storm(TID, {
            "name": "ft", "launch_time": 1000, "status": "active", "status_reason": "",
            "num_workers": 2, "component_executors": {c: s.parallelism
                                                      for c, s in topology.components.items()}})
        for sid, sup_ports in ports.items():
            self.state.register_supervisor(sid, {"hostname": f"host-{sid}", "ports": sup_ports,
                                                 "resources": ROOMY})
        self.seq = 0

    def placement(self) -> dict[str, WorkerSlot]:
        got = self.state.get_assignment(TID) or {}
        return {k: WorkerSlot(str(n), int(p))
                for k, (n, p) in (got.get("executor_node_port") or {}).items()}

    def slots(self) -> set[WorkerSlot]:
        return set(self.placement().values())

    def on(self, slot: WorkerSlot) -> list[str]:
        return sorted(k for k, s in self.placement().items() if s == slot)

    def launched_long_ago(self) -> None:
        """Every executor was assigned more than ``nimbus.task.launch.secs`` ago."""
        record = self.state.get_assignment(TID)
        record["executor_start_time_secs"] = {k: int(time.time()) - LAUNCH_SECS - 10
                                              for k in record["executor_node_port"]}
        self.state.set_assignment(TID, record)

    def beat(self, *slots: WorkerSlot) -> None:
        """The workers on ``slots`` beat (a new beat each call, as a live worker's)."""
        self.seq += 1
        for slot in slots:
            self.state.write_worker_beat(TID, slot.node_id, slot.port, {
                "time_secs": int(time.time()), "seq": self.seq,
                "executors": {k: {} for k in self.on(slot)}})

    def schedule(self) -> None:
        self.lifecycle.monitor_pass()


def _timed_out_lines(caplog: Any) -> list[str]:
    return [r.getMessage() for r in caplog.records if "timed out" in r.getMessage()]


@pytest.mark.parametrize("scheduler", ["even", "multidim"])
def test_executors_whose_worker_never_starts_move_to_a_free_slot_and_it_is_said_once(
        scheduler: str, tmp_path: Any, caplog: Any) -> None:
    # as REPRO finding 1: two supervisors of two slots, a topology of two workers
    h = Harness(scheduler, tmp_path, {"s1": [27701, 27702], "s2": [27711, 27712]})
    try:
        caplog.set_level("INFO")
        h.schedule()
        assert len(h.slots()) == 2
        good, bad = sorted(h.slots(), key=lambda s: s.node_id != "s1")
        stranded = h.on(bad)
        h.launched_long_ago()        # the worker on ``bad`` never came up since
        for _ in range(5):           # pass after pass, as nimbus's monitor does
            h.beat(good)
            h.schedule()
        placement = h.slots()
        assert bad not in placement and good in placement and len(placement) == 2
        (moved_to,) = {h.placement()[k] for k in stranded}
        assert moved_to != good and moved_to.port in (27702, 27712)
        assert h.on(good) == sorted(k for k in h.placement() if k not in stranded)
        lines = _timed_out_lines(caplog)
        assert lines == [f"topology {TID} executors {', '.join(stranded)} on {bad} timed out "
                         f"({NEVER_STARTED}); reassigning to {moved_to}"], lines
        # the new worker beats: nothing moves, nothing more is said
        for _ in range(3):
            h.beat(good, moved_to)
            h.schedule()
        assert h.slots() == {good, moved_to} and len(_timed_out_lines(caplog)) == 1
    finally:
        h.store.close()


@pytest.mark.parametrize("scheduler", ["even", "multidim"])
def test_with_no_other_slot_free_they_stay_said_once_until_the_worker_beats_again(
        scheduler: str, tmp_path: Any, caplog: Any) -> None:
    h = Harness(scheduler, tmp_path, {"s1": [27701], "s2": [27711]})
    try:
        caplog.set_level("INFO")
        h.schedule()
        before = h.placement()
        good, bad = WorkerSlot("s1", 27701), WorkerSlot("s2", 27711)
        assert set(before.values()) == {good, bad}
        h.launched_long_ago()
        for _ in range(5):
            h.beat(good)
            h.schedule()
        assert h.placement() == before          # nowhere else to go: its supervisor retries
        lines = _timed_out_lines(caplog)
        assert len(lines) == 1, lines
        assert f"on {bad} timed out ({NEVER_STARTED}); they stay there" in lines[0]
        assert lines[0].endswith("no other slot is free")
        h.beat(good, bad)                       # the port was freed: the worker came up
        h.schedule()
        assert h.placement() == before
        assert f"topology {TID}: the worker on {bad} beats again" in caplog.text
    finally:
        h.store.close()


def test_a_failed_slot_is_avoided_for_a_while_unless_live_executors_use_it() -> None:
    now = [100.0]
    failures = SlotFailures(hold_secs=30, clock=lambda: now[0])
    bad, other = WorkerSlot("s2", 27711), WorkerSlot("s1", 27702)
    failures.observe({"t": {bad: Outage(("[1, 1]",), NEVER_STARTED)}}, beating=())
    assert failures.avoided(busy=()) == {bad}
    assert failures.avoided(busy=[bad]) == frozenset()    # leaving it out would drop them
    now[0] += 29
    failures.observe({}, beating=[other])
    assert failures.avoided(busy=()) == {bad}
    now[0] += 1
    assert failures.avoided(busy=()) == frozenset()       # its time is up
    failures.observe({"t": {bad: Outage(("[1, 1]",), NEVER_STARTED)}}, beating=())
    failures.observe({}, beating=[bad])                   # a worker beats there again
    assert failures.avoided(busy=()) == frozenset()


def test_executors_without_any_slot_are_said_to_wait_once_per_outage(caplog: Any) -> None:
    caplog.set_level("INFO")
    failures = SlotFailures(hold_secs=30)
    bad = WorkerSlot("s2", 27711)
    outages = {bad: Outage(("[1, 1]", "[3, 3]"), NEVER_STARTED)}
    for _ in range(3):
        failures.observe({"t": outages}, beating=())
        # "[3, 3]" left the topology in a rebalance: nothing is said of it
        failures.report("t", outages, placed={}, homeless={"[1, 1]"}, why_stay="none is free")
    assert [r.getMessage() for r in caplog.records] == [
        f"topology t executors [1, 1] on {bad} timed out ({NEVER_STARTED}); they wait for a "
        "free slot: none is free"]
    failures.observe({}, beating=())           # the outage ended (the topology went)
    failures.observe({"t": outages}, beating=())
    failures.report("t", outages, placed={}, homeless={"[1, 1]"}, why_stay="none is free")
    assert len(caplog.records) == 2            # a new outage is said again
