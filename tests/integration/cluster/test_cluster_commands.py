"""The topology commands against a real cluster: list, deactivate, activate, rebalance, kill,
and the errors users get for mistakes."""
from __future__ import annotations

import re
import time

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


class Stable:
    """Condition: ``read()`` returned the same value for ``quiet`` seconds (polled)."""

    def __init__(self, read, quiet: float = 1.5) -> None:
        self.read, self.quiet = read, quiet
        self.value, self.since = object(), time.monotonic()

    def __call__(self) -> bool:
        value = self.read()
        if value != self.value:
            self.value, self.since = value, time.monotonic()
            return False
        return time.monotonic() - self.since >= self.quiet


def test_list_deactivate_activate_rebalance_kill(squall_cluster, wordcount):
    c = squall_cluster
    c.start_nimbus()
    c.start_supervisor("sup1")
    c.start_supervisor("sup2")
    c.wait_ready(supervisors=2)
    c.squall("submit", c.wordcount_target, "--name", "wc", "-c", "topology.workers=2",
             "-c", "test.sentences=1000000", "-c", "test.emit.per.sec=50")
    acks = lambda: len(wordcount.read_acks(c.out_dir))  # noqa: E731
    c.wait(lambda: acks() > 20, 30, "no acks")
    assert c.listed() == {"wc": "active"}

    # a second topology with the same name is refused, the first keeps running
    dup = c.squall("submit", c.wordcount_target, "--name", "wc", check=False)
    assert dup.returncode == 2 and "already running" in dup.stderr
    assert dup.stderr.count("\n") == 1 and "Traceback" not in dup.stderr

    c.squall("deactivate", "wc")
    assert c.listed() == {"wc": "inactive"}
    c.wait(lambda: wordcount.spout_states(c.out_dir) == ["inactive", "inactive"], 15,
           "spouts were not deactivated")
    stable = Stable(acks)
    c.wait(stable, 20, "acks kept growing while inactive")
    frozen = stable.value

    c.squall("activate", "wc")
    assert c.listed() == {"wc": "active"}
    c.wait(lambda: acks() > frozen + 20, 20, "acks did not resume after activate")

    # rebalance onto one worker with one split executor
    c.squall("rebalance", "wc", "--workers", "1", "--executors", "split=1", "--wait", "0")
    c.wait(lambda: len(c.worker_slots("wc")) == 1, 30, "rebalance did not move to 1 worker")
    tid = c.state.find_topology_id("wc")
    base = c.state.get_storm(tid)
    assert base["num_workers"] == 1 and base["component_executors"]["split"] == 1
    assert c.listed() == {"wc": "active"}
    after = acks()
    c.wait(lambda: acks() > after + 20, 30, "no acks after the rebalance")
    # a word is counted (durably) before its sentence is acked, and never twice, across the move
    acked = set(wordcount.read_acks(c.out_dir))
    counted = wordcount.counted_words(c.out_dir)
    assert max(counted.values()) == 1
    assert {k for k in wordcount.expected_words(max(acked) + 1) if k[0] in acked} <= set(counted)
    bad = c.squall("rebalance", "wc", "--executors", "nosuch=2", check=False)
    assert bad.returncode == 2 and "nosuch" in bad.stderr

    # kill: gone from the list, state removed, every worker process gone
    c.squall("kill", "wc", "--wait", "0")
    c.wait(lambda: c.listed() == {}, 20, "topology still listed after kill")
    # (a worker beating as its topology goes may write its beat once more: nimbus's next
    # pass removes it)
    c.wait(lambda: c.state.assignment_ids() == [] and c.state.beat_topology_ids() == [], 10,
           "the killed topology's assignment or beats remain")
    c.wait(lambda: all(not d.worker_pids() for d in c.daemons), 20, "workers still running")

    missing = c.squall("kill", "nope", check=False)
    assert missing.returncode == 2
    assert missing.stderr.strip() == ("squall: error: no topology named 'nope' is running; "
                                      "running: none")


def test_waits_end_on_time_a_second_kill_replaces_the_wait_and_tasks_are_capped(squall_cluster):
    """Nimbus's periodic pass comes every 30 s here: a kill or rebalance wait of a few seconds
    ends on its own time, not at that pass. No supervisor: the topology stays pending, which
    is all these commands need."""
    c = squall_cluster
    nimbus = c.start_nimbus(overrides={"nimbus.monitor.freq.secs": 30})
    c.wait_ready(supervisors=0)
    c.squall("submit", c.wordcount_target, "--name", "mtp",
             "-c", "topology.max.task.parallelism=1")
    tid = c.state.find_topology_id("mtp")
    status = lambda: (c.state.get_storm(tid) or {}).get("status")  # noqa: E731
    # every user component at one executor and one task; the acker keeps its one per worker
    assert c.state.get_storm(tid)["component_executors"] == {
        "__acker": 1, "count": 1, "sentences": 1, "split": 1}
    row = c.squall("list").stdout.splitlines()[1].split()
    assert row[0] == "mtp" and row[4] == "4"                        # TASKS

    started = time.monotonic()
    c.squall("rebalance", "mtp", "--wait", "4", "--executors", "split=2")
    assert status() == "rebalancing"
    c.wait(lambda: status() == "pending", 15, "the rebalance did not end after its wait")
    assert time.monotonic() - started < 20
    assert c.state.get_storm(tid)["component_executors"]["split"] == 1      # capped

    c.squall("kill", "mtp", "--wait", "600")
    assert c.listed() == {"mtp": "killed"}
    refused = c.squall("activate", "mtp", check=False)
    assert refused.returncode == 2
    # the seconds left: 600 less the time two commands took (a busy host: a few seconds)
    assert re.fullmatch(r"squall: error: topology 'mtp' is being killed \((5[89]\d|600) s of "
                        r"its kill wait left\); only kill acts on it now \(kill --wait 0 ends "
                        r"the wait\)\n", refused.stderr), refused.stderr
    # reads answer through the kill wait (the UI's topology page shows it KILLED)
    client = c.client()
    try:
        assert client.topology_info("mtp")["status"] == "killed"
    finally:
        client.close()
    started = time.monotonic()
    c.squall("kill", "mtp", "--wait", "2")                          # replaces the 600 s
    c.wait(lambda: c.state.get_storm(tid) is None, 15, "the second kill did not end it")
    assert time.monotonic() - started < 20
    assert re.search(rf"killing topology {tid} in 2 s", nimbus.log_text())
