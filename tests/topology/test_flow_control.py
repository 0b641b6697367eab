"""Backpressure per destination: a slow bolt's queue stays under twice its capacity, the
spout feeding it runs steadily (no stop-go), nothing is lost, and a slow bolt slows only what
feeds it. Two workers in one LocalCluster (tuples cross the local transport), and one."""
from __future__ import annotations

import statistics
import threading
import time
from typing import Any

import pytest

from squall import Bolt, LocalCluster, Spout, TopologyBuilder
from squall.testing import wait_until

LOCK = threading.Lock()
ACKED: set[int] = set()
FAILED: list[int] = []
DONE: list[int] = []
CAP = 500


class Numbers(Spout):
    """Emits ``app.n`` tracked tuples as fast as it may (``app.n`` 0: without end)."""

    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.i = 0
        self.n = int(conf.get("app.n") or 0)

    def next_tuple(self) -> None:
        if not self.n or self.i < self.n:
            self.emit([self.i], tup_id=self.i)
            self.i += 1

    def ack(self, tup_id: Any) -> None:
        with LOCK:
            ACKED.add(tup_id)

    def fail(self, tup_id: Any) -> None:
        with LOCK:
            FAILED.append(tup_id)


class Slow(Bolt):
    def process(self, tup: Any) -> None:
        end = time.perf_counter() + 0.0002      # 0.2 ms of work per tuple (not a wait)
        while time.perf_counter() < end:
            pass
        with LOCK:
            DONE.append(tup["n"])


class Quick(Bolt):
    outputs = ["n"]         # declared, never emitted

    def process(self, tup: Any) -> None:
        pass


def _executor(cluster: LocalCluster, name: str, component: str) -> dict[str, Any]:
    return next(ex for ex in cluster.get_topology_info(name)["executors"]
                if ex["component"] == component)


def _reset() -> None:
    with LOCK:
        ACKED.clear()
        FAILED.clear()
        DONE.clear()


def _rates(cluster: LocalCluster, name: str, component: str, windows: int,
           secs: float) -> list[int]:
    """What ``component`` emitted in each of ``windows`` consecutive windows of ``secs``."""
    out = []
    last = _executor(cluster, name, component)["emitted"]
    for _ in range(windows):
        deadline = time.monotonic() + secs
        wait_until(lambda d=deadline: time.monotonic() >= d, timeout=secs + 1, interval=0.02)
        now = _executor(cluster, name, component)["emitted"]
        out.append(now - last)
        last = now
    return out


def _paced(cluster: LocalCluster, name: str, component: str, windows: int,
           per: int) -> list[int]:
    """What ``component`` emitted while the Slow bolt executed each of ``windows``
    consecutive runs of ``per`` tuples: windows measured in the bolt's progress, not in
    time, so a busy host that slows the bolt does not read as the spout standing still."""
    out = []
    last = _executor(cluster, name, component)["emitted"]
    for _ in range(windows):
        target = len(DONE) + per
        wait_until(lambda t=target: len(DONE) >= t, timeout=60, interval=0.02,
                   message=lambda: f"the bolt executed {len(DONE)} tuples of {target}")
        now = _executor(cluster, name, component)["emitted"]
        out.append(now - last)
        last = now
    return out


def test_a_slow_bolts_queue_stays_bounded_and_its_spout_runs_steadily() -> None:
    _reset()
    n = 25000
    b = TopologyBuilder()
    b.set_spout("fast", Numbers, config={"app.n": n})
    b.set_bolt("slow", Slow).shuffle_grouping("fast")
    with LocalCluster() as cluster:
        cluster.submit_topology("steady", {"topology.workers": 2,
                                           "topology.executor.receive.buffer.size": CAP,
                                           "topology.max.spout.pending": 10 * n},
                                b.create_topology())
        assert _executor(cluster, "steady", "fast")["worker"] != \
            _executor(cluster, "steady", "slow")["worker"], "the bolt must be in the other worker"
        # saturated: the bolt's queue passes its high watermark and the spout is held back
        wait_until(lambda: _executor(cluster, "steady", "slow")["queued_peak"] > 0.9 * CAP
                   and _executor(cluster, "steady", "fast")["paused"] > 0, timeout=30)
        # the spout's rate in 400 ms windows while the bolt works through the input: it
        # never stops for a window (the worker-wide throttle stopped it until a queue 20
        # times its capacity had drained: 2 s at this bolt's speed). Both workers share this
        # process's GIL with a bolt that spins, so a window shorter than a few hundred ms
        # would also catch a collector's pass or a late switch of the interpreter
        windows = _rates(cluster, "steady", "fast", 6, 0.4)
        assert _executor(cluster, "steady", "fast")["emitted"] < n, \
            "the spout finished before the windows were measured"
        assert min(windows) > 0, windows
        assert min(windows) >= statistics.median(windows) / 4, windows
        wait_until(lambda: len(ACKED) == n, timeout=60, message=lambda: f"{len(ACKED)} acked")
        peak = _executor(cluster, "steady", "slow")["queued_peak"]
    assert peak <= 2 * CAP, f"the bolt's queue held {peak} tuples (capacity {CAP})"
    assert sorted(DONE) == list(range(n)) and not FAILED


