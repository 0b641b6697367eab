"""Two workers in one LocalCluster (tuples cross the local transport), backpressure and the
metrics consumer pipeline."""
from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from squall import Bolt, LocalCluster, Spout, Stream, TopologyBuilder
from squall.testing import complete_topology, wait_until

LOCK = threading.Lock()
COUNTS: Counter[str] = Counter()
PAIRS: list[tuple[int, int, int]] = []       # (source task, receiving task, receiving port)
PORTS: dict[int, int] = {}                   # task -> worker port
PROCESSED: list[int] = []
ACKED: list[int] = []
FAILED: list[int] = []
ROUTED: list[int] = []                       # the task each of Endless's tuples was sent to


@pytest.fixture(autouse=True)
def _clear() -> None:
    for x in (COUNTS, PAIRS, PORTS, PROCESSED, ACKED, FAILED, ROUTED):
        x.clear()


class Lines(Spout):
    outputs = ["line"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        PORTS[context.task_id] = context.this_worker_port


class Split(Bolt):
    outputs = ["word"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.task, self.port = context.task_id, context.this_worker_port
        PORTS[self.task] = self.port

    def process(self, tup: Any) -> None:
        with LOCK:
            PAIRS.append((tup.task, self.task, self.port))
        for word in tup["line"].split():
            self.emit([word])


class Count(Split):
    def process(self, tup: Any) -> None:
        with LOCK:
            COUNTS[tup["word"]] += 1
            PAIRS.append((tup.task, self.task, self.port))


def test_two_workers_exact_counts_under_acking() -> None:
    b = TopologyBuilder()
    b.set_spout("lines", Lines, 2)
    b.set_bolt("split", Split, 2).shuffle_grouping("lines")
    b.set_bolt("count", Count, 3).fields_grouping("split", ["word"])
    lines = [["the cow jumped over the moon"], ["an apple a day"], ["the end"]] * 100
    result = complete_topology(b.create_topology(), {"lines": lines},
                               conf={"topology.workers": 2, "topology.acker.executors": 2})
    assert result.acked == set(range(300)) and not result.failed
    assert COUNTS == Counter(w for line in lines for w in line[0].split())
    assert len(set(PORTS.values())) == 2, f"tasks all in one worker: {PORTS}"
    crossed = [p for p in PAIRS if p[0] in PORTS and PORTS[p[0]] != p[2]]   # split -> count
    assert crossed, "no tuple went from one worker to the other"


class Local(Bolt):
    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.task, self.port = context.task_id, context.this_worker_port
        PORTS[self.task] = self.port

    def process(self, tup: Any) -> None:
        with LOCK:
            PAIRS.append((tup.task, self.task, self.port))


class Emitter(Lines):
    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        super().initialize(conf, context)
        self.i = 0

    def next_tuple(self) -> None:
        if self.i < 50:
            self.emit([f"l{self.i}"], tup_id=self.i)
            self.i += 1

    def ack(self, tup_id: Any) -> None:
        ACKED.append(tup_id)


def test_local_or_shuffle_stays_in_the_worker(cluster: LocalCluster) -> None:
    b = TopologyBuilder()
    b.set_spout("lines", Emitter, 2)
    b.set_bolt("local", Local, 2).local_or_shuffle_grouping("lines")
    topo = b.create_topology()
    cluster.submit_topology("local", {"topology.workers": 2}, topo)
    wait_until(lambda: len(ACKED) == 100)
    assert len(set(PORTS.values())) == 2
    spout_ports = {PORTS[t] for t in topo.tasks("lines")}
    bolt_ports = {PORTS[t] for t in topo.tasks("local")}
    assert spout_ports == bolt_ports == set(PORTS.values())    # each worker has one of each
    assert len(PAIRS) == 100
    assert all(PORTS[src] == port for src, _, port in PAIRS)


class Fast(Spout):
    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.i = 0
        self.n = int(conf["app.n"])
        self.cost = float(conf.get("app.cost", 0))

    def next_tuple(self) -> None:
        if self.i < self.n:
            self.emit([self.i], tup_id=self.i)
            self.i += 1
            end = time.perf_counter() + self.cost
            while time.perf_counter() < end:      # simulated work per tuple
                pass

    def ack(self, tup_id: Any) -> None:
        ACKED.append(tup_id)

    def fail(self, tup_id: Any) -> None:
        FAILED.append(tup_id)


class Slow(Bolt):
    def process(self, tup: Any) -> None:
        time.sleep(0.0002)                  # simulates a slow bolt (not synchronization)
        PROCESSED.append(tup["n"])


def test_backpressure_pauses_the_spout_and_loses_nothing(cluster: LocalCluster) -> None:
    """The slow bolt's worker grants the spout's worker only what the bolt takes, so the
    spout waits; every tuple still arrives.

    Without backpressure the spout (~20 k/s) is done long before the bolt (~5 k/s), and the
    queue peaks near the whole input (9,611 of 10,000 when tried)."""
    cap, batch, n = 500, 10, 10000
    b = TopologyBuilder()
    b.set_spout("fast", Fast, config={"app.n": n, "app.cost": 0.00005})
    b.set_bolt("slow", Slow).shuffle_grouping("fast")
    cluster.submit_topology("bp", {"topology.workers": 2,
                                   "topology.executor.receive.buffer.size": cap,
                                   "topology.transfer.batch.size": batch}, b.create_topology())
    workers = {w.port: w for w in cluster.workers("bp")}
    ports = {ex["component"]: ex["worker"] for ex in
             cluster.get_topology_info("bp")["executors"]}
    assert ports["fast"] != ports["slow"], "the test needs the bolt in the other worker"
    spout_worker = workers[ports["fast"]]
    seen = {"highest": 0, "paused": 0}
    last = [-1]

    def done() -> bool:
        for ex in cluster.get_topology_info("bp")["executors"]:
            if ex["component"] == "slow":
                seen["highest"] = max(seen["highest"], ex["queued_peak"])
            if ex["component"] == "fast":
                emitted = ex["emitted"]
                if spout_worker.flow.congested and emitted == last[0] and emitted < n:
                    seen["paused"] += 1          # blocked by the bolt's task, not emitting
                last[0] = emitted
        return len(ACKED) == n

    wait_until(done, timeout=30, interval=0.01)
    assert sorted(PROCESSED) == list(range(n)) and FAILED == []
    # kept at about the high watermark (450): the bolt takes some while a grant travels
    assert seen["highest"] >= cap * 0.8, "the queue never neared its high watermark"
    assert seen["highest"] <= 2 * cap, f"queue grew to {seen['highest']} (capacity {cap})"
    assert seen["paused"] >= 2, "the spout never paused while the bolt's queue was full"


class Quiet(Bolt):
    def process(self, tup: Any) -> None:
        pass


def test_metrics_consumer_receives_builtin_metrics(cluster: LocalCluster,
                                                   tmp_path: Path) -> None:
    path = tmp_path / "metrics.log"
    b = TopologyBuilder()
    b.set_spout("fast", Fast, config={"app.n": 500})
    b.set_bolt("quiet", Quiet, 2).shuffle_grouping("fast")
    cluster.submit_topology("metrics", {
        "topology.metrics.consumer.register": [{"class": "log", "argument": {"file": str(path)}}],
        "topology.builtin.metrics.bucket.size.secs": 1}, b.create_topology())

    def points() -> dict[tuple[str, str], float]:
        out: dict[tuple[str, str], float] = Counter()
        if path.exists():
            for line in path.read_text().splitlines():
                _, _, task_comp, name, value = line.split("\t")
                component = task_comp.split(":", 1)[1]
                try:
                    out[(component, name)] += float(value)
                except ValueError:
                    out[(component, name)] += 0
        return out

    wait_until(lambda: points().get(("quiet", "__ack-count"), 0) >= 500, timeout=10)
    got = points()
    assert got[("fast", "__emit-count")] == 500
    assert got[("fast", "__transfer-count")] == 500     # one target task per emit, local ones
    assert got[("fast", "__ack-count")] == 500
    assert got[("quiet", "__execute-count")] == 500
    names = {name for _, name in got}
    assert {"__emit-count", "__transfer-count", "__ack-count", "__fail-count",
            "__execute-count", "__execute-latency", "__complete-latency",
            "__receive"} <= names, names
    assert not any(c.startswith("__") for c, _ in got), "system components report too"


@pytest.mark.parametrize("aware", [True, False])
def test_shuffle_keeps_tuples_in_the_emitting_worker_while_it_keeps_up(
        cluster: LocalCluster, aware: bool) -> None:
    """Load-aware shuffle (the default) sends to the emitter's own worker while that worker is
    not overloaded; plain shuffle (``topology.disable.loadaware.messaging``) spreads evenly."""
    b = TopologyBuilder()
    b.set_spout("lines", Emitter, 2)
    b.set_bolt("local", Local, 2).shuffle_grouping("lines")
    topo = b.create_topology()
    cluster.submit_topology("near", {"topology.workers": 2,
                                     "topology.disable.loadaware.messaging": not aware}, topo)
    wait_until(lambda: len(ACKED) == 100)
    assert {PORTS[t] for t in topo.tasks("lines")} == {PORTS[t] for t in topo.tasks("local")} \
        == {1, 2}                                              # one of each in each worker
    crossed = sum(PORTS[src] != port for src, _, port in PAIRS)
    assert len(PAIRS) == 100
    if aware:
        assert crossed == 0
    else:
        assert crossed == 50                                   # round-robin over both tasks


class Endless(Spout):
    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        PORTS[context.task_id] = context.this_worker_port
        self.i = 0

    def next_tuple(self) -> None:
        self.i += 1
        sent_to = self.emit([self.i], need_task_ids=True)
        with LOCK:
            ROUTED.extend(sent_to)


class SlowInWorkerTwo(Local):
    def process(self, tup: Any) -> None:
        if self.port == 2:
            time.sleep(0.0005)              # a slow bolt in worker 2 only (not synchronization)
        super().process(tup)


@pytest.mark.parametrize("aware", [True, False])
def test_shuffle_steers_away_from_an_overloaded_worker(cluster: LocalCluster,
                                                       aware: bool) -> None:
    """The spout's worker has no task of the bolt; worker 2's task is slow and overloads it.
    Load-aware shuffle learns that from worker 2's load reports and sends at least 80 % of the
    tuples to worker 3's task (the spout counts where its tuples went); plain shuffle keeps
    sending half to each."""
    b = TopologyBuilder()
    b.set_spout("numbers", Endless)
    b.set_bolt("sink", SlowInWorkerTwo, 2).shuffle_grouping("numbers")
    topo = b.create_topology()
    cluster.submit_topology("spread", {"topology.workers": 3, "topology.acker.executors": 0,
                                       "topology.executor.receive.buffer.size": 200,
                                       "topology.disable.loadaware.messaging": not aware}, topo)
    wait_until(lambda: len(PORTS) == 3)
    assert sorted(PORTS.values()) == [1, 2, 3], PORTS        # one task in each worker
    slow_task = next(t for t in topo.tasks("sink") if PORTS[t] == 2)
    seen = [0]
    windows: list[tuple[int, int]] = []

    def shifted() -> bool:
        with LOCK:
            recent = ROUTED[seen[0]:]
        d_slow = recent.count(slow_task)
        d_other = len(recent) - d_slow
        if d_slow + d_other < 1000:
            return False
        seen[0] += len(recent)
        windows.append((d_slow, d_other))
        return d_other >= 4 * d_slow          # this window: >= 80 % to the other worker

    if aware:
        wait_until(shifted, timeout=30, interval=0.05)
    else:
        wait_until(lambda: shifted() or len(windows) >= 5, timeout=30, interval=0.05)
        assert all(d_other < 4 * d_slow for d_slow, d_other in windows), windows


class BusyEverywhere(Local):
    def process(self, tup: Any) -> None:
        until = time.perf_counter() + 0.0005       # half a millisecond of work a tuple
        while time.perf_counter() < until:
            pass
        super().process(tup)


def test_shuffle_stays_in_the_worker_when_every_worker_is_overloaded(
        cluster: LocalCluster) -> None:
    """Both workers' tasks of the bolt are overloaded: sending to the other worker would add
    the cost of crossing, not capacity, so load-aware shuffle keeps each spout's tuples in
    its own worker (or comes back to it after a start that saw the other idle)."""
    b = TopologyBuilder()
    b.set_spout("numbers", Endless, 2)
    b.set_bolt("sink", BusyEverywhere, 2).shuffle_grouping("numbers")
    topo = b.create_topology()
    cluster.submit_topology("saturated", {"topology.workers": 2, "topology.acker.executors": 0,
                                          "topology.executor.receive.buffer.size": 200}, topo)
    wait_until(lambda: len(PORTS) == 4)
    assert {PORTS[t] for t in topo.tasks("numbers")} == {PORTS[t] for t in topo.tasks("sink")} \
        == {1, 2}                                              # one of each in each worker
    # past the start (when each worker may have seen the other idle): both overloaded a while
    workers = cluster.workers("saturated")
    wait_until(lambda: all(w.counters()["overloaded_secs"] > 1.0 for w in workers), timeout=20)
    with LOCK:
        seen = [len(PAIRS)]

    def stays() -> bool:
        with LOCK:
            recent = PAIRS[seen[0]:]
        if len(recent) < 1000:
            return False
        seen[0] += len(recent)
        crossed = sum(PORTS[src] != port for src, _, port in recent)
        return crossed * 50 <= len(recent)         # this window: at most 2 % crossed

    wait_until(stays, timeout=30, interval=0.05)


SEEN: list[tuple[str, str, list[str], bool]] = []   # (bolt, stream, slots unset, as expected)


def _check(bolt: str, tup: Any, acking: bool) -> None:
    from squall.api.tuple import Tuple
    unset = [s for s in Tuple.__slots__ if not hasattr(tup, s)]
    ok = not unset and type(tup.values) is tuple and tup.ackval == 0 and (
        (type(tup.id) is int and type(tup.roots) is tuple and bool(tup.roots)) if acking
        else (tup.id is None and tup.roots is None))
    with LOCK:
        SEEN.append((bolt, tup.stream, unset, ok))


class WordsTwoWays(Bolt):
    outputs = [Stream(["word"]), Stream(["word"], name="many")]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.acking = conf["topology.acker.executors"] > 0

    def process(self, tup: Any) -> None:
        _check("split", tup, self.acking)
        words = tup["line"].split()
        for word in words:
            self.emit([word])
        self.emit_many([[w] for w in words], "many")


class Whole(Bolt):
    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.acking = conf["topology.acker.executors"] > 0

    def process(self, tup: Any) -> None:
        _check("whole", tup, self.acking)


class WholeBatch(Bolt):
    lazy_batch = True

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.acking = conf["topology.acker.executors"] > 0

    def process_batch(self, tuples: Any) -> None:
        for tup in tuples:
            _check("batch", tup, self.acking)


@pytest.mark.parametrize("acking", [False, True])
@pytest.mark.parametrize("tasks", [1, 3])
def test_every_tuple_a_bolt_receives_has_all_its_fields(acking: bool, tasks: int) -> None:
    # each way the runtime builds a Tuple: emit to one local task, fields grouping over
    # several, to the other worker, emit_many to plain and lazy_batch bolts, tracked or not
    SEEN.clear()
    b = TopologyBuilder()
    b.set_spout("lines", Lines, 2)
    b.set_bolt("split", WordsTwoWays, 2).shuffle_grouping("lines")
    b.set_bolt("whole", Whole, tasks).fields_grouping("split", ["word"]).fields_grouping(
        "split", ["word"], stream="many")
    b.set_bolt("batch", WholeBatch, 2).shuffle_grouping("split", stream="many")
    lines = [["the cow jumped over the moon"], ["an apple a day"]] * 50
    result = complete_topology(b.create_topology(), {"lines": lines},
                               conf={"topology.workers": 2,
                                     "topology.acker.executors": 2 if acking else 0})
    assert not result.failed
    assert result.acked == set(range(100))
    words = sum(len(line[0].split()) for line in lines)
    seen = Counter((bolt, stream) for bolt, stream, _, _ in SEEN)
    assert seen == {("split", "default"): 100, ("whole", "default"): words,
                    ("whole", "many"): words, ("batch", "many"): words}
    assert [s for s in SEEN if not s[3]] == []


@pytest.mark.parametrize("bolts", [1, 2])
def test_trees_that_stay_in_a_worker_are_acked_by_its_own_acker(
        cluster: LocalCluster, bolts: int) -> None:
    """A spout's trees go to an acker task of its own worker when it has one: a tree whose
    tuples never leave the worker is started and acked there, with no acker message between
    the workers (two subscribing bolts: the spout's general emit path)."""
    b = TopologyBuilder()
    b.set_spout("lines", Emitter, 2)
    for i in range(bolts):
        b.set_bolt(f"local{i}", Local, 2).local_or_shuffle_grouping("lines")
    topo = b.create_topology()
    cluster.submit_topology("own-acker", {"topology.workers": 2,
                                          "topology.acker.executors": 2}, topo)
    wait_until(lambda: len(ACKED) == 100)
    assert sorted(_acker_executed(cluster)) == [1, 2], "one acker per worker expected"
    spouts = Counter(PORTS[src] for src, _, _ in PAIRS)        # tuples per spout's worker
    assert spouts == {1: 50 * bolts, 2: 50 * bolts}
    # each tree: the spout's init and each bolt's ack, all at the acker of their worker
    wait_until(lambda: _acker_executed(cluster) == {p: n + n // bolts
                                                    for p, n in spouts.items()},
               message=lambda: f"acker executed per worker {_acker_executed(cluster)}")


def _acker_executed(cluster: LocalCluster) -> dict[int, int]:
    return {e["worker"]: e["executed"]
            for e in cluster.get_topology_info("own-acker")["executors"]
            if e["component"] == "__acker"}


ARRIVED: list[tuple[int, str, int]] = []     # (source task, key, seq), as Collect got them


class Relay(Bolt):
    """Passes each tuple on by key, every third one through the general emit path (asking
    for the task ids) and the others through the fast one."""
    outputs = ["key", "seq"]

    def process(self, tup: Any) -> None:
        key, seq = tup["key"], tup["seq"]
        if seq % 3 == 0:
            self.emit([key, seq], need_task_ids=True)
        else:
            self.emit([key, seq])


class Numbers(Spout):
    outputs = ["key", "seq"]


class Collect(Bolt):
    def process(self, tup: Any) -> None:
        with LOCK:
            ARRIVED.append((tup.task, tup["key"], tup["seq"]))


@pytest.mark.parametrize("acking", [False, True])
def test_tuples_to_another_worker_arrive_once_each_in_emit_order(acking: bool) -> None:
    ARRIVED.clear()
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, 1)
    b.set_bolt("relay", Relay, 2).shuffle_grouping("numbers")
    b.set_bolt("collect", Collect, 3).fields_grouping("relay", ["key"])
    n = 3000
    values = [[f"k{i % 7}", i] for i in range(n)]
    result = complete_topology(b.create_topology(), {"numbers": values},
                               conf={"topology.workers": 2,
                                     "topology.acker.executors": 2 if acking else 0})
    assert not result.failed
    assert sorted(seq for _, _, seq in ARRIVED) == list(range(n))
    order: dict[tuple[int, str], list[int]] = {}
    for src, key, seq in ARRIVED:
        order.setdefault((src, key), []).append(seq)
    assert all(seqs == sorted(seqs) for seqs in order.values())
