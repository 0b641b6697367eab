"""Tracked tuples through one hop: a spout emitting with ``tup_id`` into a no-op bolt.

    python -m bench.onehop [--runs 5] [--tuples 60000]

Measures the acking machinery alone (init, ack and completion messages per tree) in one
LocalCluster worker with one acker and ``topology.max.spout.pending: 5000``: tuples acked per
second from submit until the last ack, median of ``--runs``.
"""
from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from squall import Bolt, LocalCluster, Spout, TopologyBuilder

_acked = [0]


class Tracked(Spout):
    outputs = ["n", "word"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.n = int(conf["bench.tuples"])
        self.i = 0

    def next_tuple(self) -> None:
        if self.i < self.n:
            self.i += 1
            self.emit((self.i, "w"), tup_id=self.i)

    def ack(self, tup_id: Any) -> None:
        _acked[0] += 1


class Nothing(Bolt):
    def process(self, tup: Any) -> None:
        pass


def run_once(n: int) -> float:
    b = TopologyBuilder()
    b.set_spout("tracked", Tracked)
    b.set_bolt("nothing", Nothing).shuffle_grouping("tracked")
    _acked[0] = 0
    with LocalCluster() as cluster:
        t0 = time.perf_counter()
        cluster.submit_topology("onehop", {"bench.tuples": n,
                                           "topology.max.spout.pending": 5000},
                                b.create_topology())
        while _acked[0] < n:
            time.sleep(0.002)
        return n / (time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.onehop")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--tuples", type=int, default=60_000)
    args = p.parse_args(argv)
    rates = [run_once(args.tuples) for _ in range(args.runs)]
    print(f"one hop with acking, {args.tuples:,} tracked tuples, median of {args.runs}: "
          f"{statistics.median(rates):,.0f} tuples/s "
          f"({', '.join(f'{r / 1000:,.0f}k' for r in rates)})")


if __name__ == "__main__":
    main()
