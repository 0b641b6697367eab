"""Tuples crossing workers travel as runs (one wire entry per source task, stream and
destination task): order, ids and roots survive, failures fail the right trees, and a
malformed run is dropped with a warning while the worker goes on."""
from __future__ import annotations

import logging
import random
import threading
from collections import defaultdict
from typing import Any

import msgpack

from squall import Bolt, LocalCluster, Spout, TopologyBuilder
from squall.transports.local import LocalTransport
from squall.testing import complete_topology, wait_until

LOCK = threading.Lock()
SEEN: dict[tuple[int, int], list[tuple[int, bool]]] = defaultdict(list)
PORTS: dict[int, int] = {}
TOPOLOGY: list[str] = []
FAILED_ONCE: set[str] = set()
ACKED: list[int] = []
FAILED: list[int] = []


def _reset() -> None:
    SEEN.clear()
    PORTS.clear()
    TOPOLOGY.clear()
    FAILED_ONCE.clear()
    ACKED.clear()
    FAILED.clear()


class Numbers(Spout):
    """Emits 0..n-1 on its own; every third number is untracked (no tup_id)."""
    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.n, self.i = conf["test.numbers"], 0
        PORTS[context.task_id] = context.this_worker_port

    def next_tuple(self) -> None:
        if self.i < self.n:
            i, self.i = self.i, self.i + 1
            self.emit([i], tup_id=None if i % 3 == 0 else i)

    def ack(self, tup_id: Any) -> None:
        with LOCK:
            ACKED.append(tup_id)

    def fail(self, tup_id: Any) -> None:
        with LOCK:
            FAILED.append(tup_id)


class Placed(Bolt):
    """Records its task's worker port (and keeps its task id) for the placement checks."""

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.task = context.task_id
        PORTS[self.task] = context.this_worker_port


class Record(Placed):
    """Records (source task, own task) -> [(number, tracked)] in arrival order."""

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        super().initialize(conf, context)
        TOPOLOGY.append(context.topology_id)

    def process(self, tup: Any) -> None:
        with LOCK:
            SEEN[(tup.task, self.task)].append((tup["n"], tup.roots is not None))


def test_runs_keep_order_and_tracking_per_source_and_destination(cluster: LocalCluster) -> None:
    _reset()
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, 2)
    b.set_bolt("record", Record, 2).all_grouping("numbers")
    n = 3000
    cluster.submit_topology("order", {"topology.workers": 2, "topology.acker.executors": 1,
                                      "test.numbers": n, "topology.max.spout.pending": None},
                            b.create_topology())
    tracked = sorted(i for i in range(n) if i % 3)
    wait_until(lambda: len(SEEN) == 4 and all(len(v) >= n for v in SEEN.values())
               and len(ACKED) >= 2 * len(tracked), 60,
               message=lambda: f"deliveries {[len(v) for v in SEEN.values()]}, acked {len(ACKED)}")
    spouts = [t for t in PORTS if t not in {d for _, d in SEEN}]
    assert len(set(PORTS.values())) == 2, f"tasks all in one worker: {PORTS}"
    assert {PORTS[s] for s in spouts} == set(PORTS.values()), "need a spout task per worker"
    for (src, dest), got in SEEN.items():
        # every number from every spout task, in the order it was emitted, tracked as emitted
        assert got == [(i, i % 3 != 0) for i in range(n)], (src, dest, got[:10])
    assert [(s, d) for s, d in SEEN if PORTS[s] != PORTS[d]], "no tuple crossed workers"
    # each spout task's tracked numbers acked once each, nothing failed
    assert sorted(ACKED) == sorted(tracked * 2) and not FAILED


FAN_IN: dict[int, list[int]] = defaultdict(list)


class Fan(Placed):
    """Re-emits each number: even ones as three tuples in one emit_many, odd ones alone."""
    outputs = ["n", "k", "s"]

    def process(self, tup: Any) -> None:
        i, s = tup["n"], tup.task       # the two spout tasks both emit 0..n-1
        with LOCK:
            FAN_IN[self.task].append((s, i))
        if i % 2:
            self.emit([i, 0, s])
        else:
            self.emit_many([[i, 0, s], [i, 1, s], [i, 2, s]])


class RecordFan(Placed):
    def process(self, tup: Any) -> None:
        with LOCK:
            SEEN[(tup.task, self.task)].append((tup["s"], tup["n"], tup["k"],
                                                tup.roots is not None))


