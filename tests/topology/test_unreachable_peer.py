"""A worker that accepts nothing from another (here: its loop hangs in a call, so it grants no
room) while tuples wait for it is reported by the worker that waits: one WARNING and one
``__worker`` error of the topology naming it (host:port and the tasks) and how long, and one
line when it accepts tuples again. Two workers in one LocalCluster (tuples cross the local
transport)."""
from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

from squall import Bolt, LocalCluster, Spout, TopologyBuilder
from squall.testing import wait_until

ARMED = threading.Event()       # the bolt hangs from its next tuple on
GO = threading.Event()          # ... until this is set


class Numbers(Spout):
    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.i = 0

    def next_tuple(self) -> None:
        self.emit([self.i])
        self.i += 1


class Hang(Bolt):
    def process(self, tup: Any) -> None:
        if ARMED.is_set():
            GO.wait(30)


def _worker_of(cluster: LocalCluster, name: str, component: str) -> int:
    return next(ex["worker"] for ex in cluster.get_topology_info(name)["executors"]
                if ex["component"] == component)


def _stall_errors(cluster: LocalCluster, name: str) -> list[dict[str, Any]]:
    return [e for e in cluster.get_topology_info(name)["errors"].get("__worker", [])
            if "accepted no tuples" in e["error"]]


def test_a_worker_that_accepts_nothing_is_reported_once_and_so_is_its_return(
        caplog: pytest.LogCaptureFixture) -> None:
    ARMED.clear()
    GO.clear()
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers)
    b.set_bolt("hang", Hang).shuffle_grouping("numbers")
    topology = b.create_topology()
    with caplog.at_level(logging.INFO, logger="squall.runtime.transfer"), \
            LocalCluster() as cluster:
        try:
            cluster.submit_topology("hung", {"topology.workers": 2,
                                             "topology.acker.executors": 0,
                                             "topology.executor.receive.buffer.size": 64,
                                             "topology.backpressure.stall.report.secs": 1},
                                    topology)
            spout, bolt = _worker_of(cluster, "hung", "numbers"), \
                _worker_of(cluster, "hung", "hang")
            assert spout != bolt, "the bolt must be in the other worker"
            ARMED.set()
            wait_until(lambda: _stall_errors(cluster, "hung"), timeout=20,
                       message="no error of the topology names the worker that hangs")
            (entry,) = _stall_errors(cluster, "hung")
            task = topology.tasks("hang")[0]
            assert entry["error"].startswith(
                f"worker local:{bolt} (task {task} of 'hang') has accepted no tuples from "
                f"worker local:{spout} for "), entry["error"]
            assert entry["port"] == spout
        finally:
            GO.set()
        wait_until(lambda: any("again" in r.getMessage() for r in caplog.records), timeout=20,
                   message="no line said the worker accepts tuples again")
        assert len(_stall_errors(cluster, "hung")) == 1
        records = list(caplog.records)      # before the stop, which the spout may outlast
    warned = [r.getMessage() for r in records
              if r.levelno == logging.WARNING and "accepted no tuples" in r.getMessage()]
    again = [r.getMessage() for r in records if "accepts tuples" in r.getMessage()]
    assert len(warned) == 1 and warned[0] == entry["error"]
    assert len(again) == 1 and again[0].startswith(
        f"worker local:{bolt} accepts tuples from worker local:{spout} again, after ")