class NumbersOnThread(Numbers):
    dedicated_thread = True


@pytest.mark.parametrize("spout", [Numbers, NumbersOnThread], ids=["loop", "own-thread"])
@pytest.mark.parametrize("workers", [2, 1], ids=["bolt-in-another-worker", "same-worker"])
def test_at_the_default_queue_size_a_saturated_spout_keeps_to_its_bolts_pace(
        workers: int, spout: type) -> None:
    """The default receive queue (32768) and a bolt of 0.2 ms a tuple: the spout is paced by
    what the bolt takes. On and off at the watermarks, it sent a queue's worth in 0.2 s and
    then stopped for up to 6 s (two workers), or for most of each second (one worker). A
    spout on its own thread ran up to 8192 calls ahead of the loop: the queue went past its
    capacity, the spout sat still for seconds, and its stats never said it was held back."""
    _reset()
    b = TopologyBuilder()
    b.set_spout("fast", spout)
    b.set_bolt("slow", Slow).shuffle_grouping("fast")
    with LocalCluster() as cluster:
        cluster.submit_topology("paced", {"topology.workers": workers}, b.create_topology())
        cap = 32768
        wait_until(lambda: _executor(cluster, "paced", "slow")["queued_peak"] > 0.9 * cap
                   and _executor(cluster, "paced", "fast")["paused"] > 0, timeout=30)
        if spout is Numbers:
            # half-second windows: each holds about 2,500 tuples at the bolt's pace
            windows = _rates(cluster, "paced", "fast", 8, 0.5)
            assert min(windows) > 0, windows
            assert min(windows) >= statistics.median(windows) / 3, windows
        else:
            # it moves in steps (2,048 calls seen, twice FEED_AHEAD), however long the bolt,
            # slowed by a busy host, takes to work through one: so the windows are the bolt's
            # runs of two steps' worth of tuples, and the spout steps in every one (it sat
            # still while the bolt worked through most of a queue's worth)
            windows = _paced(cluster, "paced", "fast", 8, 2 * 2048)
            assert min(windows) > 0, windows
        peak = _executor(cluster, "paced", "slow")["queued_peak"]
    assert peak <= 2 * cap, f"the bolt's queue and what waited for it held {peak} tuples"
    if spout is NumbersOnThread:        # about the high watermark, and said so
        assert peak <= cap, f"the bolt's queue held {peak} tuples (capacity {cap})"
    assert not FAILED


def test_a_slow_bolt_slows_only_what_feeds_it() -> None:
    _reset()
    # LocalCluster places executors round-robin by component id: worker A runs both spouts
    # and the quick bolt, worker B the slow bolt (and an idle one)
    b = TopologyBuilder()
    b.set_spout("a_to_slow", Numbers)
    b.set_bolt("b_slow", Slow).shuffle_grouping("a_to_slow")
    b.set_spout("c_to_quick", Numbers)
    b.set_bolt("d_idle", Quick).shuffle_grouping("e_quick")
    b.set_bolt("e_quick", Quick).shuffle_grouping("c_to_quick")
    with LocalCluster() as cluster:
        cluster.submit_topology("apart", {"topology.workers": 2, "topology.acker.executors": 0,
                                          "topology.executor.receive.buffer.size": CAP},
                                b.create_topology())
        where = {c: _executor(cluster, "apart", c)["worker"]
                 for c in ("a_to_slow", "b_slow", "c_to_quick", "e_quick")}
        assert where["a_to_slow"] == where["c_to_quick"] == where["e_quick"] != \
            where["b_slow"], where
        wait_until(lambda: _executor(cluster, "apart", "a_to_slow")["paused"] > 50, timeout=30,
                   message="the slow bolt's spout was never held back")
        quick = _executor(cluster, "apart", "c_to_quick")["emitted"]
        slow = _executor(cluster, "apart", "a_to_slow")["emitted"]
        wait_until(lambda: _executor(cluster, "apart", "c_to_quick")["emitted"] > quick + 20000,
                   timeout=30, message="the other spout stopped too")
        assert _executor(cluster, "apart", "c_to_quick")["paused"] == 0
        # the slow bolt's spout goes on at the bolt's pace (0.2 ms a tuple), far slower
        assert (_executor(cluster, "apart", "a_to_slow")["emitted"] - slow
                < _executor(cluster, "apart", "c_to_quick")["emitted"] - quick)
        assert _executor(cluster, "apart", "b_slow")["queued_peak"] <= 2 * CAP