def test_emit_many_and_single_emits_keep_their_order_across_workers(
        cluster: LocalCluster) -> None:
    _reset()
    FAN_IN.clear()
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, 2)
    b.set_bolt("fan", Fan, 2).shuffle_grouping("numbers")
    b.set_bolt("record", RecordFan, 2).shuffle_grouping("fan")
    n = 3000
    # plain round-robin shuffle: half of each emit crosses to the other worker (load-aware
    # shuffle would keep everything in the emitter's worker)
    cluster.submit_topology("fan", {"topology.workers": 2, "topology.acker.executors": 1,
                                    "topology.disable.loadaware.messaging": True,
                                    "test.numbers": n, "topology.max.spout.pending": None},
                            b.create_topology())
    tracked = sorted(i for i in range(n) if i % 3)

    def expected(fan_task: int) -> list[tuple[int, int, int, bool]]:
        return [(s, i, k, i % 3 != 0) for s, i in FAN_IN[fan_task]
                for k in ((0,) if i % 2 else (0, 1, 2))]

    def delivered(src: int) -> int:
        return sum(len(got) for (s, _), got in SEEN.items() if s == src)

    wait_until(lambda: len(ACKED) >= 2 * len(tracked) and len(FAN_IN) == 2
               and all(delivered(src) >= len(expected(src)) for src in FAN_IN), 60,
               message=lambda: f"acked {len(ACKED)}, deliveries "
                               f"{[len(v) for v in SEEN.values()]}")
    assert len(set(PORTS.values())) == 2, f"tasks all in one worker: {PORTS}"
    assert [(s, d) for s, d in SEEN if PORTS[s] != PORTS[d]], "no tuple crossed workers"
    for src in FAN_IN:
        want = expected(src)
        where = {e: i for i, e in enumerate(want)}
        mine = [(d, got) for (s, d), got in SEEN.items() if s == src]
        # each destination got part of what this fan task emitted, in emitted order, with its
        # tracking; together exactly all of it
        for dest, got in mine:
            positions = [where[e] for e in got]
            assert positions == sorted(positions), (src, dest, got[:12])
        assert sorted(e for _, got in mine for e in got) == sorted(want)
    assert sorted(ACKED) == sorted(tracked * 2) and not FAILED


class Burst(Placed):
    """Emits 250 tuples per input, each anchored to it (tracked when the input is)."""
    outputs = ["n", "k", "s"]

    def process(self, tup: Any) -> None:
        i, s = tup["n"], tup.task
        with LOCK:
            FAN_IN[self.task].append((s, i))
        for k in range(250):
            self.emit([i, k, s])


def test_anchored_emits_past_a_runs_cap_arrive_once_in_order_and_ack(
        cluster: LocalCluster) -> None:
    # a batch size of 10 caps a run at 100 tuples: each input's 250 anchored emits to a task
    # in the other worker fill runs that are sent in the middle of the bolt's pass
    _reset()
    FAN_IN.clear()
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, 2)
    b.set_bolt("burst", Burst, 2).shuffle_grouping("numbers")
    b.set_bolt("record", RecordFan, 2).shuffle_grouping("burst")
    n = 60
    cluster.submit_topology("burst", {"topology.workers": 2, "topology.acker.executors": 2,
                                      "topology.transfer.batch.size": 10,
                                      "topology.disable.loadaware.messaging": True,
                                      "test.numbers": n, "topology.max.spout.pending": None},
                            b.create_topology())
    tracked = sorted(i for i in range(n) if i % 3)
    wait_until(lambda: len(ACKED) >= 2 * len(tracked)
               and sum(len(v) for v in SEEN.values()) >= 2 * n * 250, 60,
               message=lambda: f"acked {len(ACKED)}, delivered "
                               f"{sum(len(v) for v in SEEN.values())}")
    crossed = [(s, d) for s, d in SEEN if PORTS[s] != PORTS[d]]
    assert crossed, f"no tuple crossed workers: {PORTS}"
    for src in FAN_IN:
        want = [(s, i, k, i % 3 != 0) for s, i in FAN_IN[src] for k in range(250)]
        where = {e: i for i, e in enumerate(want)}
        mine = [got for (s, _), got in SEEN.items() if s == src]
        for got in mine:            # each destination's share in emitted order
            positions = [where[e] for e in got]
            assert positions == sorted(positions), (src, got[:12])
        assert sorted(e for got in mine for e in got) == sorted(want)
    assert max(len(SEEN[pair]) for pair in crossed) > 100, "no run reached its cap"
    assert sorted(ACKED) == sorted(tracked * 2) and not FAILED


