"""A component on the worker's loop whose own threads call ``emit``, ``emit_many``, ``ack`` and
``fail`` (an async client's callbacks, a poller; a spout, or a bolt that acks itself): the
calls are handed to the loop, checked where they are made (core/runtime/executors/handoff.py).
"""
from __future__ import annotations

import itertools
import queue
import sys
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from squall import Bolt, LocalCluster, Spout, Stream, TopologyBuilder, TopologyError
from squall.testing import complete_topology, wait_until
from tests.topology.conftest import HoldFive

LOCK = threading.Lock()
COUNTS: Counter[str] = Counter()
CAUGHT: list[str] = []
RETURNED: list[Any] = []


@pytest.fixture(autouse=True)
def _clear() -> None:
    COUNTS.clear()
    CAUGHT.clear()
    RETURNED.clear()


class Numbers(Spout):
    """Emits ``squall.test.n`` tracked tuples; counts acks and fails."""

    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.n = int(conf["squall.test.n"])
        self.ids = itertools.count()

    def next_tuple(self) -> None:
        i = next(self.ids)
        if i < self.n:
            self.emit([i], tup_id=i)

    def ack(self, tup_id: Any) -> None:
        with LOCK:
            COUNTS["acked"] += 1

    def fail(self, tup_id: Any) -> None:
        with LOCK:
            COUNTS["failed"] += 1


class Callback(Bolt):
    """auto_ack off: hands each tuple to a thread of its own, which emits anchored to it
    and acks it (an async write's callback); every tenth is emitted by emit_many, every
    seventh failed instead."""

    auto_ack = False
    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.todo: queue.Queue[Any] = queue.Queue()
        threading.Thread(target=self._replies, daemon=True).start()

    def process(self, tup: Any) -> None:
        self.todo.put(tup)

    def _replies(self) -> None:
        while True:
            tup = self.todo.get()
            n = tup.values[0]
            if n % 7 == 3:
                self.fail(tup)
                continue
            if n % 10 == 0:
                self.emit_many([[n]], anchors=[tup])
            else:
                self.emit([n], anchors=[tup])
            self.ack(tup)


class Counted(Bolt):
    def process(self, tup: Any) -> None:
        with LOCK:
            COUNTS["counted"] += 1


def test_a_bolt_may_emit_ack_and_fail_from_a_thread_of_its_own(
        cluster: LocalCluster, caplog: pytest.LogCaptureFixture) -> None:
    # the thread's acks changed the ack ledger's fold while the loop flushed it: "dictionary
    # changed size during iteration" killed the worker's loop, again after each restart
    # (threads take turns more often meanwhile, as a worker of dedicated threads makes them)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(0.0001)
    try:
        _callbacks(cluster, caplog)
    finally:
        sys.setswitchinterval(switch)


def _callbacks(cluster: LocalCluster, caplog: pytest.LogCaptureFixture) -> None:
    n = 30_000
    failed = len([i for i in range(n) if i % 7 == 3])
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, config={"squall.test.n": n})
    b.set_bolt("callback", Callback, parallelism=4).shuffle_grouping("numbers")
    b.set_bolt("counted", Counted, parallelism=2).shuffle_grouping("callback")
    with caplog.at_level("ERROR"):
        cluster.submit_topology("callbacks", {"topology.max.spout.pending": 5000},
                                b.create_topology())
        wait_until(lambda: COUNTS["acked"] + COUNTS["failed"] >= n or "died" in caplog.text,
                   timeout=120, message=lambda: f"{COUNTS}")
    assert "died" not in caplog.text
    assert COUNTS["acked"] == n - failed and COUNTS["failed"] == failed
    assert COUNTS["counted"] == n - failed


class EmitsFromAPool(Bolt):
    """Acks itself. For the word "a", a thread of its own emits ``["x"]`` while ``process``
    waits for it; then it emits its word."""

    outputs = ["w"]
    auto_ack = False

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.pool = ThreadPoolExecutor(1)

    def process(self, tup: Any) -> None:
        if tup.values[0] == "a":
            self.pool.submit(self.emit, ["x"]).result(timeout=10)
        self.emit([tup.values[0]])
        self.ack(tup)


