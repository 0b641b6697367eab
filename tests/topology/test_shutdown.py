"""Leaving a LocalCluster stops what runs in it promptly, also with a slow bolt."""
from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from squall import Bolt, LocalCluster, Spout, TopologyBuilder
from squall.testing import wait_until

LOCK = threading.Lock()
CALLS: list[float] = []


class Endless(Spout):
    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.i = 0

    def next_tuple(self) -> None:
        self.i += 1
        self.emit([self.i], tup_id=self.i)


class Slow(Bolt):
    """0.2 s a tuple, on the worker's loop."""

    def process(self, tup: Any) -> None:
        with LOCK:
            CALLS.append(time.monotonic())
        time.sleep(0.2)         # the bolt's work: a call into something slow


def test_leaving_with_a_slow_bolt_is_prompt_and_stops_its_calls() -> None:
    # the bolt's first pass, unmeasured, took a whole batch (100 tuples, 20 s): shutdown gave
    # the loop 10 s, left it running and process() went on after the with block
    CALLS.clear()
    b = TopologyBuilder()
    b.set_spout("numbers", Endless)
    b.set_bolt("slow", Slow).shuffle_grouping("numbers")
    with LocalCluster() as cluster:
        tid = cluster.submit_topology("slow", {"topology.max.spout.pending": 1000},
                                      b.create_topology())
        wait_until(lambda: len(CALLS) >= 2, 30)
        start = time.monotonic()
    left = time.monotonic()
    assert left - start < 5, f"leaving the with block took {left - start:.1f} s"
    with LOCK:
        after = [t for t in CALLS if t > left]
    assert after == [], f"{len(after)} process() calls after the with block"
    assert not [t.name for t in threading.enumerate()
                if t.name.startswith(f"squall-worker-{tid}")]    # so no call can come later


RELEASE = threading.Event()
ENTERED = threading.Event()


class BlockedSpout(Spout):
    """On a thread of its own, blocks in its first next_tuple until the test releases it."""
    outputs = ["n"]
    dedicated_thread = True

    def next_tuple(self) -> None:
        ENTERED.set()
        RELEASE.wait(60)


def test_leaving_with_a_spout_blocked_in_a_call_is_prompt() -> None:
    # the kill waited up to 10 s for the spout to settle its deactivate, then the stop 10 s
    # more for its thread: twice the one timeout; then 10 s once; now LocalCluster's exit
    # bound (EXIT_SECS, 2 s)
    RELEASE.clear()
    ENTERED.clear()
    b = TopologyBuilder()
    b.set_spout("blocked", BlockedSpout)
    b.set_bolt("slow", Slow).shuffle_grouping("blocked")
    try:
        with LocalCluster() as cluster:
            cluster.submit_topology("blocked", {}, b.create_topology())
            wait_until(ENTERED.is_set, 30)
            start = time.monotonic()
        took = time.monotonic() - start
        assert took < 5, f"leaving the with block took {took:.1f} s"
    finally:
        RELEASE.set()


class SlowSpout(Spout):
    """0.1 s a next_tuple call, on the worker's loop, each call emitting one tuple."""
    outputs = ["n"]

    def next_tuple(self) -> None:
        time.sleep(0.1)         # the spout's work: a poll of something slow
        with LOCK:
            CALLS.append(time.monotonic())
        self.emit([1])


def test_leaving_with_a_slow_spout_is_prompt() -> None:
    # one pass called next_tuple for a whole batch while it emitted (64 calls, 6.4 s), and
    # the kill's deactivation waited for that pass
    CALLS.clear()
    b = TopologyBuilder()
    b.set_spout("slow", SlowSpout)
    b.set_bolt("sink", Slow).shuffle_grouping("slow")
    with LocalCluster() as cluster:
        cluster.submit_topology("slow-spout", {}, b.create_topology())
        wait_until(lambda: len(CALLS) >= 3, 30)
        start = time.monotonic()
    took = time.monotonic() - start
    assert took < 5, f"leaving the with block took {took:.1f} s"


STUCK = threading.Event()
IN_PROCESS = threading.Event()


class StuckBolt(Bolt):
    """Blocks in its first process() on the worker's loop until the test releases it."""

    def process(self, tup: Any) -> None:
        IN_PROCESS.set()
        STUCK.wait(60)


