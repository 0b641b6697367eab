"""Two supervisors offering the same host:port (two supervisors on one machine given the same
``supervisor.slots.ports``): nimbus keeps each such slot for one of them, places no worker on
the others' copy (it could never bind), says so in one error line and in the status reason of
a topology short of workers. Nimbus's parts over the memory store."""
from __future__ import annotations

from typing import Any

import pytest

from squall.daemon.addresses import THIS_MACHINE, host_key
from squall.daemon.nimbus_slot_clashes import Clash, Machines, SlotClashes, clash_note
from squall.scheduling.cluster import SupervisorDetails, WorkerSlot

from leader_parts import ROOMY, LeaderParts

TID = "sc-1-1000"
PORTS = [27701, 27702]


class Harness(LeaderParts):
    """The leader's scheduling parts on the memory store, one topology asking for 4 workers."""

    def __init__(self, scheduler: str, tmp_path: Any) -> None:
        super().__init__(tmp_path, {"squall.scheduler": scheduler}, tid=TID, name="sc",
                         parallelism=4)

    def register(self, sid: str, host: str, ports: list[int], started: int) -> None:
        self.state.register_supervisor(sid, {"hostname": host, "ports": ports,
                                             "resources": ROOMY, "time_secs": started + 100,
                                             "uptime_secs": 100})

    def slots(self) -> set[WorkerSlot]:
        got = self.state.get_assignment(TID) or {}
        return {WorkerSlot(str(n), int(p))
                for n, p in (got.get("executor_node_port") or {}).values()}


def _clash_lines(caplog: Any) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelname == "ERROR"
            and "offer the same slots" in r.getMessage()]


@pytest.mark.parametrize("scheduler", ["even", "multidim"])
def test_a_host_port_two_supervisors_offer_is_used_once_and_said_once(
        scheduler: str, tmp_path: Any, caplog: Any) -> None:
    h = Harness(scheduler, tmp_path)
    try:
        caplog.set_level("INFO")
        h.register("sup-b", "host-a", PORTS, started=950)     # registered second
        h.register("sup-a", "host-a", PORTS, started=900)     # started first: keeps them
        for _ in range(3):
            h.lifecycle.monitor_pass()
        # never a worker on sup-b's copy of the ports: it could not bind them. The even
        # scheduler runs the topology on the two slots there are, multidim keeps it pending
        if scheduler == "even":
            assert h.slots() == {WorkerSlot("sup-a", p) for p in PORTS}, h.slots()
        else:
            assert not h.slots() and h.state.get_storm(TID)["status"] == "pending"
        note = ("supervisors sup-a, sup-b offer the same slots host-a:27701, 27702: sup-b's "
                "are left out")
        assert note in h.reason()
        lines = _clash_lines(caplog)
        assert len(lines) == 1, lines
        assert ("sup-a and sup-b on host host-a both offer ports 27701, 27702 (sup-a keeps "
                "them, sup-b's are left out of scheduling)") in lines[0]
        # sup-b goes: no clash left, said once; the reason goes with it
        h.state.unregister_supervisor("sup-b")
        h.lifecycle.monitor_pass()
        assert "no two live supervisors offer the same host:port any more" in caplog.text
        assert note not in h.reason()
    finally:
        h.store.close()


def _sup(sid: str, host: str = "host-a", ports: tuple[int, ...] = (6700, 6701)
         ) -> SupervisorDetails:
    return SupervisorDetails(sid, host, ports)


