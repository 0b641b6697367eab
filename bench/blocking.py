"""A bolt that blocks, on the worker's loop and on a thread of its own.

    python -m bench.blocking [--rounds 3] [--seconds 4] [--every 1000] [--block-ms 5]

Word count in one local worker (spout -> split -> count, acking off), and a side branch: every
``--every``-th sentence also goes to a ``store`` bolt whose ``process`` blocks for
``--block-ms`` (``time.sleep``, standing for a database write). Each round runs the topology
twice, with ``store`` on the loop and with ``dedicated_thread = True``, and counts the words
the count bolts got and the sentences ``store`` finished over ``--seconds`` after a one-second
warm-up. Prints each round and the median ratio (thread / loop) of words per second.
"""
from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from squall import Bolt, LocalCluster, Spout, Stream, TopologyBuilder
from squall.api.topology import Topology

SENTENCE = "the quick brown fox jumps over the lazy dog again"
#: the bolt instances of the current run (each counts its own; read between runs)
_counters: list[Any] = []


class Sentences(Spout):
    outputs = [Stream(["sentence"]), Stream(["sentence"], name="sample")]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.every = int(conf["bench.every"])
        self.i = 0

    def next_tuple(self) -> None:
        self.i += 1
        self.emit((SENTENCE,))
        if self.i % self.every == 0:
            self.emit((SENTENCE,), "sample")


class Split(Bolt):
    outputs = ["word"]

    def process(self, tup: Any) -> None:
        for word in tup.values[0].split():
            self.emit((word,))


class Count(Bolt):
    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.n = 0
        self.counts: dict[str, int] = {}
        _counters.append(self)

    def process(self, tup: Any) -> None:
        word = tup.values[0]
        self.counts[word] = self.counts.get(word, 0) + 1
        self.n += 1


class Store(Bolt):
    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.block = float(conf["bench.block.ms"]) / 1000.0
        self.n = 0
        _counters.append(self)

    def process(self, tup: Any) -> None:
        time.sleep(self.block)          # stands for a blocking write
        self.n += 1


class ThreadedStore(Store):
    dedicated_thread = True


def topology(threaded: bool) -> Topology:
    b = TopologyBuilder()
    b.set_spout("sentences", Sentences)
    b.set_bolt("split", Split).shuffle_grouping("sentences")
    b.set_bolt("count", Count).fields_grouping("split", ["word"])
    b.set_bolt("store", ThreadedStore if threaded else Store).shuffle_grouping(
        "sentences", "sample")
    return b.create_topology()


def totals() -> tuple[int, int]:
    words = sum(c.n for c in _counters if isinstance(c, Count))
    stored = sum(c.n for c in _counters if isinstance(c, Store))
    return words, stored


def run(threaded: bool, seconds: float, every: int, block_ms: float) -> tuple[float, float]:
    """Words/s counted and sentences/s stored over ``seconds`` after a 1 s warm-up."""
    _counters.clear()
    conf = {"topology.workers": 1, "topology.acker.executors": 0, "bench.every": every,
            "bench.block.ms": block_ms}
    with LocalCluster() as cluster:
        cluster.submit_topology("blocking", conf, topology(threaded))
        time.sleep(1.0)                 # warm-up (a benchmark's window, not synchronization)
        w0, s0, t0 = *totals(), time.perf_counter()
        time.sleep(seconds)
        w1, s1, t1 = *totals(), time.perf_counter()
    return (w1 - w0) / (t1 - t0), (s1 - s0) / (t1 - t0)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.blocking")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=4.0)
    p.add_argument("--every", type=int, default=1000,
                   help="one sentence in this many goes to the blocking bolt (default 1000)")
    p.add_argument("--block-ms", type=float, default=5.0,
                   help="how long the blocking bolt blocks per tuple (default 5)")
    a = p.parse_args(argv)
    print(f"one worker, acking off; 1 in {a.every} sentences to a bolt blocking "
          f"{a.block_ms:g} ms each; {a.seconds:g} s per run")
    print(f"  {'round':>5}  {'store on':<9} {'words/s':>11} {'stored/s':>9}")
    ratios = []
    for r in range(a.rounds):
        got = {}
        for threaded in (False, True):
            words, stored = run(threaded, a.seconds, a.every, a.block_ms)
            got[threaded] = words
            print(f"  {r + 1:>5}  {'thread' if threaded else 'loop':<9} {words:>11,.0f} "
                  f"{stored:>9,.0f}")
        ratios.append(got[True] / got[False])
    print(f"words/s, thread / loop: {', '.join(f'{x:.2f}' for x in ratios)}; "
          f"median {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
