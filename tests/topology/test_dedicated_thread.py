"""Components that ask for a dedicated thread (``dedicated_thread = True``, or
``topology.executor.dedicated.thread`` in their configuration) run their callbacks on a thread
of their own: one that blocks holds up only itself, not the other executors of its worker, and
everything else a user relies on (exact results under acking, emit order, errors and replays,
``need_task_ids``, max spout pending, activation) behaves as it does on the worker's loop."""
from __future__ import annotations

import sys
import threading
import time
from collections import Counter, defaultdict
from typing import Any

import pytest

from squall import Bolt, LocalCluster, Spout, Stream, TopologyBuilder
from squall.runtime.executors import threaded
from squall.testing import complete_topology, wait_until

THREADED = {"topology.executor.dedicated.thread": True}
LOCK = threading.Lock()
GATE = threading.Event()          # released at the end of each test that blocks on it
ENTERED = threading.Event()       # a blocking callback has started to block
SEEN: dict[str, Any] = defaultdict(list)
COUNTS: Counter[str] = Counter()


@pytest.fixture(autouse=True)
def _clear() -> None:
    GATE.clear()
    ENTERED.clear()
    SEEN.clear()
    COUNTS.clear()


@pytest.fixture
def gated(cluster: LocalCluster) -> Any:
    """The cluster; GATE opens before it stops, so nothing stays blocked past the test."""
    yield cluster
    GATE.set()


class Numbers(Spout):
    """Emits 0..N-1 tracked (tup_id = the number), replays what fails, records acks."""

    outputs = ["n"]
    N = 200

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.next_n = 0
        self.replay: list[int] = []

    def next_tuple(self) -> None:
        if self.replay:
            n = self.replay.pop()
        elif self.next_n < self.N:
            n, self.next_n = self.next_n, self.next_n + 1
        else:
            return
        self.emit([n], tup_id=n)

    def ack(self, tup_id: Any) -> None:
        with LOCK:
            SEEN["acked"].append(tup_id)

    def fail(self, tup_id: Any) -> None:
        self.replay.append(tup_id)


class Blocking(Bolt):
    """Blocks in its first ``process`` until the test opens GATE (a slow database, say)."""

    dedicated_thread = True

    def process(self, tup: Any) -> None:
        ENTERED.set()
        GATE.wait(60)
        with LOCK:
            COUNTS["blocking"] += 1


class Tally(Bolt):
    def process(self, tup: Any) -> None:
        with LOCK:
            COUNTS[self.context.component_id] += 1


def _acked() -> int:
    with LOCK:
        return len(set(SEEN["acked"]))


class BlockingByConfig(Blocking):
    """Blocking, asking for its thread in its component config instead."""

    dedicated_thread = False


@pytest.mark.parametrize("asked_by", ["class", "config"])
def test_a_blocking_bolt_holds_up_only_itself(gated: LocalCluster, asked_by: str) -> None:
    cluster = gated
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers)
    if asked_by == "class":
        b.set_bolt("blocking", Blocking).shuffle_grouping("numbers")
    else:
        b.set_bolt("blocking", BlockingByConfig).add_config(
            "topology.executor.dedicated.thread", True).shuffle_grouping("numbers")
    b.set_bolt("tally", Tally).shuffle_grouping("numbers")
    cluster.submit_topology("blocking-bolt", {"topology.workers": 1,
                                              "topology.acker.executors": 1},
                            b.create_topology())
    # one worker runs the spout, both bolts and the acker: with the blocked bolt on its own
    # thread, the spout and the other bolt go on through all of the input
    wait_until(lambda: COUNTS["tally"] == Numbers.N and ENTERED.is_set(), timeout=30,
               message=lambda: f"tally got {COUNTS['tally']} of {Numbers.N}")
    assert COUNTS["blocking"] == 0 and _acked() == 0
    GATE.set()
    wait_until(lambda: _acked() == Numbers.N, timeout=30,
               message=lambda: f"{_acked()} of {Numbers.N} acked after the bolt went on")
    assert COUNTS["blocking"] == Numbers.N


