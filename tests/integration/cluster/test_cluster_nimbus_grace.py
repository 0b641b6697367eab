"""nimbus.supervisor.timeout.secs: after nimbus's ZooKeeper session expired (it leads again
on a new one), a supervisor that is not registered keeps its executors for that long, so an
outage that every daemon lived through restarts no worker."""
from __future__ import annotations

import logging

import pytest

from squall import config
from squall.daemon.nimbus import Nimbus

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


def test_after_a_nimbus_session_expiry_no_worker_is_restarted(squall_cluster, wordcount,
                                                              expire_session, caplog):
    c = squall_cluster
    conf = {**config.defaults(), **c.conf, "storm.local.dir": str(c.tmp / "innimbus"),
            "nimbus.port": c.nimbus_ports[0], "nimbus.supervisor.timeout.secs": 60}
    nimbus = Nimbus(conf)
    nimbus.start()
    try:
        sup = c.start_supervisor("sup1")
        c.wait_ready(supervisors=1)
        c.squall("submit", c.wordcount_target, "--name", "wc", "-c", "topology.workers=2",
                 "-c", "test.sentences=100000", "-c", "test.emit.per.sec=30")
        c.wait(lambda: len(sup.worker_pids()) == 2, 30, "workers did not start")
        c.wait(lambda: len(wordcount.read_acks(c.out_dir)) > 20, 30, "no acks")
        placed = c.assignment("wc")["executor_node_port"]
        pids = sorted(sup.worker_pids())

        with caplog.at_level(logging.INFO, logger="squall"):
            expire_session(nimbus.store)
            c.wait(lambda: "new ZooKeeper session" in caplog.text and nimbus.is_leader, 30,
                   "nimbus did not lead again on a new session")
            # the supervisor is away (as if its own session were still being re-established):
            # its workers run on, and nimbus waits for it instead of moving their executors
            sup.kill9()
            c.wait(lambda: not c.state.supervisor_ids(), 30, "the supervisor stayed registered")
            c.wait(lambda: "waits up to" in caplog.text, 20, "nimbus did not wait for it")
            before = len(wordcount.read_acks(c.out_dir))
            c.wait(lambda: len(wordcount.read_acks(c.out_dir)) > before + 30, 30,
                   "the topology stopped while its supervisor was away")
        assert c.assignment("wc")["executor_node_port"] == placed

        again = c.start_supervisor("sup1", ports=sup.ports)
        c.wait(lambda: again.log_text().count("adopted worker") == 2, 30, "workers not adopted")
        before = len(wordcount.read_acks(c.out_dir))
        c.wait(lambda: len(wordcount.read_acks(c.out_dir)) > before + 30, 30, "topology stalled")
        assert sorted(again.worker_pids()) == pids        # no worker was restarted
        assert c.assignment("wc")["executor_node_port"] == placed
    finally:
        nimbus.stop()