class Sentences(Spout):        # replaced by complete_topology's fixed tuples
    outputs = ["line"]


class Split(Placed):
    outputs = ["word"]

    def process(self, tup: Any) -> None:
        for w in tup["line"].split():       # anchored to tup: the words share its roots
            self.emit([w])


class FailSome(Placed):
    """Fails the first arrival of every word that starts with 'x'; acks everything else."""

    def process(self, tup: Any) -> None:
        w = tup["word"]
        with LOCK:
            SEEN[(0, self.task)].append((len(w), True))
            first = w.startswith("x") and w not in FAILED_ONCE
            FAILED_ONCE.add(w)
        if first:
            raise ValueError(f"failing {w} once")


def _lines(n: int, bad: set[int]) -> list[str]:
    """``n`` lines of 8 words; each line numbered in ``bad`` holds a word FailSome fails."""
    lines = [f"a b c d e{i} f g h" for i in range(n)]
    for i in bad:
        lines[i] = f"a b x{i} d e f g h"
    return lines


def _complete_across_two_workers(b: TopologyBuilder, lines: list[str]) -> Any:
    result = complete_topology(
        b.create_topology(), {"sentences": [[line] for line in lines]},
        conf={"topology.workers": 2, "topology.acker.executors": 2,
              "topology.max.spout.pending": None}, timeout=60)
    assert len(set(PORTS.values())) == 2, f"tasks all in one worker: {PORTS}"
    return result


def test_a_failed_word_fails_only_its_own_sentence_across_workers() -> None:
    _reset()
    bad = {17, 99, 150}
    b = TopologyBuilder()
    b.set_spout("sentences", Sentences, 1)
    b.set_bolt("split", Split, 2).shuffle_grouping("sentences")
    b.set_bolt("sink", FailSome, 2).fields_grouping("split", ["word"])
    result = _complete_across_two_workers(b, _lines(200, bad))
    # the mock spout of complete_topology replays nothing: each bad sentence fails once,
    # every other sentence (sharing runs with the bad ones) is acked
    assert result.failed == bad
    assert result.acked == set(range(200)) - bad


class SplitBatch(Placed):
    """A batch bolt: each line's words in one emit_many anchored to the line."""
    outputs = ["word"]

    def process_batch(self, tuples: Any) -> None:
        for tup in tuples:
            self.emit_many([[w] for w in tup["line"].split()], anchors=[tup])


COUNTED: dict[str, int] = defaultdict(int)


class LazyCount(Placed):
    lazy_batch = True

    def process_batch(self, tuples: Any) -> None:
        with LOCK:
            for w in tuples.column("word"):
                COUNTED[w] += 1


def test_anchored_runs_of_a_batch_bolt_cross_workers_and_fail_only_their_own_lines() -> None:
    # a batch bolt's emit_many anchored to each input is held and routed together: one run
    # by tree per target task, each word with its own edge and its line's root, by column
    # to the other worker: a per-tuple bolt failing one word fails that word's line only,
    # and a lazy_batch bolt counts every word once
    _reset()
    COUNTED.clear()
    bad = {17, 99, 150, 151, 152, 298}
    lines = _lines(300, bad)
    b = TopologyBuilder()
    b.set_spout("sentences", Sentences, 1)
    # one subscriber per split component: emit_many makes runs for a stream's only one
    b.set_bolt("split", SplitBatch, 2).shuffle_grouping("sentences")
    b.set_bolt("sink", FailSome, 2).fields_grouping("split", ["word"])
    b.set_bolt("split2", SplitBatch, 2).shuffle_grouping("sentences")
    b.set_bolt("count", LazyCount, 2).fields_grouping("split2", ["word"])
    result = _complete_across_two_workers(b, lines)
    assert result.failed == bad
    assert result.acked == set(range(300)) - bad
    want: dict[str, int] = defaultdict(int)
    for line in lines:
        for w in line.split():
            want[w] += 1
    assert COUNTED == want


