"""A spout feeding a slow bolt: how steadily backpressure lets the spout run.

    python -m bench.pacing [--workers 1 2] [--seconds 10] [--window 0.5] [--cost-ms 0.2]
                           [-c KEY=VALUE ...]

One spout task emitting tracked tuples as fast as it may → one bolt task spinning
``--cost-ms`` per tuple, in a LocalCluster of W workers (with 2 the bolt is in the other
worker: the tuples cross the local transport and the credits pace them). Once the bolt's
queue has reached its high watermark, the spout's emits are read every ``--window`` seconds
for ``--seconds``; printed per W: the spout's tuples per window (least, median, most), the
windows in which it emitted nothing, and the most the bolt's queue and what waited in front of
it held (``queued_peak``) against the queue's capacity. The defaults are squall's
(``topology.executor.receive.buffer.size`` 32768).
"""
from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from squall import Bolt, LocalCluster, Spout, TopologyBuilder
from squall.config import parse_override
from squall.testing import wait_until


class Numbers(Spout):
    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.i = 0

    def next_tuple(self) -> None:
        self.emit([self.i], tup_id=self.i)
        self.i += 1


class Slow(Bolt):
    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.cost = float(conf["bench.cost.ms"]) / 1000.0

    def process(self, tup: Any) -> None:
        end = time.perf_counter() + self.cost
        while time.perf_counter() < end:
            pass


def _stats(cluster: LocalCluster, component: str) -> dict[str, Any]:
    return next(ex for ex in cluster.get_topology_info("pacing")["executors"]
                if ex["component"] == component)


def run(workers: int, seconds: float, window: float, cost_ms: float,
        conf: dict[str, Any]) -> dict[str, Any]:
    b = TopologyBuilder()
    b.set_spout("spout", Numbers)
    b.set_bolt("slow", Slow).shuffle_grouping("spout")
    topo_conf = {"topology.workers": workers, "bench.cost.ms": cost_ms, **conf}
    cap = int(topo_conf.get("topology.executor.receive.buffer.size") or 32768)
    with LocalCluster() as cluster:
        cluster.submit_topology("pacing", topo_conf, b.create_topology())
        wait_until(lambda: _stats(cluster, "slow")["queued_peak"] >= 0.85 * cap, timeout=60)
        counts = []
        last = _stats(cluster, "spout")["emitted"]
        for _ in range(int(seconds / window)):
            deadline = time.monotonic() + window
            wait_until(lambda d=deadline: time.monotonic() >= d, timeout=window + 1,
                       interval=0.01)
            now = _stats(cluster, "spout")["emitted"]
            counts.append(now - last)
            last = now
        peak = _stats(cluster, "slow")["queued_peak"]
    return {"counts": counts, "peak": peak, "capacity": cap}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.pacing")
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--window", type=float, default=0.5)
    p.add_argument("--cost-ms", type=float, default=0.2)
    p.add_argument("-c", dest="conf", action="append", default=[], metavar="KEY=VALUE",
                   help="topology config, a YAML value (repeatable)")
    args = p.parse_args(argv)
    conf = dict(map(parse_override, args.conf))
    print(f"spout → bolt of {args.cost_ms} ms a tuple; the spout's tuples per "
          f"{args.window} s window over {args.seconds} s")
    print(f"  {'W':>2} {'least':>7} {'median':>7} {'most':>7} {'empty':>6} {'peak':>8} "
          f"{'capacity':>9}")
    for w in args.workers:
        r = run(w, args.seconds, args.window, args.cost_ms, conf)
        c = r["counts"]
        print(f"  {w:>2} {min(c):>7,} {statistics.median(c):>7,.0f} {max(c):>7,} "
              f"{sum(1 for n in c if not n):>6} {r['peak']:>8,} {r['capacity']:>9,}",
              flush=True)


if __name__ == "__main__":
    main()