class FailsX(Bolt):
    def process(self, tup: Any) -> None:
        if tup.values[0] == "x":
            raise ValueError("x fails")


class Words(Spout):
    outputs = ["w"]


def test_an_emit_from_another_thread_is_not_anchored_to_the_tuple_in_process() -> None:
    # the thread's emit was anchored to whatever tuple the loop was processing: the x that
    # FailsX fails failed the tree of "a"
    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("pool", EmitsFromAPool).shuffle_grouping("words")
    b.set_bolt("fails", FailsX).shuffle_grouping("pool")
    result = complete_topology(b.create_topology(), {"words": [["a"], ["b"]]}, timeout=30)
    assert result.acked == {0, 1} and not result.failed
    assert sorted(result.tuples("pool")) == [("a",), ("b",), ("x",)]


class Checks(Bolt):
    """Acks itself. A thread of its own makes calls that are wrong, and one that waits for its
    task ids, then acks."""

    outputs = [Stream(["w"]), Stream(["w"], name="to", direct=True)]
    auto_ack = False

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.pool = ThreadPoolExecutor(1)
        self.sink = context.component_tasks("sink")[0]

    def process(self, tup: Any) -> None:
        self.pool.submit(self._calls, tup)

    def _calls(self, tup: Any) -> None:
        for call in (lambda: self.emit(["w"], "nowhere"),
                     lambda: self.emit(["w", "extra"]),
                     lambda: self.emit({"w": 1}),
                     lambda: self.emit_many(["ab"]),
                     lambda: self.ack(7)):
            try:
                call()
            except TopologyError as exc:
                CAUGHT.append(str(exc))
        RETURNED.append(self.emit(["d"], "to", direct_task=self.sink, need_task_ids=True))
        self.ack(tup)


def test_calls_from_another_thread_are_checked_there(cluster: LocalCluster) -> None:
    b = TopologyBuilder()
    b.set_spout("words", Numbers, config={"squall.test.n": 1})
    b.set_bolt("checks", Checks).shuffle_grouping("words")
    b.set_bolt("sink", Counted).direct_grouping("checks", "to")
    topo = b.create_topology()
    cluster.submit_topology("checks", {}, topo)
    wait_until(lambda: RETURNED, timeout=30, message=lambda: f"caught {CAUGHT}")
    assert RETURNED == [topo.tasks("sink")]
    assert len(CAUGHT) == 5
    assert "undeclared stream 'nowhere'" in CAUGHT[0]
    assert "emitted 2 value(s)" in CAUGHT[1]
    assert "emitted a dict" in CAUGHT[2] and "emitted a str" in CAUGHT[3]
    assert "ack takes a Tuple" in CAUGHT[4]
    wait_until(lambda: COUNTS["acked"] == 1 and COUNTS["counted"] == 1, timeout=30,
               message=lambda: f"{COUNTS}")


class Poller(Spout):
    """next_tuple emits nothing: a thread of its own emits ``squall.test.n`` tracked tuples."""

    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        n = int(conf["squall.test.n"])

        def poll() -> None:
            for i in range(n):
                self.emit([i], tup_id=i)
        threading.Thread(target=poll, daemon=True).start()

    def next_tuple(self) -> None:
        pass

    def ack(self, tup_id: Any) -> None:
        with LOCK:
            COUNTS["acked"] += 1


def test_a_spout_may_emit_from_a_thread_of_its_own(cluster: LocalCluster) -> None:
    n = 20_000
    b = TopologyBuilder()
    b.set_spout("poller", Poller, config={"squall.test.n": n})
    b.set_bolt("counted", Counted, parallelism=2).shuffle_grouping("poller")
    cluster.submit_topology("poller", {}, b.create_topology())
    wait_until(lambda: COUNTS["acked"] == n, timeout=60, message=lambda: f"{COUNTS}")
    assert COUNTS["counted"] == n


