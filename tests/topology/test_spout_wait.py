"""An idle spout on the loop rests ``topology.sleep.spout.wait.strategy.time.ms`` after a
``next_tuple`` that emitted nothing, and so does its worker: the loop sleeps until the first
task's rest ends (or its next timer, or a wake-up), not one millisecond at a time."""
from __future__ import annotations

import threading
import time
from typing import Any

from squall import Bolt, LocalCluster, Spout, TopologyBuilder
from squall.runtime.loop import TIMER_SECS
from squall.testing import wait_until

CALLS = {"next_tuple": 0}
GOT: list[Any] = []
GO = threading.Event()


class Quiet(Spout):
    """Emits nothing until GO is set, then one tuple."""

    outputs = ["n"]

    def next_tuple(self) -> None:
        CALLS["next_tuple"] += 1
        if GO.is_set():
            GO.clear()
            self.emit([1])


class Sink(Bolt):
    def process(self, tup: Any) -> None:
        GOT.append(tup.values[0])


def test_an_idle_spouts_worker_sleeps_out_the_spout_wait(cluster: LocalCluster) -> None:
    CALLS["next_tuple"] = 0
    b = TopologyBuilder()
    b.set_spout("quiet", Quiet)
    b.set_bolt("sink", Sink).shuffle_grouping("quiet")
    cluster.submit_topology("quiet", {"topology.sleep.spout.wait.strategy.time.ms": 200},
                            b.create_topology())
    worker, = cluster.workers("quiet")
    wait_until(lambda: CALLS["next_tuple"] > 0, timeout=10)
    passes, waits = worker.passes, worker.counters()["idle_waits"]
    started = time.monotonic()
    wait_until(lambda: worker.passes >= passes + 100, timeout=10)
    took = time.monotonic() - started
    rate = (worker.counters()["idle_waits"] - waits) / took
    # the timers' cadence at most (it was one wait a millisecond: about 1,000 a second)
    assert rate <= 1.5 / TIMER_SECS, f"idle waits per second {rate:.0f}"
    # the spout is still asked, once per wait
    calls = CALLS["next_tuple"]
    wait_until(lambda: CALLS["next_tuple"] >= calls + 2, timeout=5)
    assert CALLS["next_tuple"] - calls <= 2 + (time.monotonic() - started) / 0.2 + 2
    GOT.clear()
    GO.set()
    wait_until(lambda: GOT == [1], timeout=5)