class BlockingSpout(Spout):
    """A spout whose next_tuple waits for its input (a blocking poll), then emits 50 lines."""

    outputs = ["n"]
    dedicated_thread = True

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.sent = 0

    def next_tuple(self) -> None:
        ENTERED.set()
        if not GATE.wait(60) or self.sent >= 50:
            return
        self.emit([self.sent])
        self.sent += 1


def test_a_blocking_spout_holds_up_only_itself(gated: LocalCluster) -> None:
    cluster = gated
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers)
    b.set_spout("polling", BlockingSpout)
    b.set_bolt("tally", Tally).shuffle_grouping("numbers")
    b.set_bolt("polled", Tally).shuffle_grouping("polling")
    cluster.submit_topology("blocking-spout", {"topology.workers": 1,
                                               "topology.acker.executors": 1},
                            b.create_topology())
    wait_until(lambda: _acked() == Numbers.N and ENTERED.is_set(), timeout=30,
               message=lambda: f"{_acked()} of {Numbers.N} acked")
    assert COUNTS["polled"] == 0
    GATE.set()
    wait_until(lambda: COUNTS["polled"] == 50, timeout=30,
               message=lambda: f"polled got {COUNTS['polled']} of 50")


class Lines(Spout):
    outputs = ["line"]


class Split(Bolt):
    outputs = ["word"]

    def process(self, tup: Any) -> None:
        for word in tup["line"].split():
            self.emit([word])


class BatchSplit(Bolt):
    outputs = ["word"]

    def process_batch(self, tuples: Any) -> None:
        for tup in tuples:
            self.emit_many([[w] for w in tup["line"].split()], anchors=[tup])


class Count(Bolt):
    outputs = ["word", "count"]
    lazy_batch = True

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.counts: Counter[str] = Counter()

    def process_batch(self, tuples: Any) -> None:
        for tup in tuples:
            word = tup["word"]
            self.counts[word] += 1
            self.emit([word, self.counts[word]], anchors=[tup])


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("split", [Split, BatchSplit])
def test_word_count_on_dedicated_threads_is_exact_under_acking(workers: int,
                                                               split: type[Bolt]) -> None:
    lines = [[" ".join(f"w{(i * 7 + k) % 13}" for k in range(i % 5 + 1))] for i in range(300)]
    expected = Counter(w for (line,) in lines for w in line.split())
    b = TopologyBuilder()
    b.set_spout("lines", Lines, 2)
    b.set_bolt("split", split, 2).shuffle_grouping("lines")
    b.set_bolt("count", Count, 3).fields_grouping("split", ["word"])
    # every component (the test's spouts too) on a thread of its own
    result = complete_topology(b.create_topology(), {"lines": lines},
                               conf={"topology.workers": workers, "topology.acker.executors": 2,
                                     **THREADED})
    finals: dict[str, int] = {}
    for word, count in result.tuples("count"):
        finals[word] = max(finals.get(word, 0), count)
    assert finals == dict(expected)
    assert result.acked == set(range(len(lines))) and not result.failed


class Ordered(Bolt):
    """Per input: emit_many, emit on a second stream, an anchored emit, emit_many of lists;
    sequence numbers 0..5 in emit order."""

    outputs = [Stream(["line", "seq"]), Stream(["line", "seq"], name="other")]
    dedicated_thread = True

    def process(self, tup: Any) -> None:
        i = tup["line"]
        self.emit_many([(i, 0), (i, 1)])
        self.emit((i, 2), "other")
        self.emit((i, 3), anchors=[tup])
        row = [i, 4]
        self.emit_many([row])
        row[1] = 5                  # the list is reused: what was emitted stays as it was
        self.emit_many([row])