# -- topology.max.spout.pending for a spout's own threads ------------------------------------------
class PendingPoller(Spout):
    """Once activated, a thread of its own emits ``squall.test.n`` tracked tuples (next_tuple
    emits nothing) and records the most trees it had in flight, counted once each emit
    returned."""

    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.n = int(conf["squall.test.n"])
        self.in_flight = 0
        self.go = threading.Event()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.poll, daemon=True)
        self.thread.start()

    def activate(self) -> None:
        self.go.set()

    def poll(self) -> None:
        self.go.wait()
        for i in range(self.n):
            if self.stop.is_set():
                return
            self.emit([i], tup_id=i)
            with LOCK:
                COUNTS["returned"] += 1
                self.in_flight += 1
                COUNTS["max"] = max(COUNTS["max"], self.in_flight)

    def next_tuple(self) -> None:
        pass

    def ack(self, tup_id: Any) -> None:
        with LOCK:
            self.in_flight -= 1
            COUNTS["acked"] += 1

    def deactivate(self) -> None:
        # on the loop: stops the poller and waits for it (held in an emit at max pending,
        # it would wait for trees whose acks need the loop this call holds)
        self.stop.set()
        self.thread.join(10)
        COUNTS["joined"] += not self.thread.is_alive()


class Keep(Bolt):
    """Keeps every tuple, acking none."""

    auto_ack = False

    def process(self, tup: Any) -> None:
        with LOCK:
            COUNTS["kept"] += 1


@pytest.mark.parametrize("dedicated", [False, True], ids=["loop", "own-thread"])
def test_a_spout_thread_emits_no_more_than_max_spout_pending(cluster: LocalCluster,
                                                             dedicated: bool) -> None:
    # its emits were handed to the loop as they came: all 30 trees in flight at once
    b = TopologyBuilder()
    b.set_spout("poller", type("P", (PendingPoller,), {"dedicated_thread": dedicated}),
                config={"squall.test.n": 30})
    b.set_bolt("five", HoldFive).shuffle_grouping("poller")
    cluster.submit_topology("pending-thread", {"topology.max.spout.pending": 5},
                            b.create_topology())
    wait_until(lambda: COUNTS["acked"] == 30, timeout=30, message=lambda: f"{COUNTS}")
    assert COUNTS["max"] == 5


@pytest.mark.parametrize("dedicated", [False, True], ids=["loop", "own-thread"])
def test_a_spout_thread_waiting_at_max_pending_is_let_go_at_deactivate(
        cluster: LocalCluster, dedicated: bool) -> None:
    b = TopologyBuilder()
    b.set_spout("poller", type("P", (PendingPoller,), {"dedicated_thread": dedicated}),
                config={"squall.test.n": 1000})
    b.set_bolt("keep", Keep).shuffle_grouping("poller")
    cluster.submit_topology("pending-deactivate", {"topology.max.spout.pending": 3},
                            b.create_topology())
    wait_until(lambda: COUNTS["kept"] == 3, timeout=30, message=lambda: f"{COUNTS}")
    assert COUNTS["returned"] == 3          # its fourth emit waits: nothing is acked
    cluster.deactivate("pending-deactivate")
    # the emit it waited in returned (its emits until it sees ``stop`` wait no more)
    wait_until(lambda: COUNTS["joined"] == 1, timeout=30, message=lambda: f"{COUNTS}")
    assert COUNTS["returned"] >= 4


def test_without_ackers_a_spout_thread_never_waits(cluster: LocalCluster) -> None:
    b = TopologyBuilder()
    b.set_spout("poller", PendingPoller, config={"squall.test.n": 50})
    b.set_bolt("keep", Keep).shuffle_grouping("poller")
    cluster.submit_topology("pending-off", {"topology.max.spout.pending": 3,
                                            "topology.acker.executors": 0},
                            b.create_topology())
    wait_until(lambda: COUNTS["returned"] == 50 and COUNTS["kept"] == 50, timeout=30,
               message=lambda: f"{COUNTS}")
