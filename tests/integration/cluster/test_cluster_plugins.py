"""The pluggable parts on a real cluster: word count over every network transport, and the
multi-dimensional scheduler (pending with a reason, scheduled when capacity appears; its
rebalance with exact results: test_rebalance_exact.py). Metrics consumers:
test_cluster_metrics.py."""
from __future__ import annotations

import pytest

from squall.testing.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

TOTAL = 200


def _exact(c, wordcount, total: int, timeout: float = 60) -> None:
    wait_until(lambda: sorted(wordcount.read_acks(c.out_dir)) == list(range(total)), timeout,
               message=lambda: "not every sentence was acked\n" + c.logs_tail())
    expected = wordcount.expected_counts(total)
    wait_until(lambda: wordcount.read_counts(c.out_dir) == expected, 20,
               message=lambda: f"counts differ: {wordcount.read_counts(c.out_dir)}\n{c.logs_tail()}")


@pytest.mark.parametrize("transport", ["zmq", "nng", "grpc"])
def test_wordcount_over_each_transport(squall_cluster, wordcount, transport):
    c = squall_cluster
    c.start_nimbus()
    c.start_supervisor("sup1")
    c.start_supervisor("sup2")
    c.wait_ready(supervisors=2)
    c.squall("submit", c.wordcount_target, "--name", "wc", "-c", "topology.workers=2",
             "-c", f"squall.transport={transport}", "-c", f"test.sentences={TOTAL}")
    slots = wait_until(lambda: len(c.worker_slots("wc")) == 2 and c.worker_slots("wc"), 30,
                       message=lambda: "no assignment on 2 workers\n" + c.logs_tail())
    assert len({node for node, _ in slots}) == 2      # tuples cross between processes
    _exact(c, wordcount, TOTAL)
    logs = "".join(p.read_text(errors="replace") for d in c.daemons
                   for p in d.local_dir.glob("logs/*.log"))
    assert "failed back for replay" not in logs


def test_multidim_pending_until_capacity_then_exact_counts(squall_cluster, wordcount):
    c = squall_cluster
    c.start_nimbus(overrides={"squall.scheduler": "multidim"})
    # a supervisor with memory for one executor only: the topology cannot fit
    c.start_supervisor("small", overrides={"supervisor.memory.slots": 1,
                                           "supervisor.cpu.slots": 8,
                                           "supervisor.net.slots": 8})
    c.wait_ready(supervisors=1)
    c.squall("submit", c.wordcount_target, "--name", "wc", "-c", "topology.workers=2",
             "-c", f"test.sentences={TOTAL}")
    tid = wait_until(lambda: c.state.find_topology_id("wc"), 10)
    storm = wait_until(lambda: (c.state.get_storm(tid) or {}).get("status") == "pending"
                       and c.state.get_storm(tid), 20, message=lambda: "not pending\n" + c.logs_tail())
    assert "memory" in storm["status_reason"]
    assert c.listed() == {"wc": "pending"}
    assert not c.assignment("wc") or not c.assignment("wc").get("executor_node_port")

    # capacity appears: the topology is scheduled and runs to exact counts
    c.start_supervisor("big", overrides={"supervisor.memory.slots": 16,
                                         "supervisor.cpu.slots": 16,
                                         "supervisor.net.slots": 16})
    wait_until(lambda: (c.state.get_storm(tid) or {}).get("status") == "active", 30,
               message=lambda: "never scheduled\n" + c.logs_tail())
    _exact(c, wordcount, TOTAL)
