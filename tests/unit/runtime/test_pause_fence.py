"""A worker process paused as a whole (SIGSTOP, a frozen host) must not run its executors when
it resumes until its main thread has read the assignment again (nimbus may have moved them
meanwhile: the old instance would process tuples its new one processes too); a loop merely slow
in one pass (the process runs on) is not fenced; and a pass that began before a pause is not
reported stuck for the time the process was paused.

The pause is injected: ``time.monotonic`` jumps forward for every thread at once, as it does
for a process that resumes; the test drives the watcher (the worker process's local heartbeat
thread) through ``Worker.pauses``."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from squall import Bolt, Spout, TopologyBuilder, config
from squall.runtime.local_cluster import assign_even
from squall.runtime.pause import PauseWatch, pause_threshold
from squall.runtime.system import add_system_components
from squall.runtime.worker import Worker

REAL = time.monotonic
TOTAL = 200
LIMIT = [TOTAL]     # the spout emits up to this id
CALLS: list[int] = []
ACKED: set[int] = set()
FAILED: list[int] = []
RELEASE = threading.Event()
ENTERED = threading.Event()
PROCESSED: list[int] = []


def until(cond: Callable[[], bool], secs: float = 10.0) -> None:
    """Wait for ``cond`` on the real clock (the test moves ``time.monotonic``)."""
    deadline = REAL() + secs
    step = threading.Event()
    while not cond():
        assert REAL() < deadline, "condition not met in time"
        step.wait(0.005)


class Ids(Spout):
    outputs = ["i"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.n = 0

    def next_tuple(self) -> None:
        CALLS.append(1)
        if self.n < LIMIT[0]:
            self.n += 1
            self.emit([self.n], tup_id=self.n)

    def ack(self, tup_id: int) -> None:
        ACKED.add(tup_id)

    def fail(self, tup_id: int) -> None:
        FAILED.append(tup_id)


class Slow(Bolt):
    """Slows its 5th tuple (blocks until released): a busy or stuck pass of the loop."""

    def process(self, tup: Any) -> None:
        if tup.values[0] == 5 and not RELEASE.is_set():
            ENTERED.set()
            RELEASE.wait(30)


@pytest.fixture(autouse=True)
def _fresh() -> Any:
    CALLS.clear()
    LIMIT[0] = TOTAL
    ACKED.clear()
    FAILED.clear()
    RELEASE.clear()
    ENTERED.clear()
    PROCESSED.clear()
    yield
    RELEASE.set()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """``time.monotonic`` plus an offset the test raises to pause 'the process'."""
    offset = [0.0]
    monkeypatch.setattr(time, "monotonic", lambda: REAL() + offset[0])
    return offset


class ThreadedIds(Ids):
    dedicated_thread = True


class ThreadedSink(Bolt):
    dedicated_thread = True

    def process(self, tup: Any) -> None:
        PROCESSED.append(tup.values[0])


def worker(spout: type = Ids, bolt: type = Slow, **conf: Any) -> Worker:
    b = TopologyBuilder()
    b.set_spout("ids", spout)
    b.set_bolt("slow", bolt).shuffle_grouping("ids")
    full_conf = {**config.defaults(), "squall.transport": "local", "squall.state": "memory",
                 "topology.name": "paused", "topology.message.timeout.secs": 600, **conf}
    full = add_system_components(b.create_topology(), full_conf)
    (execs,) = assign_even(full, 1)
    return Worker(conf=full_conf, topology=full, topology_id="paused-1-1", port=1,
                  executors=execs, host="local",
                  task_to_worker={t: ("local", 1) for s, e in execs for t in range(s, e + 1)})


def on_loop(w: Worker) -> None:
    """Have the loop run a command and wait until it did (a fenced loop runs them too)."""
    ran = threading.Event()
    w.loop.submit(ran.set)
    until(ran.is_set)


def test_a_paused_process_runs_no_executor_until_its_assignment_is_read_again(
        clock: list[float]) -> None:
    RELEASE.set()
    LIMIT[0] = 20
    w = worker()
    asked: list[int] = []
    w.pauses.arm(2.0, lambda: asked.append(1))
    w.start()
    try:
        w.activate()
        until(lambda: len(ACKED) == 20)
        epoch_before = w.pauses.epoch()     # a read begun before the pause
        w.pauses.waiting(1.0)               # the watcher waits 1 s ...
        clock[0] += 20.0                    # ... and the whole process stops for 20 s
        until(lambda: w.pauses.fenced)      # the loop's next pass found it (first)
        assert asked                        # the main thread is asked to read at once
        on_loop(w)                          # the loop is in the fence now
        LIMIT[0] = TOTAL                    # the spout has more to emit
        calls, passes, acked = len(CALLS), w.passes, len(ACKED)
        for _ in range(20):                 # it runs commands, not the executors
            on_loop(w)
        assert (len(CALLS), w.passes, len(ACKED)) == (calls, passes, acked)
        # nor does the watcher's own late wake-up, or a read begun before the pause, lift it
        assert w.pauses.woke()
        w.pauses.confirmed(epoch_before)
        on_loop(w)
        assert w.pauses.fenced and len(CALLS) == calls
        # a read begun after it that still gives the worker its executors lifts the fence
        w.pauses.confirmed(w.pauses.epoch())
        until(lambda: len(ACKED) == TOTAL)
        assert len(CALLS) > calls and not FAILED
    finally:
        w.shutdown(2.0)


def test_components_on_threads_of_their_own_are_fenced_too(clock: list[float]) -> None:
    """A spout and a bolt with dedicated_thread make no call after a pause either (they
    would run on beside their moved instances) until the fence is lifted."""
    LIMIT[0] = 20
    w = worker(ThreadedIds, ThreadedSink)
    w.pauses.arm(2.0, lambda: None)
    w.start()
    try:
        w.activate()
        until(lambda: len(ACKED) == 20 and len(PROCESSED) == 20)
        w.pauses.waiting(1.0)
        clock[0] += 20.0                    # the whole process stops for 20 s
        resumed = time.monotonic()
        threads = [ex.thread for ex in w.executors if ex.threaded]
        assert len(threads) == 2
        # each thread's next round finds the pause (its round began after it) and waits
        until(lambda: w.pauses.fenced and all(t.round_began >= resumed for t in threads))
        LIMIT[0] = TOTAL
        calls, processed = len(CALLS), len(PROCESSED)
        for _ in range(20):
            on_loop(w)
        assert (len(CALLS), len(PROCESSED)) == (calls, processed)
        w.pauses.confirmed(w.pauses.epoch())    # the assignment read again: they run on
        until(lambda: len(ACKED) == TOTAL and len(PROCESSED) == TOTAL)
        assert not FAILED
    finally:
        w.shutdown(2.0)


def test_a_stopped_loop_leaves_the_fence_without_running_an_executor(
        clock: list[float]) -> None:
    RELEASE.set()
    w = worker()
    w.pauses.arm(2.0, lambda: None)
    w.start()
    w.activate()
    until(lambda: len(ACKED) >= 10)
    w.pauses.waiting(1.0)
    clock[0] += 20.0
    until(lambda: w.pauses.fenced)
    on_loop(w)
    calls = len(CALLS)
    w.shutdown(2.0)     # its executors moved: the worker exits, the fence still up
    assert len(CALLS) == calls and not w.loop.thread_alive()


def test_a_slow_pass_in_a_running_process_is_no_pause() -> None:
    """One component in a long call stalls the loop, not the other threads: the watcher is
    on time, so no fence (a ZooKeeper outage, which stops no thread, raises none either)."""
    w = worker()
    w.pauses.arm(0.5, lambda: None)
    stop = threading.Event()

    def watcher() -> None:
        while True:
            w.pauses.waiting(0.05)
            if stop.wait(0.05):
                return
            w.pauses.woke()
    beats = threading.Thread(target=watcher, daemon=True)
    beats.start()
    w.start()
    try:
        w.activate()
        until(ENTERED.is_set)
        t0 = REAL()
        until(lambda: REAL() - t0 > 1.0)    # the loop is in one pass for 1 s, 2x the threshold
        RELEASE.set()
        until(lambda: len(ACKED) == TOTAL)
        assert not w.pauses.fenced
    finally:
        stop.set()
        beats.join(5)
        w.shutdown(2.0)


def test_the_time_a_process_was_paused_is_not_a_stuck_loop(clock: list[float]) -> None:
    w = worker()
    w.pauses.arm(2.0, lambda: None)
    w.start()
    try:
        w.activate()
        until(ENTERED.is_set)               # a pass goes on (a slow call) ...
        began = w.loop.pass_began()
        assert began is not None
        w.pauses.waiting(1.0)
        clock[0] += 40.0                    # ... when the process is stopped for 40 s
        assert w.pauses.woke()              # the watcher wakes first after it
        assert w.loop_stuck(30) is None     # not 40 s stuck: no time of its own
        assert not w.errors.recent()
        # a pass still in the same call 31 s after the pause ended is stuck
        now = w.pauses.resumed + 31
        since = w.loop_stuck(30, now=now)
        assert since is not None
        (entry,) = w.errors.recent()["slow"]
        assert "for 31 s" in entry["error"]
    finally:
        RELEASE.set()
        w.shutdown(2.0)


def test_a_watch_never_armed_never_fences_and_the_threshold_follows_the_timeouts() -> None:
    watch = PauseWatch()
    watch.waiting(1.0)
    assert not watch.paused(REAL() + 3600) and not watch.fenced
    conf = {"nimbus.task.timeout.secs": 6, "storm.zookeeper.session.timeout": 4000}
    assert pause_threshold(conf) == 2.0
    assert pause_threshold({**conf, "storm.zookeeper.session.timeout": 20000}) == 3.0
    assert pause_threshold(config.defaults()) == min(
        float(config.defaults()["nimbus.task.timeout.secs"]),
        float(config.defaults()["storm.zookeeper.session.timeout"]) / 1000) / 2
