"""A LocalCluster rebalance whose new layout and whose restart as it was both fail: the
topology is down, says why, and the monitor starts it again once its components initialize."""
from __future__ import annotations

import threading
from typing import Any

import pytest

from squall import Bolt, LocalCluster, Spout, TopologyBuilder, TopologyError
from squall.testing import wait_until

LOCK = threading.Lock()
ACKED: list[int] = []
FAILS = [0]


class Numbers(Spout):
    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.n = 0

    def next_tuple(self) -> None:
        self.n += 1
        self.emit([self.n], tup_id=self.n)

    def ack(self, tup_id: Any) -> None:
        with LOCK:
            ACKED.append(tup_id)


class Flaky(Bolt):
    """Its next ``FAILS[0]`` initialize calls raise (a database briefly unreachable)."""

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        with LOCK:
            if FAILS[0] > 0:
                FAILS[0] -= 1
                raise ConnectionError("database briefly unreachable")

    def process(self, tup: Any) -> None:
        pass


def _acks() -> int:
    with LOCK:
        return len(ACKED)


def test_a_topology_whose_restart_after_a_failed_rebalance_fails_is_started_again(
        cluster: LocalCluster) -> None:
    # the restart as it was raised out of rebalance: no worker left, nothing retried, and
    # the topology info said active with no reason and no error
    ACKED.clear()
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers)
    b.set_bolt("flaky", Flaky).shuffle_grouping("numbers")
    cluster.submit_topology("flaky", {"topology.max.spout.pending": 10}, b.create_topology())
    wait_until(lambda: _acks() > 10, 30)
    with LOCK:
        FAILS[0] = 3        # the new layout, the restart as it was, the monitor's first try
    try:
        with pytest.raises(TopologyError, match=r"rebalance of 'flaky' failed .* the "
                                                r"topology is down, and is being restarted"):
            cluster.rebalance("flaky", num_workers=1)
        info = cluster.get_topology_info("flaky")
        assert info["num_workers"] == 0
        assert info["status_reason"].startswith("workers fail to start (local:1): component "
                                                "'flaky' (task ")
        assert "ConnectionError: database briefly unreachable" in info["status_reason"]
        assert "started again with backoff" in info["status_reason"]
        errors = info["errors"]["flaky"]
        assert errors and errors[-1]["start_failure"] is True
        assert "ConnectionError: database briefly unreachable" in errors[-1]["error"]
        storm = cluster.state.get_storm(info["id"])
        assert storm is not None and storm["status_reason"] == info["status_reason"]
        wait_until(lambda: cluster.get_topology_info("flaky")["num_workers"] == 1, 15,
                   message="the monitor did not start the topology again")
    finally:
        with LOCK:
            FAILS[0] = 0
    count = _acks()
    wait_until(lambda: _acks() > count + 10, 15, message="acking did not resume")
    info = cluster.get_topology_info("flaky")
    assert info["status"] == "active" and info["status_reason"] == ""
    assert cluster.state.get_storm(info["id"])["status_reason"] == ""
