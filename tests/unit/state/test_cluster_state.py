"""ClusterState: API.md section 9's layout and typed helpers, on the memory store."""
from __future__ import annotations

import json

import pytest

from squall.errors import StateError
from squall.state.cluster_state import ERRORS_KEPT, ClusterState, parse_beat_key
from squall.state.memory import MemoryServer, MemoryStateStore


@pytest.fixture
def server():
    return MemoryServer()


@pytest.fixture
def state(server):
    store = MemoryStateStore({}, server=server)
    store.start()
    cs = ClusterState(store)
    cs.setup()
    yield cs
    store.close()


def test_setup_creates_every_top_level_node_and_is_idempotent(state):
    state.setup()
    assert state.store.children("/") == sorted(
        ["assignments", "errors", "leader-lock", "logconfigs", "nimbuses", "storms",
         "supervisors", "workerbeats"])


def test_storm_base_round_trips_as_utf8_json(state):
    base = {"name": "wörds", "launch_time": 1, "status": "active", "status_reason": "",
            "num_workers": 2, "component_executors": {"split": 2}, "owner": "me"}
    state.set_storm("wc-1-100", base)
    raw = state.store.get("/storms/wc-1-100")
    assert json.loads(raw.decode("utf-8")) == base
    assert state.get_storm("wc-1-100") == base
    assert state.find_topology_id("wörds") == "wc-1-100"
    assert state.update_storm("wc-1-100", status="inactive")["status"] == "inactive"
    assert state.update_storm("nope-1-1", status="x") is None
    state.update_storm("wc-1-100", status="killed")
    assert state.find_topology_id("wörds") is None     # a killed topology is not live


def test_corrupt_node_reads_as_none_instead_of_failing(state):
    state.store.put("/storms/bad-1-1", b"\xff not json")
    state.store.put("/storms/list-1-1", b"[1, 2]")
    assert state.get_storm("bad-1-1") is None and state.get_storm("list-1-1") is None
    assert state.storms() == {}


def test_assignments_and_whole_topology_removal(state):
    state.set_storm("t-1-1", {"name": "t", "status": "active"})
    state.set_assignment("t-1-1", {"executor_node_port": {"[1, 1]": ["s1", 6700]}})
    state.write_worker_beat("t-1-1", "s1", 6700, {"time_secs": 5})
    state.report_error("t-1-1", "split", {"error": "boom"})
    state.set_log_config("t-1-1", {"loggers": {"ROOT": {"level": "DEBUG", "expires": 0}}})
    assert state.get_log_config("t-1-1") == {"loggers": {"ROOT": {"level": "DEBUG",
                                                                  "expires": 0}}}
    assert state.assignments() == {"t-1-1": {"executor_node_port": {"[1, 1]": ["s1", 6700]}}}
    state.remove_topology("t-1-1")
    for top in ("/storms", "/assignments", "/workerbeats", "/errors", "/logconfigs"):
        assert state.store.children(top) == []


def test_a_kill_drops_the_trident_records_of_groups_whose_states_died_with_it(state):
    """What Trident keeps under the topology's name survives its kill only for the batch
    groups with a state that outlives the topology; the name's node goes with the last."""
    def group(name, key, outlives, streams):
        record = {"committed": 4, "topology_id": f"{name}-1-1", "streams": streams}
        if outlives is not None:
            record["outlives"] = outlives
        state.store.put(f"/trident/{name}/coordinators/{key}", json.dumps(record).encode())
        for s in streams:
            state.store.put(f"/trident/{name}/spouts/{s}/p0", b'{"4": 1}')

    state.set_storm("mixed-1-1", {"name": "mixed", "status": "killed"})
    group("mixed", "mem", False, ["mem"])
    group("mixed", "redis", True, ["redis"])
    group("mixed", "old", None, ["old"])             # written before the field: kept
    state.set_storm("memory-1-1", {"name": "memory", "status": "killed"})
    group("memory", "a%2Bb", False, ["a", "b"])
    state.remove_topology("mixed-1-1")
    state.remove_topology("memory-1-1")
    assert state.store.children("/trident/mixed/coordinators") == ["old", "redis"]
    assert state.store.children("/trident/mixed/spouts") == ["old", "redis"]
    assert state.trident_names() == ["mixed"]