def test_a_malformed_run_is_dropped_and_the_worker_goes_on(caplog: Any) -> None:
    _reset()
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, 1)
    b.set_bolt("record", Record, 2).all_grouping("numbers")
    with LocalCluster() as cluster, caplog.at_level(logging.WARNING):
        cluster.submit_topology("runs", {"topology.workers": 2, "topology.acker.executors": 0,
                                         "test.numbers": 10**9}, b.create_topology())
        wait_until(lambda: len(SEEN) == 2 and all(len(v) > 100 for v in SEEN.values()), 30,
                   message="both record tasks receiving")
        (src, dest), = [(s, d) for s, d in SEEN if PORTS[d] != PORTS[s]] or [(0, 0)]
        assert dest, f"no record task in the other worker: {PORTS}"
        bad = [[src, "default", [2, [1, 2]], [5], [[7], 0]],     # 2 values, 1 id
               # tuples by tree: a root that is not an int, ids that miss a value
               [src, "default", [2, [1, 2]], [5, 6], [7, [8]]],
               [src, "default", [2, [1, 2]], [5], [7]],
               # anchored runs by column: counts that do not add up to the values, a
               # first run whose roots refer back, a pair that is not [edge, count]
               [src, "default", [2, [1, 2]], [[5, 1]], [[7]]],
               [src, "default", [1, [1]], [[5, 1]], [0]],
               [src, "default", [1, [1]], [[5, "1"]], [[7]]]]
        conn = LocalTransport({}).connect(TOPOLOGY[0], "127.0.0.1", PORTS[dest])
        receiver = next(w for w in cluster.workers("runs") if w.port == PORTS[dest])
        for entry in bad:               # a message of one entry each, for task dest
            conn.send([(dest, msgpack.packb([entry]))])
        # each dropped; one line for the sender in a minute
        wait_until(lambda: receiver.inbox.dropped >= 6, 10, message="not all were dropped")
        assert sum("malformed batch" in r.getMessage() for r in caplog.records) == 1, \
            caplog.text
        before = len(SEEN[(src, dest)])
        wait_until(lambda: len(SEEN[(src, dest)]) > before + 100, 10,
                   message="the worker stopped delivering after the malformed runs")


def test_a_malformed_run_for_an_acker_is_dropped_and_acking_goes_on(caplog: Any) -> None:
    # runs for an acker task are applied straight to its Acker when they arrive: a bad one
    # is logged and dropped like any other malformed batch, and trees keep completing
    _reset()
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, 1)
    b.set_bolt("record", Record, 2).shuffle_grouping("numbers")
    with LocalCluster() as cluster, caplog.at_level(logging.WARNING):
        cluster.submit_topology("acks", {"topology.workers": 2, "topology.acker.executors": 2,
                                         "topology.max.spout.pending": 200,
                                         "test.numbers": 10**9}, b.create_topology())
        wait_until(lambda: len(ACKED) > 100, 30, message=lambda: f"acked {len(ACKED)}")
        worker = next(w for w in cluster.workers("acks") if w.local.ackers)
        acker = next(iter(worker.local.ackers))
        bad = [[0, "__ack_ack", [[1, "x"]], 0, None],     # an edge that is not an int
               [0, "__ack_init", [[1, 2]], 0, None]]      # an init without its task
        conn = LocalTransport({}).connect(TOPOLOGY[0], "127.0.0.1", worker.port)
        for entry in bad:               # a message of one entry each, for the acker task
            conn.send([(acker, msgpack.packb([entry]))])
        wait_until(lambda: worker.inbox.dropped >= 2, 10, message="not all were dropped")
        assert sum("malformed batch" in r.getMessage() for r in caplog.records) == 1, \
            caplog.text
        before = len(ACKED)
        wait_until(lambda: len(ACKED) > before + 100, 10,
                   message="trees stopped completing after the malformed acker runs")
        assert not FAILED


def test_a_malformed_completion_for_a_spout_is_dropped_and_the_spout_goes_on(
        caplog: Any) -> None:
    _reset()
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, 2)
    b.set_bolt("record", Record, 2).shuffle_grouping("numbers")
    with LocalCluster() as cluster, caplog.at_level(logging.WARNING):
        cluster.submit_topology("done", {"topology.workers": 2, "topology.acker.executors": 2,
                                         "topology.max.spout.pending": 200,
                                         "test.numbers": 10**9}, b.create_topology())
        wait_until(lambda: len(ACKED) > 100, 30, message=lambda: f"acked {len(ACKED)}")
        spout = min(t for t in PORTS if t not in {d for _, d in SEEN})
        bad = [[0, "__ack_ack", [[]], 0, None],           # no root
               [0, "__ack_fail", [[[1, 2]]], 0, None]]    # a root that is a list
        conn = LocalTransport({}).connect(TOPOLOGY[0], "127.0.0.1", PORTS[spout])
        receiver = next(w for w in cluster.workers("done") if w.port == PORTS[spout])
        for entry in bad:
            conn.send([(spout, msgpack.packb([entry]))])
        # dropped by the inbox before the spout sees them (not from an acker task, no root)
        wait_until(lambda: receiver.inbox.dropped >= 2, 10, message="not all were dropped")
        assert "malformed batch" in caplog.text
        before = len(ACKED)
        wait_until(lambda: len(ACKED) > before + 100, 10,
                   message="the spout stopped after the malformed completions")
        assert "loop died" not in caplog.text and not FAILED


