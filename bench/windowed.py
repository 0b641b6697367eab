"""Word count with a sliding count window against the plain word count.

    python -m bench.windowed [--rounds 5] [--seconds 4] [--length 1000] [--slide 100] [--acking]

Sentences -> split (shuffle) -> count (fields grouping on the word), one local worker, one
task each. The plain count bolt counts each word in ``process``; the windowed one is a
:class:`squall.WindowedBolt` over ``Count(length)`` sliding by ``Count(slide)`` that keeps
its word counts up to date from each window's ``new`` and ``expired`` tuples (so it counts
each word twice: in and out). Neither emits. Each round runs both, one after the other
(fresh LocalCluster each, the order alternating), and counts the words the count bolt took
over ``--seconds`` after a one-second warm-up; prints each round and the median ratios
(windowed / plain) of words per wall second and per CPU second of the process (the steadier
figure on a loaded host). ``--acking`` turns one acker on (``topology.max.spout.pending:
2000``), so windowed tuples are acked as they leave their last window.
"""
from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from squall import Bolt, Count, LocalCluster, Spout, TopologyBuilder, WindowedBolt
from squall.api.topology import Topology

SENTENCE = "the quick brown fox jumps over the lazy dog again"
#: the count bolt instances of the current run (each counts its words; read between runs)
_counters: list[Any] = []


class Sentences(Spout):
    outputs = ["sentence"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.tracked = bool(conf.get("topology.acker.executors"))
        self.i = 0

    def next_tuple(self) -> None:
        self.i += 1
        if self.tracked:
            self.emit((SENTENCE,), tup_id=self.i)
        else:
            self.emit((SENTENCE,))


class Split(Bolt):
    outputs = ["word"]

    def process(self, tup: Any) -> None:
        for word in tup.values[0].split():
            self.emit((word,))


class PlainCount(Bolt):
    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.n = 0
        self.counts: dict[str, int] = {}
        _counters.append(self)

    def process(self, tup: Any) -> None:
        word = tup.values[0]
        self.counts[word] = self.counts.get(word, 0) + 1
        self.n += 1


class WindowedCount(WindowedBolt):
    """Counts per word over the window, from what enters and what leaves it."""
    window = Count(1000)
    slide = Count(100)

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.n = 0
        self.counts: dict[str, int] = {}
        _counters.append(self)

    def process_window(self, window: Any) -> None:
        counts = self.counts
        get = counts.get
        for tup in window.expired:
            word = tup.values[0]
            counts[word] -= 1
        new = window.new
        for tup in new:
            word = tup.values[0]
            counts[word] = get(word, 0) + 1
        self.n += len(new)


def topology(windowed: bool, length: int, slide: int) -> Topology:
    b = TopologyBuilder()
    b.set_spout("sentences", Sentences)
    b.set_bolt("split", Split).shuffle_grouping("sentences")
    if windowed:
        b.set_bolt("count", WindowedCount, config={
            "topology.bolts.window.length.count": length,
            "topology.bolts.sliding.interval.count": slide}).fields_grouping("split", ["word"])
    else:
        b.set_bolt("count", PlainCount).fields_grouping("split", ["word"])
    return b.create_topology()


def run(windowed: bool, seconds: float, length: int, slide: int, acking: bool
        ) -> tuple[float, float]:
    """Words the count bolt took per wall second and per CPU second of this process, over
    ``seconds`` after a 1 s warm-up."""
    _counters.clear()
    conf: dict[str, Any] = {"topology.workers": 1, "topology.acker.executors": 1 if acking
                            else 0}
    if acking:
        conf["topology.max.spout.pending"] = 2000
    with LocalCluster() as cluster:
        cluster.submit_topology("windowed", conf, topology(windowed, length, slide))
        time.sleep(1.0)                 # warm-up (a benchmark's window, not synchronization)
        n0, t0, c0 = sum(c.n for c in _counters), time.perf_counter(), time.process_time()
        time.sleep(seconds)
        n1, t1, c1 = sum(c.n for c in _counters), time.perf_counter(), time.process_time()
    return (n1 - n0) / (t1 - t0), (n1 - n0) / (c1 - c0)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.windowed")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--seconds", type=float, default=4.0)
    p.add_argument("--length", type=int, default=1000, help="window length, tuples")
    p.add_argument("--slide", type=int, default=100, help="window slide, tuples")
    p.add_argument("--acking", action="store_true", help="one acker, max spout pending 2000")
    a = p.parse_args(argv)
    print(f"one worker, acking {'on' if a.acking else 'off'}; window Count({a.length}) "
          f"sliding by Count({a.slide}); {a.seconds:g} s per run")
    print(f"  {'round':>5}  {'count':<9} {'words/s':>11} {'words/CPU s':>12}")
    wall, cpu = [], []
    for r in range(a.rounds):
        got = {}
        for windowed in ((False, True) if r % 2 == 0 else (True, False)):
            got[windowed] = run(windowed, a.seconds, a.length, a.slide, a.acking)
            print(f"  {r + 1:>5}  {'windowed' if windowed else 'plain':<9} "
                  f"{got[windowed][0]:>11,.0f} {got[windowed][1]:>12,.0f}")
        wall.append(got[True][0] / got[False][0])
        cpu.append(got[True][1] / got[False][1])
    for name, ratios in (("words/s", wall), ("words/CPU s", cpu)):
        print(f"{name}, windowed / plain: {', '.join(f'{x:.2f}' for x in ratios)}; "
              f"median {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