class Record(Bolt):
    def process(self, tup: Any) -> None:
        with LOCK:
            SEEN[(self.context.task_id, tup["line"])].append((tup["seq"], tup.stream))


@pytest.mark.parametrize("workers", [1, 2])
def test_emits_arrive_in_call_order(workers: int) -> None:
    b = TopologyBuilder()
    b.set_spout("lines", Lines)
    b.set_bolt("ordered", Ordered, 2).shuffle_grouping("lines")
    b.set_bolt("record", Record, 2).fields_grouping("ordered", ["line"]).fields_grouping(
        "ordered", ["line"], stream="other")
    result = complete_topology(b.create_topology(), {"lines": [[i] for i in range(100)]},
                               conf={"topology.workers": workers,
                                     "topology.acker.executors": 1})
    assert sorted(line for _, line in SEEN) == list(range(100))
    for key, got in SEEN.items():
        assert got == [(0, "default"), (1, "default"), (2, "other"), (3, "default"),
                       (4, "default"), (5, "default")], key
    assert result.acked == set(range(100)) and not result.failed


class Faulty(Bolt):
    """Fails odd numbers by raising; emits on an undeclared stream for multiples of 10."""

    outputs = ["n"]
    dedicated_thread = True

    def process(self, tup: Any) -> None:
        n = tup["n"]
        if n % 10 == 0:
            self.emit([n], stream="nope")
        if n % 2:
            raise ValueError(f"odd number {n}")
        self.emit([n])


class Picky(Bolt):
    def process(self, tup: Any) -> None:
        if tup["n"] % 4 == 0:
            raise ValueError(f"multiple of four {tup['n']}")


class Once(Numbers):
    """Numbers 0..39 without replays: records what fails."""

    N = 40

    def fail(self, tup_id: Any) -> None:
        with LOCK:
            SEEN["failed"].append(tup_id)


def test_errors_are_reported_and_their_tuples_fail(cluster: LocalCluster) -> None:
    b = TopologyBuilder()
    b.set_spout("numbers", Once)
    b.set_bolt("faulty", Faulty).shuffle_grouping("numbers")
    b.set_bolt("picky", Picky).shuffle_grouping("faulty")
    cluster.submit_topology("faulty", {"topology.acker.executors": 1}, b.create_topology())
    wait_until(lambda: len(SEEN["acked"]) + len(SEEN["failed"]) == Once.N, timeout=30,
               message=lambda: f"acked {SEEN['acked']}, failed {SEEN['failed']}")
    # odd: raised in faulty; multiples of 10: emitted on an undeclared stream; multiples of
    # 4: raised in picky, which fails them through faulty's emits (anchored automatically)
    failed = [i for i in range(40) if i % 2 or i % 10 == 0 or i % 4 == 0]
    assert sorted(SEEN["failed"]) == failed
    assert sorted(SEEN["acked"]) == [i for i in range(40) if i not in failed]
    def reported() -> list[str]:
        errors = cluster.get_topology_info("faulty")["errors"].get("faulty", [])
        return [e["error"] for e in errors]
    wait_until(lambda: any("nope" in e for e in reported()), timeout=10)
    errors = reported()
    assert any("odd number" in e for e in errors)
    assert any("undeclared stream 'nope'" in e for e in errors)


class AskTasks(Bolt):
    outputs = ["line", "seq"]
    dedicated_thread = True

    def process(self, tup: Any) -> None:
        tasks = self.emit([tup["line"], 0], need_task_ids=True)
        with LOCK:
            SEEN["asked"].append((tup["line"], tuple(tasks or ())))


def test_need_task_ids_returns_where_the_tuple_went() -> None:
    b = TopologyBuilder()
    b.set_spout("lines", Lines)
    b.set_bolt("ask", AskTasks).shuffle_grouping("lines")
    b.set_bolt("record", Record, 3).fields_grouping("ask", ["line"])
    complete_topology(b.create_topology(), {"lines": [[i] for i in range(30)]},
                      conf={"topology.workers": 2})
    received = {key[1]: (key[0],) for key in SEEN if isinstance(key, tuple)}
    assert dict(SEEN["asked"]) == received and len(received) == 30