class LazyReader(Placed):
    lazy_batch = True

    def process_batch(self, tuples: Any) -> None:
        list(tuples.column("n"))


class BatchReader(Placed):
    def process_batch(self, tuples: Any) -> None:
        [t["n"] for t in tuples]


def _junk(rng: random.Random) -> Any:
    return rng.choice([None, 0, -1, 2**64 - 1, True, "x", [], [1, "a"], [[2]], {"a": 1}])


def _random_entry(rng: random.Random, tasks: list[int]) -> list[Any]:
    """A wire entry (or, one time in ten, something else) with every field drawn from
    plausible and implausible values."""
    n = rng.randrange(4)
    values = [rng.choice([[_junk(rng)], [_junk(rng), _junk(rng)], [_junk(rng)] * 3,
                          _junk(rng)]) for _ in range(n)]
    tid = rng.choice([0, None, rng.getrandbits(64), [_junk(rng) for _ in range(n)],
                      [rng.getrandbits(64) for _ in range(n)], _junk(rng),
                      [[rng.getrandbits(64), rng.randrange(-1, 3)] for _ in range(n)]])
    roots = rng.choice([None, [rng.choice([[1], [2, 3], 0, _junk(rng)]) for _ in range(n)],
                        [rng.getrandbits(64)], _junk(rng)])
    stream = rng.choice(["default", "__ack_ack", "__ack_init", "__ack_fail", "__tick", "nope",
                         5])
    entry = [rng.choice(tasks), stream, values if rng.random() < 0.8 else _junk(rng), tid,
             roots]
    return entry if rng.random() < 0.9 else rng.choice([entry[:4], _junk(rng)])


def test_random_entries_on_a_workers_port_never_stop_it(caplog: Any) -> None:
    # well-formed msgpack, nonsense entries: for spouts, ackers, per-tuple, batch and
    # lazy_batch bolts, of every stream; each is dropped (or reaches a bolt as data) and the
    # workers go on completing trees
    _reset()
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, 2)
    b.set_bolt("record", Record, 2).shuffle_grouping("numbers")
    b.set_bolt("lazy", LazyReader, 2).shuffle_grouping("numbers")
    b.set_bolt("batch", BatchReader, 2).shuffle_grouping("numbers")
    rng = random.Random(11)
    with LocalCluster() as cluster, caplog.at_level(logging.WARNING):
        cluster.submit_topology("fuzz", {"topology.workers": 2, "topology.acker.executors": 2,
                                         "topology.max.spout.pending": 200,
                                         "test.numbers": 10**9}, b.create_topology())
        wait_until(lambda: len(ACKED) > 100, 30, message=lambda: f"acked {len(ACKED)}")
        tasks = list(range(12))
        for port in set(PORTS.values()):
            conn = LocalTransport({}).connect(TOPOLOGY[0], "127.0.0.1", port)
            for _ in range(1500):
                batch = [_random_entry(rng, tasks) for _ in range(rng.randrange(1, 4))]
                # for a task of either worker (forwarded if not the receiver's), or a
                # control message, or a task nobody runs
                task = rng.choice([*tasks, 0, -3, 10**6])
                conn.send([(task, msgpack.packb(batch))])
        before = len(ACKED)
        wait_until(lambda: len(ACKED) > before + 300, 20,
                   message=lambda: f"trees stopped completing: {caplog.text[-2000:]}")
        assert "malformed" in caplog.text
        # nothing of it reached a bolt: every tuple Record saw is a number from a spout task
        spouts = {t for t in PORTS if t not in {d for _, d in SEEN}}
        with LOCK:
            seen = [(src, n) for (src, _), got in SEEN.items() for n, _ in got]
        assert {src for src, _ in seen} <= spouts
        assert all(n.__class__ is int and n >= 0 for _, n in seen)
        # one line per sender a minute, not one per bad message (6000 of them)
        dropped = [r for r in caplog.records if "malformed batch" in r.getMessage()]
        assert len(dropped) <= 8, len(dropped)
        assert "loop died" not in caplog.text, caplog.text[-3000:]
        assert len(cluster.workers("fuzz")) == 2 and all(
            w.is_alive() for w in cluster.workers("fuzz"))