def test_kill_and_shutdown_with_a_timeout_end_within_it_while_a_bolt_is_stuck() -> None:
    # the kill waited 10 s for the loop held in process() to take the deactivation, then
    # the stop 1 s more; a timeout bounds both (the bolt goes on in its thread)
    STUCK.clear()
    IN_PROCESS.clear()
    b = TopologyBuilder()
    b.set_spout("numbers", Endless)
    b.set_bolt("stuck", StuckBolt).shuffle_grouping("numbers")
    try:
        cluster = LocalCluster()
        try:
            cluster.submit_topology("stuck", {}, b.create_topology())
            cluster.submit_topology("stuck-2w", {"topology.workers": 2}, b.create_topology())
            wait_until(IN_PROCESS.is_set, 30)
            start = time.monotonic()
            cluster.kill_topology("stuck", timeout=1)
            took = time.monotonic() - start
            assert took < 4, f"kill_topology(timeout=1) took {took:.1f} s"
            assert cluster.topologies() == ["stuck-2w"]
            start = time.monotonic()
            cluster.shutdown(timeout=1)
            took = time.monotonic() - start
            assert took < 5, f"shutdown(timeout=1) took {took:.1f} s"    # 2 workers
        finally:
            cluster.shutdown()
    finally:
        STUCK.set()


def test_a_bad_stop_timeout_is_one_clear_error() -> None:
    with LocalCluster() as cluster:
        for bad in (-1, "1", True, float("nan")):
            with pytest.raises(ValueError, match="timeout must be a number of seconds"):
                cluster.shutdown(timeout=bad)


CLEANED = threading.Event()


class FreeBolt(Bolt):
    """On a thread of its own, in no call at shutdown; its cleanup says when it ran."""
    dedicated_thread = True

    def process(self, tup: Any) -> None:
        pass

    def cleanup(self) -> None:
        CLEANED.set()


def _blocked_worker(conf: dict[str, Any]) -> Any:
    """A worker running BlockedSpout ("blocked") before FreeBolt ("free") in its executors."""
    from squall import config
    from squall.runtime.local_cluster import assign_even
    from squall.runtime.system import add_system_components
    from squall.runtime.worker import Worker
    conf = {**config.defaults(), "squall.transport": "local", "squall.state": "memory",
            "topology.name": "blocked", **conf}
    b = TopologyBuilder()
    b.set_spout("blocked", BlockedSpout)
    b.set_bolt("free", FreeBolt).shuffle_grouping("blocked")
    full = add_system_components(b.create_topology(), conf)
    (execs,) = assign_even(full, 1)
    return Worker(conf=conf, topology=full, topology_id="blocked-1-1", port=1,
                  executors=execs, host="local",
                  task_to_worker={t: ("local", 1) for s, e in execs for t in range(s, e + 1)})


def test_a_stopping_worker_cleans_up_free_components_before_waiting_on_a_stuck_one() -> None:
    # the stop waited on the blocked spout's thread first, in executor order, so the free
    # bolt's cleanup came only after the whole wait: never, once the supervisor's SIGKILL came
    RELEASE.clear()
    ENTERED.clear()
    CLEANED.clear()
    worker = _blocked_worker({})
    worker.build()
    assert [ex.component_id for ex in worker.executors
            if not ex.component_id.startswith("__")] == ["blocked", "free"]   # spout first
    worker.start()
    stopping = threading.Thread(target=worker.shutdown, kwargs={"timeout": 30}, daemon=True)
    try:
        worker.activate()
        wait_until(ENTERED.is_set, 30)
        stopping.start()
        wait_until(CLEANED.is_set, 5, message="the free bolt was not cleaned up while the "
                                               "spout was in its call")
        assert stopping.is_alive()          # still waiting for the spout's call
    finally:
        RELEASE.set()
        stopping.join(30)


def test_a_workers_stop_fits_in_its_supervisors_shutdown_sleep() -> None:
    from squall.runtime.worker import stop_budget
    key = "supervisor.worker.shutdown.sleep.secs"
    assert stop_budget({}) == 10.0 and stop_budget({key: None}) == 10.0
    assert stop_budget({key: 12}) == 10.0 and stop_budget({key: 30}) == 10.0
    assert stop_budget({key: 6}) == 4.0 and stop_budget({key: 3}) == 1.5
    assert stop_budget({key: 0}) == 0.0
    # a worker whose supervisor kills it 3 s after SIGTERM waits 1.5 s for a stuck call
    RELEASE.clear()
    ENTERED.clear()
    worker = _blocked_worker({key: 3})
    worker.build()
    worker.start()
    try:
        worker.activate()
        wait_until(ENTERED.is_set, 30)
        start = time.monotonic()
        worker.shutdown()
        took = time.monotonic() - start
        assert took < 2.9, f"the stop took {took:.1f} s"
    finally:
        RELEASE.set()


ORDER: list[str] = []
IN_CLEANUP = threading.Event()
END_CLEANUP = threading.Event()


