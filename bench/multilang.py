"""Multi-lang and streamparse, local mode, one worker, alternated in one run.

    python -m bench.multilang [--runs 5] [--sizes 2000 12000] [--cases shell-node ...]

* ``shell-node``, ``shell-pystorm``: spout -> ShellBolt pass-through -> sink, acking on
  (1 acker, ``topology.max.spout.pending`` 2000); the pass-through runs in a subprocess
  (plain Node against the protocol, or a pystorm 3.1.4 bolt). Figure: tuples/s through the
  ShellBolt.
* ``wc-native``, ``wc-streamparse``: word count (spout -> split -> count, fields grouping),
  acking on, per tuple; squall's own components, or streamparse 5 components (``Spout``,
  ``Bolt`` subclasses, ``self.emit([w])``) hosted in-process from a streamparse
  ``Topology`` class. Figure: words/s; the ratio streamparse/native per round.

Every figure is the marginal rate between the two sizes (start-up cancels); the cases run
alternately, one round after another, and the medians of ``--runs`` rounds are printed.
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


def run_once(topology: Topology, n: int, target: int) -> float:
    """Seconds from submit until ``target`` tuples reached the sink / count and every one
    of the ``n`` spout tuples was acked."""
    wordcount.reset()
    with LocalCluster() as cluster:
        t0 = time.perf_counter()
        cluster.submit_topology("bench", {"bench.sentences": n, "bench.tracked": True,
                                          "bench.spout.many": False, **ACKING}, topology)
        while wordcount.counted() < target or wordcount._state["acked"] < n:
            time.sleep(0.002)
        return time.perf_counter() - t0


CASES: dict[str, tuple[Any, int]] = {
    "shell-node": (lambda: shell_topology(NodePass), 1),
    "shell-pystorm": (lambda: shell_topology(PystormPass), 1),
    "wc-native": (lambda: wordcount.topology(False), 10),
    "wc-streamparse": (lambda: from_streamparse(SPWordCount), 10),
}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.multilang")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--sizes", type=int, nargs=2, default=(2000, 12000))
    p.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(CASES))
    args = p.parse_args(argv)
    small, big = args.sizes
    print(host.line(), flush=True)
    print(f"multi-lang, local mode, 1 worker, acking on; marginal rate between {small:,} and "
          f"{big:,} spout tuples; median of {args.runs} alternated rounds")
    rates: dict[str, list[float]] = {c: [] for c in args.cases}
    for _ in range(args.runs):
        for case in args.cases:
            make, per = CASES[case]
            t1 = run_once(make(), small, small * per)
            t2 = run_once(make(), big, big * per)
            rates[case].append((big - small) * per / (t2 - t1))
    for case in args.cases:
        unit = "words/s" if case.startswith("wc") else "tuples/s"
        print(f"  {case:<15} {statistics.median(rates[case]):>12,.0f} {unit:<9} "
              f"({', '.join(f'{r / 1000:,.1f}k' for r in rates[case])})")
    if "wc-native" in rates and "wc-streamparse" in rates:
        ratios = [s / n for s, n in zip(rates["wc-streamparse"], rates["wc-native"])]
        print(f"  streamparse / native: median {statistics.median(ratios):.2f} "
              f"({', '.join(f'{r:.2f}' for r in ratios)})")


if __name__ == "__main__":
    main()