class Holder(Bolt):
    """Keeps every tuple and acks none until GATE opens."""

    auto_ack = False

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.held: list[Any] = []

    def process(self, tup: Any) -> None:
        self.held.append(tup)
        COUNTS["held"] += 1

    def process_tick(self, tup: Any) -> None:
        COUNTS["ticks"] += 1
        if GATE.is_set():
            for t in self.held:
                self.ack(t)
            self.held.clear()


class Eager(Numbers):
    """Numbers on a thread of its own; counts its next_tuple calls."""

    dedicated_thread = True

    def next_tuple(self) -> None:
        COUNTS["calls"] += 1
        super().next_tuple()


class ThreadedHolder(Holder):
    """Holder on a thread of its own: its ticks and its own acks go through that thread."""

    dedicated_thread = True

    def process_tick(self, tup: Any) -> None:
        with LOCK:
            SEEN["tick threads"].append(threading.current_thread().name)
        super().process_tick(tup)


@pytest.mark.parametrize("holder", [Holder, ThreadedHolder])
def test_max_spout_pending_holds_on_a_dedicated_thread(gated: LocalCluster,
                                                       holder: type[Bolt]) -> None:
    cluster = gated
    b = TopologyBuilder()
    b.set_spout("numbers", Eager)
    b.set_bolt("holder", holder).shuffle_grouping("numbers")
    cluster.submit_topology("pending", {"topology.workers": 1, "topology.acker.executors": 1,
                                        "topology.max.spout.pending": 5,
                                        "topology.tick.tuple.freq.secs": 0.02},
                            b.create_topology())
    wait_until(lambda: COUNTS["held"] == 5, timeout=30, message="five tuples held")
    # while five trees are open, next_tuple is not called again: ten ticks later, still five
    ticks = COUNTS["ticks"]
    wait_until(lambda: COUNTS["ticks"] >= ticks + 10, timeout=10)
    assert COUNTS["held"] == 5 and COUNTS["calls"] == 5
    GATE.set()
    wait_until(lambda: _acked() == Numbers.N, timeout=60,
               message=lambda: f"{_acked()} of {Numbers.N} acked")
    assert COUNTS["held"] == Numbers.N
    if holder is ThreadedHolder:
        assert len(set(SEEN["tick threads"])) == 1
        assert SEEN["tick threads"][0].startswith("squall-holder-")


class Many(Spout):
    """Emits tracked tuples as fast as it is asked; counts acks."""

    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.i = 0

    def next_tuple(self) -> None:
        self.emit([self.i], tup_id=self.i)
        self.i += 1

    def ack(self, tup_id: Any) -> None:
        COUNTS["acked"] += 1


class AcksFromItsOwnThread(Bolt):
    """auto_ack off; a helper thread of its own acks each tuple (an async client's reply)."""

    dedicated_thread = True
    auto_ack = False

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        import queue
        self.replies: queue.Queue[Any] = queue.Queue()
        threading.Thread(target=self._reply, daemon=True).start()

    def process(self, tup: Any) -> None:
        self.replies.put(tup)

    def _reply(self) -> None:
        held: list[Any] = []
        while True:     # replies come in bursts: many tuples wait for theirs meanwhile
            held.append(self.replies.get())
            if len(held) == 1000:
                for tup in held:
                    self.ack(tup)
                held.clear()


