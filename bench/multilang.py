"""Multi-lang and streamparse, local mode, one worker, alternated in one run.

    python -m bench.multilang [--runs 5] [--sentences 20000] [--cases shell-node ...]

* ``shell-node``, ``shell-pystorm``: spout -> ShellBolt pass-through -> sink, acking on
  (1 acker, ``topology.max.spout.pending`` 2000); the pass-through runs in a subprocess
  (plain Node against the protocol, or a pystorm 3.1.4 bolt). Figure: tuples/s through the
  ShellBolt.
* ``wc-native``, ``wc-streamparse``: word count (spout -> split -> count, fields grouping),
  acking on, per tuple; squall's own components, or streamparse 5 components (``Spout``,
  ``Bolt`` subclasses, ``self.emit([w])``) hosted in-process from a streamparse
  ``Topology`` class. Figure: words/s; the ratio streamparse/native per round.

Each run counts the rate from its first 10 % of tuples counted to its end (start-up stays
out), by wall clock and by this process's CPU time (the worker's; a shell subprocess's CPU is
not in it); the cases run alternately, round after round, and the medians of ``--runs``
rounds are printed. Units: tuples/s through the ShellBolt, words/s counted.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from streamparse import Bolt as SPBolt
from streamparse import Grouping
from streamparse import Spout as SPSpout
from streamparse import Topology as SPTopology

from bench import host, wordcount
from squall import LocalCluster, ShellBolt, Spout, TopologyBuilder
from squall.api.topology import Topology
from squall.multilang.streamparse import from_streamparse

HERE = Path(__file__).resolve().parent
ACKING = {"topology.acker.executors": 1, "topology.max.spout.pending": 2000}


# -- shell pass-through ------------------------------------------------------------------------
class Lines(Spout):
    outputs = ["line"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.n = conf["bench.sentences"]
        self.i = 0

    def next_tuple(self) -> None:
        if self.i < self.n:
            self.i += 1
            self.emit((wordcount.SENTENCE,), tup_id=self.i)

    def ack(self, tup_id: Any) -> None:
        wordcount._state["acked"] += 1


class NodePass(ShellBolt):
    command = ["node", str(HERE / "multilang_passthrough.js")]
    outputs = ["line"]


class PystormPass(ShellBolt):
    command = [sys.executable, str(HERE / "multilang_passthrough.py")]
    outputs = ["line"]


def shell_topology(bolt: type) -> Topology:
    b = TopologyBuilder()
    b.set_spout("lines", Lines)
    b.set_bolt("pass", bolt).shuffle_grouping("lines")
    b.set_bolt("sink", wordcount.Count).shuffle_grouping("pass")
    return b.create_topology()


# -- streamparse word count --------------------------------------------------------------------
class SPSentences(SPSpout):
    outputs = ["sentence"]

    def initialize(self, storm_conf: dict[str, Any], context: Any) -> None:
        self.n = storm_conf["bench.sentences"]
        self.i = 0

    def next_tuple(self) -> None:
        if self.i < self.n:
            self.i += 1
            self.emit([wordcount.SENTENCE], tup_id=self.i)

    def ack(self, tup_id: Any) -> None:
        wordcount._state["acked"] += 1


class SPSplit(SPBolt):
    outputs = ["word"]

    def process(self, tup: Any) -> None:
        for word in tup.values[0].split():
            self.emit([word])


class SPCount(SPBolt):
    def initialize(self, storm_conf: dict[str, Any], context: Any) -> None:
        self.counts: dict[str, int] = {}
        self.words = 0
        wordcount._counters.append(self)

    def process(self, tup: Any) -> None:
        word = tup.values[0]
        self.counts[word] = self.counts.get(word, 0) + 1
        self.words += 1


class SPWordCount(SPTopology):
    sentences = SPSentences.spec()
    split = SPSplit.spec(inputs=[sentences])
    count = SPCount.spec(inputs={split: Grouping.fields("word")})


def run_once(topology: Topology, n: int, per: int) -> tuple[float, float]:
    """(wall, process CPU) rate of one run of ``n`` spout tuples (``per`` counted tuples
    each): counted tuples per second from the first 10 % counted to the last counted and
    every spout tuple acked, so start-up and shut-down stay out."""
    wordcount.reset()
    target = n * per
    warm = target // 10
    with LocalCluster() as cluster:
        cluster.submit_topology("bench", {"bench.sentences": n, "bench.tracked": True,
                                          "bench.spout.many": False, **ACKING}, topology)
        while wordcount.counted() < warm:
            time.sleep(0.001)
        t0, c0, w0 = time.perf_counter(), time.process_time(), wordcount.counted()
        while wordcount.counted() < target or wordcount._state["acked"] < n:
            time.sleep(0.001)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return (target - w0) / wall, (target - w0) / cpu


CASES: dict[str, tuple[Any, int]] = {
    "shell-node": (lambda: shell_topology(NodePass), 1),
    "shell-pystorm": (lambda: shell_topology(PystormPass), 1),
    "wc-native": (lambda: wordcount.topology(False), 10),
    "wc-streamparse": (lambda: from_streamparse(SPWordCount), 10),
}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.multilang")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--sentences", type=int, default=20000,
                   help="spout tuples per run (default 20000)")
    p.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(CASES))
    args = p.parse_args(argv)
    print(host.line(), flush=True)
    print(f"multi-lang, local mode, 1 worker, acking on; {args.sentences:,} spout tuples a run, "
          f"rate after the first 10 %; median of {args.runs} alternated rounds")
    rates: dict[str, list[tuple[float, float]]] = {c: [] for c in args.cases}
    for _ in range(args.runs):
        for case in args.cases:
            make, per = CASES[case]
            rates[case].append(run_once(make(), args.sentences, per))
    print(f"  {'case':<15} {'wall /s':>10} {'CPU /s':>10}   wall runs")
    for case in args.cases:
        wall = [r[0] for r in rates[case]]
        cpu = [r[1] for r in rates[case]]
        print(f"  {case:<15} {statistics.median(wall):>10,.0f} {statistics.median(cpu):>10,.0f}"
              f"   ({', '.join(f'{r / 1000:,.1f}k' for r in wall)})")
    if "wc-native" in rates and "wc-streamparse" in rates:
        for i, what in ((0, "wall"), (1, "CPU")):
            ratios = [s[i] / n[i] for s, n in zip(rates["wc-streamparse"], rates["wc-native"])]
            print(f"  streamparse / native ({what}): median {statistics.median(ratios):.2f} "
                  f"({', '.join(f'{r:.2f}' for r in ratios)})")


if __name__ == "__main__":
    main()