def test_who_keeps_a_clashing_slot() -> None:
    clashes = SlotClashes()
    sups = [_sup("b"), _sup("a"), _sup("c", host="host-c")]
    # started first keeps them; other hosts are no clash
    got = clashes.settle(sups, {"a": 200.0, "b": 100.0, "c": 0.0}, placed=(), beating=())
    assert got == [Clash("host-a", 6700, "b", ("a",)), Clash("host-a", 6701, "b", ("a",))]
    kept = SlotClashes.without(sups, got)
    assert [(s.id, s.ports) for s in kept] == [("b", (6700, 6701)), ("a", ()),
                                               ("c", (6700, 6701))]
    # executors placed on a's copy, or a worker beating there, make a the keeper of that
    # slot (its worker holds the port) -- for a fresh nimbus, which has chosen nothing yet
    fresh = SlotClashes()
    got = fresh.settle(sups, {"a": 200.0, "b": 100.0}, placed={WorkerSlot("a", 6700)},
                       beating=())
    assert [c.kept_by for c in got] == ["a", "b"]
    got = fresh.clear() or fresh.settle(sups, {"a": 200.0, "b": 100.0},
                                        placed={WorkerSlot("b", 6701)},
                                        beating={WorkerSlot("a", 6701)})
    assert [c.kept_by for c in got] == ["b", "a"]
    # a choice holds while its supervisor offers the slot (start times are whole seconds)
    got = clashes.settle(sups, {"a": 100.0, "b": 101.0}, placed=(), beating=())
    assert [c.kept_by for c in got] == ["b", "b"]
    assert clash_note(got) == ("supervisors b, a offer the same slots host-a:6700, 6701: a's "
                               "are left out")
    assert clashes.settle([_sup("a")], {}, placed=(), beating=()) == []
    assert clash_note([]) == ""


@pytest.mark.parametrize("scheduler", ["even", "multidim"])
def test_two_names_of_one_machine_are_one_host(scheduler: str, tmp_path: Any,
                                               caplog: Any) -> None:
    """storm.local.hostname 127.0.0.1 on one supervisor and localhost on the other: both
    offer the machine's same ports, and only one worker can bind each."""
    h = Harness(scheduler, tmp_path)
    try:
        caplog.set_level("INFO")
        h.register("sup-b", "localhost", PORTS, started=950)
        h.register("sup-a", "127.0.0.1", PORTS, started=900)     # started first: keeps them
        for _ in range(3):
            h.lifecycle.monitor_pass()
        if scheduler == "even":
            assert h.slots() == {WorkerSlot("sup-a", p) for p in PORTS}, h.slots()
        else:
            assert not h.slots() and h.state.get_storm(TID)["status"] == "pending"
        assert ("supervisors sup-a, sup-b offer the same slots 127.0.0.1/localhost:27701, "
                "27702: sup-b's are left out") in h.reason()
        lines = _clash_lines(caplog)
        assert len(lines) == 1 and "on host 127.0.0.1/localhost" in lines[0], lines
    finally:
        h.store.close()


def test_host_names_are_compared_by_the_machine_they_name() -> None:
    asked: list[str] = []
    keys = {"127.0.0.1": {"this machine"}, "vm": {"this machine"}, "node-c": {"10.0.0.3"},
            "node-c.lan": {"10.0.0.3", "fd00::3"}, "node-d": {"fd00::3"},
            "host-e": {"host-e"}}

    def key(host: str) -> frozenset[str]:
        asked.append(host)
        return frozenset(keys[host])
    machines = Machines(key)
    assert machines.labels(["vm", "127.0.0.1", "node-c", "host-e", "vm"]) == {
        "vm": "127.0.0.1/vm", "127.0.0.1": "127.0.0.1/vm", "node-c": "node-c",
        "host-e": "host-e"}
    # a name whose addresses meet two others' joins them into one machine
    assert set(machines.labels(["node-c", "node-d", "node-c.lan"]).values()) == {
        "node-c/node-c.lan/node-d"}
    # each name is resolved once while it is registered, again after it was gone
    assert sorted(asked) == ["127.0.0.1", "host-e", "node-c", "node-c.lan", "node-d", "vm"]
    machines.labels(["vm"])
    assert asked.count("vm") == 2
    clashes = SlotClashes(Machines(key)).settle(
        [_sup("a", host="127.0.0.1"), _sup("b", host="vm"), _sup("c", host="node-c")],
        {"a": 1.0, "b": 2.0}, placed=(), beating=())
    assert clashes == [Clash("127.0.0.1/vm", 6700, "a", ("b",)),
                       Clash("127.0.0.1/vm", 6701, "a", ("b",))]


def test_loopback_names_resolve_to_this_machine() -> None:
    assert host_key("localhost") == host_key("127.0.0.1") == {THIS_MACHINE}
    assert host_key("no-such-host.invalid") == {"no-such-host.invalid"}
