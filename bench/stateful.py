"""Stateful word count: a StatefulBolt counter (memory and redis providers) against a plain
counter, alternated in one run.

    python -m bench.stateful [--rounds 5] [--sizes 10000 50000] [--interval-ms 1000]

Spout -> split (shuffle) -> count (fields grouping) in one LocalCluster worker, one task each,
sentences of 10 words, acking on (stateful bolts need it). Arms: ``plain`` (a Bolt counting
in a dict), ``memory`` (a StatefulBolt counting in its KeyValueState, ``memory`` provider) and
``redis`` (the same with the ``redis`` provider, against a redis-server this bench starts on a
free port). Checkpoints every ``--interval-ms``. A run ends when every sentence is acked (for
the stateful arms that is after the checkpoint holding it committed). The figure is the marginal
rate between the two sizes, (words2 - words1) / (t2 - t1), so start-up, shut-down and the last
checkpoint's wait cancel. Each round runs every arm once, in a rotating order; printed: the
median rate per arm and the median of the per-round ratios to ``plain``.
``topology.max.spout.pending`` is 2000 for ``plain`` and 200000 for the stateful arms, whose
acks wait up to a checkpoint interval (pending must cover what a second of input holds).
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench import host
from squall import Bolt, LocalCluster, Spout, StatefulBolt, TopologyBuilder
from squall.api.topology import Topology

SENTENCE = "the quick brown fox jumps over the lazy dog again"
_state: dict[str, int] = {"acked": 0}


class Sentences(Spout):
    outputs = ["sentence"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.n = conf["bench.sentences"]
        self.i = 0

    def next_tuple(self) -> None:
        i = self.i
        if i < self.n:
            self.i = i + 1
            self.emit((SENTENCE,), tup_id=i)

    def ack(self, tup_id: Any) -> None:
        _state["acked"] += 1

    def fail(self, tup_id: Any) -> None:
        self.emit((SENTENCE,), tup_id=tup_id)


class Split(Bolt):
    outputs = ["word"]

    def process(self, tup: Any) -> None:
        emit = self.emit
        for w in tup.values[0].split():
            emit((w,))


class PlainCount(Bolt):
    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.counts: dict[str, int] = {}

    def process(self, tup: Any) -> None:
        w = tup.values[0]
        self.counts[w] = self.counts.get(w, 0) + 1


class StatefulCount(StatefulBolt):
    def init_state(self, state: Any) -> None:
        self.counts = state

    def process(self, tup: Any) -> None:
        w = tup.values[0]
        self.counts.put(w, self.counts.get(w, 0) + 1)


def topology(stateful: bool) -> Topology:
    b = TopologyBuilder()
    b.set_spout("sentences", Sentences)
    b.set_bolt("split", Split).shuffle_grouping("sentences")
    b.set_bolt("count", StatefulCount if stateful else PlainCount).fields_grouping(
        "split", ["word"])
    return b.create_topology()


def run_once(n: int, arm: str, interval_ms: int, redis_conf: dict[str, Any]) -> float:
    """Seconds from submit until all ``n`` sentences are acked."""
    _state["acked"] = 0
    conf: dict[str, Any] = {"bench.sentences": n, "topology.acker.executors": 1,
                            "topology.max.spout.pending": 2000 if arm == "plain" else 200_000,
                            "topology.state.checkpoint.interval.ms": interval_ms,
                            "topology.message.timeout.secs": 120}
    if arm == "memory":
        conf["topology.state.provider.config"] = {"key_prefix": uuid.uuid4().hex}
    elif arm == "redis":
        conf["topology.state.provider"] = "redis"
        conf["topology.state.provider.config"] = {**redis_conf,
                                                  "key_prefix": f"bench-{uuid.uuid4().hex}:"}
    with LocalCluster() as cluster:
        t0 = time.perf_counter()
        cluster.submit_topology("bench-stateful", conf, topology(arm != "plain"))
        while _state["acked"] < n:
            time.sleep(0.002)
        return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.stateful")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--sizes", type=int, nargs=2, default=(10_000, 50_000))
    p.add_argument("--interval-ms", type=int, default=1000)
    p.add_argument("--arms", nargs="+", default=["plain", "memory", "redis"])
    args = p.parse_args(argv)
    from squall.testing.redis_fixtures import RedisServer
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp) / "redis")
        server.start()
        try:
            rates: dict[str, list[float]] = {arm: [] for arm in args.arms}
            ratios: dict[str, list[float]] = {arm: [] for arm in args.arms}
            print(host.line(), flush=True)
            small, big = args.sizes
            for r in range(args.rounds):
                order = args.arms[r % len(args.arms):] + args.arms[:r % len(args.arms)]
                this: dict[str, float] = {}
                for arm in order:
                    t1 = run_once(small, arm, args.interval_ms, server.conf())
                    t2 = run_once(big, arm, args.interval_ms, server.conf())
                    this[arm] = (big - small) * 10 / (t2 - t1)
                    rates[arm].append(this[arm])
                if "plain" in this:
                    for arm in args.arms:
                        ratios[arm].append(this[arm] / this["plain"])
                print(f"  round {r + 1}: " + ", ".join(f"{a} {this[a] / 1000:,.0f}k"
                                                       for a in args.arms), flush=True)
        finally:
            server.stop()
    print(f"stateful word count, local mode, 1 worker, acking on, checkpoint every "
          f"{args.interval_ms} ms; marginal words/s between {small:,} and {big:,} sentences; "
          f"median of {args.rounds} rounds")
    print(f"  {'arm':<8} {'words/s':>12} {'x plain':>8}   runs")
    for arm in args.arms:
        ratio = f"{statistics.median(ratios[arm]):.2f}" if ratios[arm] else "-"
        print(f"  {arm:<8} {statistics.median(rates[arm]):>12,.0f} {ratio:>8}   "
              f"({', '.join(f'{x / 1000:,.0f}k' for x in rates[arm])})", flush=True)


if __name__ == "__main__":
    main()
