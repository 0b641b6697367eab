"""What a topology tells about tuples that keep failing and spouts that are not called
(issue #30): ``topology.max.replays`` reports a poison tuple (an error naming its id, the
spout's ``poison`` stats); a spout's stats say why ``next_tuple`` is not being called
(STORM-2384), and a spout held back by backpressure too long is the topology's
``status_reason``."""
from __future__ import annotations

import re
import threading
import time
from typing import Any

import pytest

from squall import Bolt, LocalCluster, Spout, TopologyBuilder
from squall.testing import wait_until

LOCK = threading.Lock()
FAILS: dict[Any, int] = {}


class Replaying(Spout):
    """Emits ids 0..9 and replays every failed one."""
    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.todo = list(range(10))

    def next_tuple(self) -> None:
        if self.todo:
            i = self.todo.pop(0)
            self.emit([i], tup_id=f"id-{i}")

    def fail(self, tup_id: Any) -> None:
        with LOCK:
            FAILS[tup_id] = FAILS.get(tup_id, 0) + 1
        self.todo.append(int(tup_id.split("-")[1]))


class RejectsSeven(Bolt):
    def process(self, tup: Any) -> None:
        if tup["n"] == 7:
            raise ValueError("seven cannot be processed")


def _spout(info: dict[str, Any], component: str) -> dict[str, Any]:
    return next(ex for ex in info["executors"] if ex["component"] == component)


def test_a_tuple_failed_more_than_max_replays_is_reported_once() -> None:
    FAILS.clear()
    b = TopologyBuilder()
    b.set_spout("numbers", Replaying)
    b.set_bolt("picky", RejectsSeven).shuffle_grouping("numbers")
    with LocalCluster() as cluster:
        cluster.submit_topology("poison", {"topology.max.replays": 3}, b.create_topology())
        wait_until(lambda: FAILS.get("id-7", 0) >= 6, 30, message=lambda: f"{FAILS}")
        info = cluster.get_topology_info("poison")
        poison = _spout(info, "numbers")["poison"]
        assert [(p["tup_id"], p["fails"]) for p in poison] == [("'id-7'", 4)]
        reports = [e["error"] for e in info["errors"].get("numbers", [])
                   if "poison tuple" in e["error"]]
        assert len(reports) == 1 and "'id-7'" in reports[0] and "failed 4 times" in reports[0]
        assert set(FAILS) == {"id-7"}


class ListAndDictIds(Spout):
    """Emits 6, 7 and 8 with a list id ``[0, n]`` (as multi-lang and Kafka-style spouts
    send) and 7 with a dict id, and replays each failed one from a fresh copy of its id (the
    dict's keys in the other order)."""
    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.todo: list[Any] = [[0, 6], [0, 7], {"p": 1, "o": 7}, [0, 8]]

    def next_tuple(self) -> None:
        if self.todo:
            tup_id = self.todo.pop(0)
            n = tup_id[1] if isinstance(tup_id, list) else tup_id["o"]
            self.emit([n], tup_id=tup_id)

    def fail(self, tup_id: Any) -> None:
        key = repr(sorted(tup_id.items()) if isinstance(tup_id, dict) else tup_id)
        with LOCK:
            FAILS[key] = FAILS.get(key, 0) + 1
        self.todo.append(list(tup_id) if isinstance(tup_id, list)
                         else dict(reversed(list(tup_id.items()))))