def test_a_malformed_load_report_is_ignored_and_a_good_one_is_believed(caplog: Any) -> None:
    # load reports are control entries between workers (squall.runtime.load): a report of
    # the wrong shape is one warning and changes nothing; the worker goes on delivering
    _reset()
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, 2)
    b.set_bolt("record", Record, 2).shuffle_grouping("numbers")
    with LocalCluster() as cluster, caplog.at_level(logging.WARNING):
        cluster.submit_topology("loads", {"topology.workers": 2, "topology.acker.executors": 0,
                                          "test.numbers": 10**9}, b.create_topology())
        wait_until(lambda: len(SEEN) == 2, 30, message="both record tasks receiving")
        worker, peer = cluster.workers("loads")
        conn = LocalTransport({}).connect(TOPOLOGY[0], "127.0.0.1", worker.port)
        who = f"local:{peer.port}"          # a worker of the assignment (strangers are dropped)
        for report in ("garbage", [[999, 7.5]], [["999", 0.5]], {"999": 0.5}):
            conn.send([(0, msgpack.packb(["load", who, report]))])
        conn.send([(0, msgpack.packb(["load", who, [[999, 0.75]]]))])
        wait_until(lambda: worker.load.remote.get(999) == 0.75, 10,
                   message=lambda: f"the good report was not taken: {worker.load.remote}")
        warnings = [r.getMessage() for r in caplog.records if "load report" in r.getMessage()]
        assert len(warnings) == 4, warnings
        busy = {key: len(v) for key, v in SEEN.items()}
        wait_until(lambda: all(len(SEEN[key]) > n + 100 for key, n in busy.items()), 10,
                   message="the workers stopped delivering after the load reports")
        assert "loop died" not in caplog.text


#: line -> words of it the counting bolts processed; line -> that number when it was acked
PROCESSED: dict[int, int] = defaultdict(int)
AT_ACK: dict[int, int] = {}


class NumberedLines(Spout):
    """Lines ``i`` of ``i % 7 + 3`` words, each tracked by ``i``; at its ack, how many of its
    words were processed is noted."""
    outputs = ["line"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.n, self.i = conf["test.lines"], 0

    def next_tuple(self) -> None:
        if self.i < self.n:
            i, self.i = self.i, self.i + 1
            self.emit([" ".join(f"{i}:{k}" for k in range(i % 7 + 3))], tup_id=i)

    def ack(self, tup_id: Any) -> None:
        with LOCK:
            AT_ACK[tup_id] = PROCESSED[tup_id]

    def fail(self, tup_id: Any) -> None:
        with LOCK:
            FAILED.append(tup_id)


class CountPerLine(Placed):
    def process(self, tup: Any) -> None:
        with LOCK:
            PROCESSED[int(tup["word"].split(":")[0])] += 1


def test_a_line_whose_words_are_held_by_tree_completes_only_once_all_are_processed() -> None:
    # the batch splitter's anchored emit_many values are held past its pass (each with its
    # own edge, XORed into its line at once) and the line itself is acked before they are
    # routed: its tree must still complete only after every word was processed, in either
    # worker
    _reset()
    PROCESSED.clear()
    AT_ACK.clear()
    n = 400
    b = TopologyBuilder()
    b.set_spout("lines", NumberedLines, 1)
    b.set_bolt("split", SplitBatch, 2).shuffle_grouping("lines")
    b.set_bolt("count", CountPerLine, 3).fields_grouping("split", ["word"])
    with LocalCluster() as cluster:
        cluster.submit_topology("held", {"topology.workers": 2, "topology.acker.executors": 2,
                                         "test.lines": n}, b.create_topology())
        wait_until(lambda: len(AT_ACK) + len(FAILED) == n, 30, message="not every line ended")
    assert len(set(PORTS.values())) == 2, f"tasks all in one worker: {PORTS}"
    assert not FAILED
    assert AT_ACK == {i: i % 7 + 3 for i in range(n)}