def test_supervisor_nodes_are_ephemeral(server, state):
    other = MemoryStateStore({}, server=server)
    other.start()
    ClusterState(other).register_supervisor("sup-a", {"hostname": "h", "ports": [6700]})
    assert state.supervisors() == {"sup-a": {"hostname": "h", "ports": [6700]}}
    other.close()
    assert state.supervisor_ids() == []


def test_worker_beats_keyed_by_node_dash_port(state):
    state.write_worker_beat("t-1-1", "sup-with-dashes", 6701, {"time_secs": 1, "executors": {}})
    assert list(state.worker_beats("t-1-1")) == ["sup-with-dashes-6701"]
    assert parse_beat_key("sup-with-dashes-6701") == ("sup-with-dashes", 6701)
    state.remove_worker_beat("t-1-1", "sup-with-dashes", 6701)
    assert state.worker_beats("t-1-1") == {}


def wide_beat(executors: int) -> dict:
    """A beat shaped like a worker's: about 1 KB of stats per executor."""
    windows = ("600", "10800", "86400", ":all-time")

    def window(i: int, w: str) -> dict:
        k = i * 7 + len(w)
        return {"emitted": {"default": k * 13}, "transferred": {"default": k * 13},
                "acked": {"spout:default": k * 11}, "failed": {"spout:default": k % 5},
                "executed": {"spout:default": k * 11},
                "process_latency_ms": {"spout:default": round(k / 977, 3)},
                "execute_latency_ms": {"spout:default": round(k / 811, 3)}}
    return {"executors": {f"[{i}, {i}]": {"component": "wide", "type": "bolt",
                                          **{w: window(i, w) for w in windows}}
                          for i in range(1, executors + 1)},
            "uptime_secs": 60, "time_secs": 1_800_000_000}


def test_a_beat_of_thousands_of_executors_is_written_and_read_back(state):
    beat = wide_beat(3000)      # about 3.2 MB of JSON, over the store's value limit
    state.write_worker_beat("t-1-1", "s1", 6700, beat)
    assert state.worker_beats("t-1-1") == {"s1-6700": beat}


def test_a_small_beat_stays_plain_json(state):
    beat = wide_beat(10)
    state.write_worker_beat("t-1-1", "s1", 6700, beat)
    assert json.loads(state.store.get("/workerbeats/t-1-1/s1-6700")) == beat


def test_a_beat_too_large_even_compressed_names_its_size_and_executors(state):
    import random
    beat = {"executors": {"[1, 1]": {"noise": random.Random(0).randbytes(1_200_000).hex()},
                          "[2, 2]": {}}}
    with pytest.raises(StateError, match=r"worker beat of 2 executors is \d+ bytes .*"
                                         r"topology.workers"):
        state.write_worker_beat("t-1-1", "s1", 6700, beat)


def test_a_beat_node_holding_garbage_reads_as_no_beat(state):
    state.store.create("/workerbeats/t-1-1", b"")
    state.store.create("/workerbeats/t-1-1/s1-6700", b"\x78garbage")
    assert state.worker_beats("t-1-1") == {}


def test_errors_are_sequential_and_only_the_newest_ten_are_kept(state):
    for i in range(ERRORS_KEPT + 5):
        state.report_error("t-1-1", "count", {"error": f"e{i}", "time_secs": i})
    names = state.store.children("/errors/t-1-1/count")
    assert len(names) == ERRORS_KEPT and all(n.startswith("e") for n in names)
    kept = state.errors("t-1-1")["count"]
    assert [e["error"] for e in kept] == [f"e{i}" for i in range(5, ERRORS_KEPT + 5)]


def test_nimbus_registration_and_leader_election(server, state):
    state.register_nimbus("127.0.0.1:6627", {"port": 6627})
    assert state.nimbuses() == {"127.0.0.1:6627": {"port": 6627}}
    election = state.leader_election("127.0.0.1:6627")
    seen = []
    assert election.run(lambda: seen.append(election.contenders()))
    assert seen == [["127.0.0.1:6627"]]


@pytest.mark.parametrize("bad", ["", "a/b", "..", "."])
def test_ids_that_would_escape_their_node_are_refused(state, bad):
    with pytest.raises(StateError):
        state.set_storm(bad, {})