def test_a_bolt_may_ack_from_a_helper_thread_of_its_own(
        cluster: LocalCluster, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threaded, "MAX_SAMPLES", 500)       # pruned more, for longer
    # the component thread pruned its latency samples while the helper's acks popped them:
    # "dictionary changed size during iteration" killed the thread, and the worker with it
    b = TopologyBuilder()
    b.set_spout("many", Many)
    b.set_bolt("async", AcksFromItsOwnThread).shuffle_grouping("many")
    with caplog.at_level("ERROR", logger="squall.runtime.threaded"):
        cluster.submit_topology("async", {"topology.max.spout.pending": 5000},
                                b.create_topology())
        wait_until(lambda: COUNTS["acked"] >= 200_000 or "died" in caplog.text, timeout=60,
                   message=lambda: f"{COUNTS['acked']} acked")
    assert "died" not in caplog.text


class PollsNothing(Spout):
    """A non-blocking poll that finds nothing: records when it is asked."""

    outputs = ["n"]
    dedicated_thread = True

    def next_tuple(self) -> None:
        SEEN["polls"].append(time.monotonic())


def test_an_idle_spout_on_its_thread_is_asked_again_after_the_wait_strategy_time(
        cluster: LocalCluster) -> None:
    # it was asked every 50 ms (the thread's idle wait), whatever the setting said
    b = TopologyBuilder()
    b.set_spout("idle", PollsNothing)
    b.set_bolt("sink", Tally).shuffle_grouping("idle")
    cluster.submit_topology("idle", {"topology.sleep.spout.wait.strategy.time.ms": 2},
                            b.create_topology())
    wait_until(lambda: len(SEEN["polls"]) >= 60, timeout=20)
    t = SEEN["polls"][10:60]
    gaps = sorted(b - a for a, b in zip(t, t[1:]))
    assert gaps[len(gaps) // 2] < 0.02, f"median gap {gaps[len(gaps) // 2] * 1000:.1f} ms"


class Where(Spout):
    """Records the thread of each callback."""

    outputs = ["n"]
    dedicated_thread = True

    def _note(self, what: str) -> None:
        with LOCK:
            SEEN["threads"].append((what, threading.current_thread().name))

    def activate(self) -> None:
        self._note("activate")

    def deactivate(self) -> None:
        self._note("deactivate")

    def next_tuple(self) -> None:
        if not SEEN["nexts"]:
            SEEN["nexts"].append(1)
            self._note("next_tuple")
            self.emit([1], tup_id=1)
            self.emit([2], tup_id=2)

    def ack(self, tup_id: Any) -> None:
        self._note("ack")

    def fail(self, tup_id: Any) -> None:
        self._note("fail")


class FailTwo(Bolt):
    def process(self, tup: Any) -> None:
        if tup["n"] == 2:
            raise ValueError("two")


def test_a_spouts_callbacks_run_on_its_thread_and_deactivate_stops_it(
        cluster: LocalCluster) -> None:
    b = TopologyBuilder()
    b.set_spout("where", Where)
    b.set_bolt("fail2", FailTwo).shuffle_grouping("where")
    cluster.submit_topology("where", {"topology.acker.executors": 1}, b.create_topology())
    wait_until(lambda: {w for w, _ in SEEN["threads"]} >= {"activate", "next_tuple", "ack",
                                                           "fail"}, timeout=30,
               message=lambda: str(SEEN["threads"]))
    cluster.deactivate("where")
    wait_until(lambda: SEEN["threads"][-1][0] == "deactivate", timeout=10)
    names = {name for _, name in SEEN["threads"]}
    assert len(names) == 1 and not names.pop().startswith("squall-worker")
    assert [w for w, _ in SEEN["threads"]][0] == "activate"


def test_the_switch_interval_is_shortened_while_threads_run_and_restored_after() -> None:
    before = sys.getswitchinterval()
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers)
    b.set_bolt("blocking", Blocking).shuffle_grouping("numbers")
    with LocalCluster() as cluster:
        cluster.submit_topology("switch", {"topology.acker.executors": 0}, b.create_topology())
        wait_until(ENTERED.is_set, timeout=30, message="the bolt to start blocking")
        during = sys.getswitchinterval()
        GATE.set()
    assert during == pytest.approx(0.001) and sys.getswitchinterval() == before