class ClosingSpout(Endless):
    """Says when its close runs."""

    def close(self) -> None:
        with LOCK:
            ORDER.append("spout close")


class BlockingCleanup(Bolt):
    """Its cleanup blocks until the test ends it (a client's close that hangs)."""

    def process(self, tup: Any) -> None:
        pass

    def cleanup(self) -> None:
        with LOCK:
            ORDER.append("blocking cleanup")
        IN_CLEANUP.set()
        END_CLEANUP.wait(30)


class QuickCleanup(Bolt):
    def process(self, tup: Any) -> None:
        pass

    def cleanup(self) -> None:
        with LOCK:
            ORDER.append("quick cleanup")


def _blocking_cleanup_topology() -> Any:
    # task ids follow the sorted ids: the blocking bolt's executor comes first
    b = TopologyBuilder()
    b.set_spout("numbers", ClosingSpout)
    b.set_bolt("a-blocking", BlockingCleanup).shuffle_grouping("numbers")
    b.set_bolt("b-quick", QuickCleanup).shuffle_grouping("numbers")
    return b.create_topology()


@pytest.fixture
def _blocking_cleanup() -> Any:
    ORDER.clear()
    IN_CLEANUP.clear()
    END_CLEANUP.clear()
    yield
    END_CLEANUP.set()


@pytest.mark.usefixtures("_blocking_cleanup")
def test_a_cleanup_that_blocks_holds_up_neither_the_kill_nor_the_others_cleanup(
        caplog: pytest.LogCaptureFixture) -> None:
    # the executors were stopped one after another on the caller's thread: the blocked
    # cleanup held up the kill (its timeout covered only calls still running), the quick
    # bolt's cleanup and the spout's close, which came last
    with LocalCluster() as cluster:
        cluster.submit_topology("blocking-cleanup", {}, _blocking_cleanup_topology())
        wait_until(lambda: cluster.get_topology_info("blocking-cleanup")["components"]
                   .get("b-quick", {}).get("executed", 0) > 0, 30)
        start = time.monotonic()
        with caplog.at_level("WARNING", logger="squall.runtime.worker"):
            cluster.kill_topology("blocking-cleanup", timeout=1)
        took = time.monotonic() - start
        assert took < 4, f"kill_topology(timeout=1) took {took:.1f} s"
        assert IN_CLEANUP.is_set()
        with LOCK:
            order = list(ORDER)
        assert order[0] == "spout close", order     # close follows deactivate, first
        assert sorted(order[1:]) == ["blocking cleanup", "quick cleanup"], order
        warned = [r.getMessage() for r in caplog.records if "a-blocking" in r.getMessage()]
        assert len(warned) == 1 and "cleanup or close" in warned[0], warned
        assert "b-quick" not in warned[0]


@pytest.mark.usefixtures("_blocking_cleanup")
def test_leaving_with_a_cleanup_that_blocks_is_prompt() -> None:
    # README: leaving a LocalCluster waits at most about 2 s; a cleanup that blocked for
    # 20 s made it take 20 s
    with LocalCluster() as cluster:
        cluster.submit_topology("blocking-exit", {}, _blocking_cleanup_topology())
        wait_until(lambda: cluster.get_topology_info("blocking-exit")["components"]
                   .get("a-blocking", {}).get("executed", 0) > 0, 30)
        start = time.monotonic()
    took = time.monotonic() - start
    assert took < 5, f"leaving the with block took {took:.1f} s"
    with LOCK:
        assert "spout close" in ORDER and "quick cleanup" in ORDER, ORDER


class ExitingCleanup(Bolt):
    def process(self, tup: Any) -> None:
        pass

    def cleanup(self) -> None:
        raise SystemExit(2)


def test_a_sys_exit_in_a_cleanup_ends_only_its_own(caplog: pytest.LogCaptureFixture) -> None:
    ORDER.clear()
    b = TopologyBuilder()
    b.set_spout("numbers", ClosingSpout)
    b.set_bolt("a-exits", ExitingCleanup).shuffle_grouping("numbers")
    b.set_bolt("b-quick", QuickCleanup).shuffle_grouping("numbers")
    with LocalCluster() as cluster:
        cluster.submit_topology("exiting-cleanup", {}, b.create_topology())
        with caplog.at_level("ERROR", logger="squall.runtime.worker"):
            cluster.kill_topology("exiting-cleanup", timeout=5)
    with LOCK:
        assert sorted(ORDER) == ["quick cleanup", "spout close"], ORDER
    assert any("a-exits" in r.getMessage() and "SystemExit" in r.getMessage()
               for r in caplog.records)