def test_an_unhashable_tuple_id_failed_more_than_max_replays_is_reported_once() -> None:
    FAILS.clear()
    b = TopologyBuilder()
    b.set_spout("numbers", ListAndDictIds)
    b.set_bolt("picky", RejectsSeven).shuffle_grouping("numbers")
    with LocalCluster() as cluster:
        cluster.submit_topology("poison-lists", {"topology.max.replays": 2},
                                b.create_topology())
        wait_until(lambda: len(FAILS) == 2 and min(FAILS.values()) >= 5, 30,
                   message=lambda: f"{FAILS}")
        info = cluster.get_topology_info("poison-lists")
        poison = _spout(info, "numbers")["poison"]
        assert [p["fails"] for p in poison] == [3, 3], poison
        listed, keyed = sorted(p["tup_id"] for p in poison)
        assert listed == "[0, 7]" and keyed in ("{'o': 7, 'p': 1}", "{'p': 1, 'o': 7}")
        reports = [e["error"] for e in info["errors"].get("numbers", [])
                   if "poison tuple" in e["error"]]
        assert len(reports) == 2 and all("failed 3 times" in r for r in reports), reports


class DictIds(Spout):
    """Emits 0..3 once each, with a dict (unhashable) as the tuple id."""
    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.todo = list(range(4))

    def next_tuple(self) -> None:
        if self.todo:
            i = self.todo.pop(0)
            self.emit([i], tup_id={"offset": i})

    def ack(self, tup_id: Any) -> None:
        with LOCK:
            DONE.append(("ack", tup_id["offset"]))

    def fail(self, tup_id: Any) -> None:
        with LOCK:
            DONE.append(("fail", tup_id["offset"]))


DONE: list[tuple[str, int]] = []


def test_an_unhashable_tuple_id_fails_normally_under_max_replays() -> None:
    # the first failure of a spout went through max.replays' counting with an empty
    # count dict, where storing an unhashable id raised and killed the worker's loop
    DONE.clear()
    b = TopologyBuilder()
    b.set_spout("numbers", DictIds)
    b.set_bolt("picky", RejectsOne).shuffle_grouping("numbers")
    with LocalCluster() as cluster:
        cluster.submit_topology("dict-ids", {"topology.max.replays": 3}, b.create_topology())
        wait_until(lambda: len(DONE) == 4, 30, message=lambda: f"{DONE}")
        assert sorted(DONE) == [("ack", 0), ("ack", 2), ("ack", 3), ("fail", 1)]
        info = cluster.get_topology_info("dict-ids")
        assert _spout(info, "numbers")["poison"] == []
        assert not any("unhashable" in e["error"]
                       for errs in info["errors"].values() for e in errs)


class RejectsOne(Bolt):
    def process(self, tup: Any) -> None:
        if tup["n"] == 1:
            raise ValueError("one cannot be processed")


class Idle(Spout):
    outputs = ["n"]

    def next_tuple(self) -> None:
        pass


class Endless(Spout):
    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.i = 0

    def next_tuple(self) -> None:
        self.i += 1
        self.emit([self.i], tup_id=self.i)


class Stuck(Bolt):
    """Spends 10 ms on each tuple: far slower than the spout."""

    def process(self, tup: Any) -> None:
        end = time.monotonic() + 0.01
        while time.monotonic() < end:
            pass


def test_a_spout_says_why_it_is_not_called() -> None:
    b = TopologyBuilder()
    b.set_spout("idle", Idle)
    b.set_spout("busy", Endless)
    b.set_bolt("sink", RejectsSeven).shuffle_grouping("busy").shuffle_grouping("idle")
    with LocalCluster() as cluster:
        cluster.submit_topology("why", {"topology.max.spout.pending": 5}, b.create_topology())
        wait_until(lambda: _spout(cluster.get_topology_info("why"), "busy")["emitted"] > 0, 30)
        cluster.deactivate("why")
        wait_until(lambda: _spout(cluster.get_topology_info("why"), "idle")["waiting_for"]
                   == "inactive", 10)
        cluster.activate("why")
        wait_until(lambda: _spout(cluster.get_topology_info("why"), "idle")["waiting_for"]
                   == "", 10)


