"""A worker's loop stuck in one pass (a component blocked in a call on the loop thread) is
found once that pass has lasted past ``supervisor.worker.timeout.secs``: reported once as an
error of the component, naming its task and where it waits; time before the loop's first pass
and passes under the limit do not count, nor does a component blocked on a thread of its own.
In a LocalCluster (no supervisor) the worker is not restarted and runs on once the call
returns."""
from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from squall import Bolt, LocalCluster, Spout, TopologyBuilder, config
from squall.runtime.local_cluster import assign_even
from squall.runtime.system import add_system_components
from squall.runtime.worker import Worker
from squall.testing import wait_until

TOTAL = 40
ENTERED = threading.Event()
RELEASE = threading.Event()
ACKED: set[int] = set()


@pytest.fixture(autouse=True)
def _fresh() -> Any:
    ENTERED.clear()
    RELEASE.clear()
    ACKED.clear()
    yield
    RELEASE.set()       # a test that failed leaves no call blocked


class Ids(Spout):
    outputs = ["i"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.n = 0
        self.replay: list[int] = []

    def next_tuple(self) -> None:
        if self.replay:
            i = self.replay.pop()
            self.emit([i], tup_id=i)
        elif self.n < TOTAL:
            self.n += 1
            self.emit([self.n], tup_id=self.n)

    def ack(self, tup_id: int) -> None:
        ACKED.add(tup_id)

    def fail(self, tup_id: int) -> None:
        self.replay.append(tup_id)


class Blocks(Bolt):
    """Blocks in its call on the 5th id until the test releases it."""

    def process(self, tup: Any) -> None:
        if tup.values[0] == 5 and not RELEASE.is_set():
            ENTERED.set()
            RELEASE.wait(60)


class BlocksOnItsThread(Blocks):
    dedicated_thread = True


def topology(bolt: type[Bolt]) -> Any:
    b = TopologyBuilder()
    b.set_spout("ids", Ids)
    b.set_bolt("waits", bolt).shuffle_grouping("ids")
    return b.create_topology()


def one_worker(bolt: type[Bolt]) -> Worker:
    conf = {**config.defaults(), "squall.transport": "local", "squall.state": "memory",
            "topology.name": "stuck"}
    full = add_system_components(topology(bolt), conf)
    (execs,) = assign_even(full, 1)
    return Worker(conf=conf, topology=full, topology_id="stuck-1-1", port=1, executors=execs,
                  task_to_worker={t: ("local", 1) for s, e in execs for t in range(s, e + 1)},
                  host="local")


def test_only_a_pass_longer_than_the_limit_is_stuck_and_it_is_reported_once() -> None:
    w = one_worker(Blocks)
    w.build()       # initialize: not a pass of the loop, however long it takes
    assert w.loop_stuck(30, now=time.monotonic() + 3600) is None
    w.start()
    try:
        w.activate()
        wait_until(ENTERED.is_set, 10)
        began = w.loop.pass_began()
        assert began is not None
        assert w.loop_stuck(30, now=began + 30) is None     # slow, not stuck: not past it
        assert not w.errors.recent()
        since = w.loop_stuck(30, now=began + 31)
        # when the pass began, on the wall clock
        assert since is not None and abs(since - (time.time() - (time.monotonic() - began))) < 1
        (task,) = [ts.task for ts in w.tasks.values() if ts.component_id == "waits"]
        (entry,) = w.errors.recent()["waits"]
        assert entry["task"] == task
        text = entry["error"]
        assert text.startswith(f"worker loop stuck in waits (task {task}) for 31 s"), text
        assert "dedicated_thread = True" in text
        assert ", in process\n    RELEASE.wait(60)" in text, text       # where it waits
        assert "in _run\n" in text and "in _bootstrap" not in text, text    # the loop's frames
        # asked again while the same pass goes on: still stuck, not reported again
        assert w.loop_stuck(30, now=began + 60) == pytest.approx(since, abs=1)
        assert len(w.errors.recent()["waits"]) == 1
        # calls handed to the stuck loop are queued, not waited for
        ran = threading.Event()
        t0 = time.monotonic()
        w.call_on_loop(ran.set, timeout=10)
        assert time.monotonic() - t0 < 5 and not ran.is_set()
        RELEASE.set()
        wait_until(ran.is_set, 10)
        assert w.loop_stuck(30) is None
        wait_until(lambda: ACKED == set(range(1, TOTAL + 1)), 30)
    finally:
        RELEASE.set()
        w.shutdown()
    assert w.loop_stuck(30, now=time.monotonic() + 3600) is None      # after the last pass


def test_a_local_cluster_reports_a_stuck_loop_and_runs_on_once_the_call_returns() -> None:
    with LocalCluster() as cluster:
        cluster.submit_topology("stuck", {"supervisor.worker.timeout.secs": 1},
                                topology(Blocks))
        wait_until(ENTERED.is_set, 10)
        (w,) = cluster.workers("stuck")
        errors = wait_until(lambda: cluster.get_topology_info("stuck")["errors"].get("waits"),
                            10)
        assert "worker loop stuck in waits (task " in errors[0]["error"]
        assert "RELEASE.wait(60)" in errors[0]["error"]
        assert w.loop_stuck(1) is not None          # still in that pass: still stuck
        RELEASE.set()
        wait_until(lambda: ACKED == set(range(1, TOTAL + 1)), 30)
        assert cluster.workers("stuck") == [w]       # no supervisor: the same worker
        assert len(cluster.get_topology_info("stuck")["errors"]["waits"]) == 1


def test_a_component_blocked_on_its_own_thread_does_not_stop_the_loop() -> None:
    with LocalCluster() as cluster:
        cluster.submit_topology("own-thread", {"supervisor.worker.timeout.secs": 1},
                                topology(BlocksOnItsThread))
        wait_until(ENTERED.is_set, 10)
        entered = time.monotonic()
        (w,) = cluster.workers("own-thread")
        passes = w.passes
        # past the limit, with the loop running passes all along
        wait_until(lambda: time.monotonic() - entered > 1.5 and w.passes > passes + 10, 10)
        assert w.loop_stuck(1) is None
        assert not cluster.get_topology_info("own-thread")["errors"]
        RELEASE.set()       # else leaving waits for its thread
