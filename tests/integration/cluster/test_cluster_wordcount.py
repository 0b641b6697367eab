"""End to end: submit → assignment → supervisors launch workers → exact word counts, and the
cluster state layout of API.md section 9."""
from __future__ import annotations

import pytest

from squall.testing.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

TOTAL = 300


def test_wordcount_runs_exactly_across_two_supervisors_and_two_workers(squall_cluster,
                                                                          wordcount):
    c = squall_cluster
    c.start_nimbus()
    s1 = c.start_supervisor("sup1")
    s2 = c.start_supervisor("sup2")
    c.wait_ready(supervisors=2)
    out = c.squall("submit", c.wordcount_target, "--name", "wc", "-c", "topology.workers=2",
                   "-c", f"test.sentences={TOTAL}", "-c", "topology.message.timeout.secs=60")
    assert "wc" in out.stdout

    # two workers, one on each supervisor
    slots = wait_until(lambda: len(c.worker_slots("wc")) == 2 and c.worker_slots("wc"), 30,
                       message=lambda: "no assignment on 2 workers\n" + c.logs_tail())
    assert len({node for node, _ in slots}) == 2

    expected = wordcount.expected_counts(TOTAL)
    wait_until(lambda: sorted(wordcount.read_acks(c.out_dir)) == list(range(TOTAL)), 60,
               message=lambda: "not every sentence was acked\n" + c.logs_tail())
    wait_until(lambda: wordcount.read_counts(c.out_dir) == expected, 20,
               message=lambda: f"counts differ: {wordcount.read_counts(c.out_dir)}\n{c.logs_tail()}")
    assert sorted(wordcount.read_acks(c.out_dir)) == list(range(TOTAL))   # acked exactly once

    # -- the ZooKeeper layout (API.md section 9) ------------------------------------------
    state = c.state
    tid = state.find_topology_id("wc")
    assert tid.startswith("wc-")
    base = state.get_storm(tid)
    assert {"name", "launch_time", "status", "status_reason", "num_workers",
            "component_executors", "owner"} <= set(base)
    assert base["name"] == "wc" and base["status"] == "active" and base["num_workers"] == 2
    assert base["component_executors"]["split"] == 2 and "__acker" in base["component_executors"]
    a = state.get_assignment(tid)
    assert {"code_dir", "node_host", "executor_node_port", "executor_start_time_secs",
            "worker_resources"} <= set(a)
    assert set(a["node_host"].values()) == {"127.0.0.1"}
    sups = state.supervisors()
    assert len(sups) == 2
    for info in sups.values():
        assert {"hostname", "time_secs", "uptime_secs", "used_ports", "ports",
                "resources"} <= set(info)
        assert all(isinstance(p, int) for p in info["ports"])
    assert sorted(p for info in sups.values() for p in info["used_ports"]) == \
        sorted(p for _, p in slots)
    beats = wait_until(lambda: len(state.worker_beats(tid)) == 2 and state.worker_beats(tid), 10)
    assert set(beats) == {f"{n}-{p}" for n, p in slots}
    for beat in beats.values():
        assert {"executors", "uptime_secs", "time_secs"} <= set(beat)
    nimbuses = state.nimbuses()
    assert list(nimbuses) == [f"127.0.0.1:{c.nimbus_ports[0]}"]
    assert state.store.children("/leader-lock")
    # local state (API.md section 9)
    assert (c.daemons[0].local_dir / "nimbus" / "stormdist" / tid / "stormcode.zip").is_file()
    for sup in (s1, s2):
        assert (sup.local_dir / "supervisor" / "localstate").is_file()
        assert (sup.local_dir / "supervisor" / "stormdist" / tid / "stormconf.json").is_file()
        assert list(sup.local_dir.glob("workers/*/heartbeats/*"))
        assert len(sup.worker_pids()) == 1

    # executor stats reach nimbus with the workers' next beats
    c.wait(lambda: c.client().topology_info("wc")["components"]["count"]["executed"]
           >= sum(expected.values()), 20, "nimbus's stats never showed every word executed")
    # and each worker's own counters: both loops ran, and batches crossed between them
    workers_info = c.client().topology_info("wc")["workers"]
    assert sorted(w["worker"] for w in workers_info) == sorted(f"{n}:{p}" for n, p in slots)
    for w in workers_info:
        assert w["host"] == "127.0.0.1" and w["loop_passes"] > 0
        assert w["sent_batches"] > 0 and w["received_batches"] > 0
