"""Word count in local mode: spout -> split -> count (fields grouping), one process.

    python -m bench.wordcount [--runs 5] [--sizes 20000 100000]

N sentences of 10 words each (``-c bench.parallelism=2``: two split and two count tasks instead
of one each, so every emit chooses its task); the figure is the *marginal* rate between two sizes,
(words2 - words1) / (t2 - t1), which cancels start-up and shut-down. Forms: per-tuple bolts and
batch (``process_batch``) bolts, acking off (``topology.acker.executors: 0``) and on. Prints the
median of ``--runs`` runs per case.
"""
from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections import Counter
from operator import itemgetter
from typing import Any

from bench import host
from squall import Bolt, LocalCluster, Spout, TopologyBuilder
from squall.api.topology import Topology
from squall.config import parse_override

SENTENCE = "the quick brown fox jumps over the lazy dog again"
_first = itemgetter(0)
_done = threading.Event()
_state: dict[str, Any] = {}
#: the count bolt instances of the current run: each counts its own words (with two workers
#: in one process, two loop threads would lose updates to one shared counter)
_counters: list[Any] = []


class BenchSpout(Spout):
    outputs = ["sentence"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.n = conf["bench.sentences"]
        self.tracked = conf["bench.tracked"]
        self.many = conf["bench.spout.many"]
        self.i = 0

    def next_tuple(self) -> None:
        i = self.i
        if i < self.n:
            if self.tracked:
                self.i = i + 1
                self.emit((SENTENCE,), tup_id=i)
            elif self.many:         # batch form, untracked: up to 100 sentences per call
                k = min(100, self.n - i)
                self.i = i + k
                self.emit_many([(SENTENCE,)] * k)
            else:
                self.i = i + 1
                self.emit((SENTENCE,))

    def ack(self, tup_id: Any) -> None:
        _state["acked"] += 1


class Split(Bolt):
    outputs = ["word"]

    def process(self, tup: Any) -> None:
        emit = self.emit
        for w in tup.values[0].split():
            emit((w,))


class Count(Bolt):
    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.counts: dict[str, int] = {}
        self.words = 0
        _counters.append(self)

    def process(self, tup: Any) -> None:
        w = tup.values[0]
        self.counts[w] = self.counts.get(w, 0) + 1
        self.words += 1


class SplitBatch(Bolt):
    outputs = ["word"]

    def process_batch(self, tuples: list[Any]) -> None:
        emit_many = self.emit_many
        for tup in tuples:
            emit_many(list(zip(tup.values[0].split())), anchors=(tup,))


class CountBatch(Bolt):
    lazy_batch = True           # read the batch's values without a Tuple per word

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.counts: Counter[str] = Counter()
        self.words = 0
        _counters.append(self)

    def process_batch(self, tuples: Any) -> None:
        self.counts.update(map(_first, tuples.values))
        self.words += len(tuples)


def reset() -> None:
    _state.update(acked=0)
    _counters.clear()


def counted() -> int:
    """Words the count bolts of the current run have counted."""
    return sum(c.words for c in _counters)


def topology(batch: bool, parallelism: int = 1) -> Topology:
    """One spout task; ``parallelism`` split and count tasks (with more than one, every emit
    goes through its grouping's choice, as in a cluster)."""
    b = TopologyBuilder()
    b.set_spout("sentences", BenchSpout)
    b.set_bolt("split", SplitBatch if batch else Split, parallelism).shuffle_grouping(
        "sentences")
    b.set_bolt("count", CountBatch if batch else Count, parallelism).fields_grouping(
        "split", ["word"])
    return b.create_topology()


def run_once(n: int, batch: bool, acking: bool,
             conf: dict[str, Any] | None = None) -> tuple[float, float]:
    """(wall, process CPU) seconds from submit until every word is counted (and every
    sentence acked)."""
    reset()
    target = n * 10
    topo_conf = {"bench.sentences": n, "bench.tracked": acking, "bench.spout.many": batch,
                 "topology.acker.executors": 1 if acking else 0,
                 "topology.max.spout.pending": 2000 if acking else None, **(conf or {})}
    # the same conf for the cluster: process-wide keys (worker.gc.thresholds) are read there
    with LocalCluster(dict(conf or {})) as cluster:
        t0, c0 = time.perf_counter(), time.process_time()
        parallelism = int(topo_conf.get("bench.parallelism") or 1)
        cluster.submit_topology("bench", topo_conf, topology(batch, parallelism))
        while counted() < target or (acking and _state["acked"] < n):
            time.sleep(0.002)
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    return elapsed, cpu


def marginal(sizes: tuple[int, int], batch: bool, acking: bool,
             **kw: Any) -> tuple[float, float]:
    """Marginal (wall, CPU) words/s between the two sizes. The CPU figure (words per second
    of process CPU time) is what the machine can do, whatever else runs on it."""
    small, big = sizes
    w1, c1 = run_once(small, batch, acking, **kw)
    w2, c2 = run_once(big, batch, acking, **kw)
    words = (big - small) * 10
    return words / (w2 - w1), words / (c2 - c1)


CASES = [("per-tuple", False, False), ("per-tuple", False, True),
         ("batch", True, False), ("batch", True, True)]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.wordcount")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--sizes", type=int, nargs=2, default=(20_000, 120_000))
    p.add_argument("--cases", nargs="+", metavar="FORM-ACKING",
                   help="e.g. per-tuple-off batch-on (default: all four)")
    p.add_argument("-c", dest="conf", action="append", default=[], metavar="KEY=VALUE",
                   help="topology config for every run, a YAML value (repeatable)")
    args = p.parse_args(argv)
    conf = dict(map(parse_override, args.conf))
    print(host.line(), flush=True)
    print(f"word count, local mode, 1 worker; marginal words/s between {args.sizes[0]:,} and "
          f"{args.sizes[1]:,} sentences of 10 words; median of {args.runs}")
    print(f"  {'form':<10} {'acking':<7} {'wall words/s':>14} {'CPU words/s':>14}   wall runs")
    for form, batch, acking in CASES:
        if args.cases and f"{form}-{'on' if acking else 'off'}" not in args.cases:
            continue
        runs = [marginal(tuple(args.sizes), batch, acking, conf=conf) for _ in range(args.runs)]
        wall = [r[0] for r in runs]
        cpu = [r[1] for r in runs]
        print(f"  {form:<10} {'on' if acking else 'off':<7} {statistics.median(wall):>14,.0f} "
              f"{statistics.median(cpu):>14,.0f}   "
              f"({', '.join(f'{r / 1000:,.0f}k' for r in wall)})", flush=True)


if __name__ == "__main__":
    main()