def test_a_spout_held_back_past_the_limit_is_the_topologys_status_reason() -> None:
    b = TopologyBuilder()
    b.set_spout("endless", Endless)
    b.set_bolt("stuck", Stuck).shuffle_grouping("endless")
    with LocalCluster() as cluster:
        cluster.submit_topology("held", {"topology.workers": 2,
                                         "topology.executor.receive.buffer.size": 50,
                                         "topology.backpressure.stall.report.secs": 1},
                                b.create_topology())
        wait_until(lambda: "held back by backpressure" in
                   cluster.get_topology_info("held")["status_reason"], 30,
                   message=lambda: str(_spout(cluster.get_topology_info("held"), "endless")))
        spout = _spout(cluster.get_topology_info("held"), "endless")
        assert spout["stalled"] and spout["waiting_for"] == "backpressure"


class Holds(Bolt):
    """Never acks: every tree its tuples start stays in flight."""
    auto_ack = False

    def process(self, tup: Any) -> None:
        pass


@pytest.mark.parametrize("dedicated", [False, True], ids=["on-the-loop", "dedicated-thread"])
def test_a_spout_counts_the_turns_max_pending_held_it_back(dedicated: bool) -> None:
    b = TopologyBuilder()
    b.set_spout("busy", Endless).add_config("topology.executor.dedicated.thread", dedicated)
    b.set_spout("idle", Idle)
    b.set_bolt("holds", Holds).shuffle_grouping("busy").shuffle_grouping("idle")
    with LocalCluster() as cluster:
        # trees never time out here (however slow the host), so the 5 stay in flight
        cluster.submit_topology("pending", {"topology.max.spout.pending": 5,
                                            "topology.message.timeout.secs": 600},
                                b.create_topology())
        # a spout thread counts its held turns before the loop has applied its last emits
        wait_until(lambda: (lambda s: s["at_max_pending"] >= 3 and s["emitted"] == 5)(
            _spout(cluster.get_topology_info("pending"), "busy")), 30)
        busy = _spout(cluster.get_topology_info("pending"), "busy")
        assert busy["waiting_for"] == "max.spout.pending" and busy["emitted"] == 5
        # a spout with nothing in flight is never held back by max pending
        assert _spout(cluster.get_topology_info("pending"), "idle")["at_max_pending"] == 0


TIMED_OUT: list[int] = []


class Hundreds(Spout):
    """Emits ids 0..299 and replays each failed one."""
    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.todo = list(range(300))

    def next_tuple(self) -> None:
        if self.todo:
            i = self.todo.pop(0)
            self.emit([i], tup_id=i)

    def fail(self, tup_id: Any) -> None:
        with LOCK:
            TIMED_OUT.append(tup_id)
        self.todo.append(tup_id)


def test_a_spout_whose_trees_time_out_behind_a_bolt_that_never_acks_is_told_so_once() -> None:
    # every tree times out and is replayed because the bolt (auto_ack = False) never acks,
    # with nothing queued: one error says so (not one a timeout), and does not blame queues
    # or advise max.spout.pending
    TIMED_OUT.clear()
    b = TopologyBuilder()
    b.set_spout("numbers", Hundreds)
    b.set_bolt("holds", Holds).shuffle_grouping("numbers")
    with LocalCluster() as cluster:
        cluster.submit_topology("timeouts", {"topology.message.timeout.secs": 1},
                                b.create_topology())
        wait_until(lambda: len(TIMED_OUT) >= 600, 30, message=lambda: f"{len(TIMED_OUT)}")
        errors = [e["error"] for e in
                  cluster.get_topology_info("timeouts")["errors"].get("numbers", [])]
        assert len(errors) == 1, errors
        assert re.search(r"spout numbers: (\d+) of the \1 tuple trees it finished in the "
                         r"last 1 s timed out", errors[0]), errors[0]
        assert "likelier held by a bolt than waiting in queues" in errors[0]
        assert re.search(r"\(bolt holds \d+\)", errors[0]), errors[0]
        assert "auto_ack = False must ack or fail" in errors[0]
        assert "max.spout.pending" not in errors[0]
