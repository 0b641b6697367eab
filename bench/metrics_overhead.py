"""The cost of metrics on word count: a metrics consumer fed every second versus none.

    python -m bench.metrics_overhead [--runs 7] [--rounds 12] [--direct-only | --e2e-only]

Two measures, which cover different things.

*Direct*: runs with the consumer, timing what metrics code itself executes, as a share of the
process's CPU time: the worker's timer pass (folding stats into the windows, building each
task's data points, delivering them) and the consumer task's own execution ("reporting"), plus
the always-on built-in counter updates on the tuple path, counted during the run and priced
with ``timeit`` ("counters"). This is the only measure that prices the built-in counters: they
cannot be turned off, so no run without them exists to compare with.

*End to end*: what turning a consumer on costs (``topology.metrics.consumer.register``: every
task reports its data points each bucket, plus a consumer task); the built-in counters run in
both arms. Rounds of three runs, each in a fresh interpreter: two without a consumer and one
with, the metered run's position rotating (first, middle, last) from round to round. Per round,
the CPU seconds of the metered run over the mean of the two plain ones gives the overhead, and
the first plain run over the second gives a null ratio: its spread is how much this machine's
noise alone moves a ratio in that sitting. Figures are medians over rounds (and the
interquartile range). Per-tuple word count, acking off; one run's CPU time is counted from
submit until every word is counted (no start-up or shut-down).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import wordcount

ROOT = Path(__file__).resolve().parent.parent
CHILD = ("import json, sys\nfrom bench.wordcount import run_once\n"
         "n, conf = int(sys.argv[1]), json.loads(sys.argv[2])\n"
         "print(json.dumps(run_once(n, False, False, conf=conf)))\n")


def increment_cost() -> float:
    """Seconds one built-in counter update (``ts.emitted += 1`` on a task) takes."""
    import timeit

    from squall.runtime.task import TaskState
    ts = TaskState("c", 1, None, {})
    loops = 2_000_000
    empty = min(timeit.repeat("pass", globals={"ts": ts}, number=loops, repeat=5))
    inc = min(timeit.repeat("ts.emitted += 1", globals={"ts": ts}, number=loops, repeat=5))
    return max(0.0, inc - empty) / loops


def direct(n: int, conf: dict) -> tuple[float, float, float, int]:
    """(process CPU s, s in the metrics timer pass, s executing the consumer, counter
    updates on the tuple path) for one run of ``n`` sentences with metrics ``conf``."""
    from squall import LocalCluster
    from squall.runtime.stats import executor_stats
    from squall.runtime.timers import Timers

    spent = [0.0]
    original = Timers.run

    def timed(self, now):  # type: ignore[no-untyped-def]
        t = time.perf_counter()
        original(self, now)
        spent[0] += time.perf_counter() - t

    from squall.runtime.executors import BoltExecutor
    batches = [0]
    run_tuples = BoltExecutor._run_tuples

    def counted(self, ts, q, k):  # type: ignore[no-untyped-def]
        batches[0] += 1
        run_tuples(self, ts, q, k)

    Timers.run = timed  # type: ignore[method-assign]
    BoltExecutor._run_tuples = counted  # type: ignore[method-assign]
    try:
        wordcount.reset()
        topo_conf = {"bench.sentences": n, "bench.tracked": False, "bench.spout.many": False,
                     "topology.acker.executors": 0, **conf}
        with LocalCluster() as cluster:
            c0 = time.process_time()
            cluster.submit_topology("bench", topo_conf, wordcount.topology(False))
            while wordcount.counted() < n * 10:
                time.sleep(0.002)
            cpu = time.process_time() - c0
            stats = [executor_stats(ex, windows=False)
                     for w in cluster.workers("bench") for ex in w.executors]
            consumer = sum(s["_execute_total"] for s in stats
                           if s["component"].startswith("__metrics"))
            # one update per emit; per executed batch three counters, a latency sum and
            # two clock reads (counted as updates too)
            updates = sum(s["emitted"] for s in stats) + 6 * batches[0]
    finally:
        Timers.run = original  # type: ignore[method-assign]
        BoltExecutor._run_tuples = run_tuples  # type: ignore[method-assign]
    return cpu, spent[0], consumer / 1000, updates


def fresh_run(n: int, conf: dict[str, Any]) -> float:
    """Process CPU seconds of one word count of ``n`` sentences in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", CHILD, str(n), json.dumps(conf)], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    return float(json.loads(out.stdout.strip().splitlines()[-1])[1])


def quartiles(values: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], statistics.median(values), q[2]


def end_to_end(n: int, rounds: int, with_metrics: dict[str, Any]) -> None:
    """Rounds of (plain, plain, metered) fresh runs, the metered one rotating; prints each
    round and the medians (see the module docstring)."""
    print(f"end to end: {n:,} sentences per run, {rounds} rounds of 3 fresh runs "
          "(CPU s; metered run marked *)")
    ratios, nulls, plain_rates, metered_rates = [], [], [], []
    for r in range(rounds):
        order = [False, False, False]
        order[r % 3] = True
        cpu = [fresh_run(n, with_metrics if m else {}) for m in order]
        metered = next(c for c, m in zip(cpu, order) if m)
        plain = [c for c, m in zip(cpu, order) if not m]
        ratios.append(metered / statistics.mean(plain))
        nulls.append(plain[0] / plain[1])
        plain_rates += [n * 10 / c for c in plain]
        metered_rates.append(n * 10 / metered)
        print("  " + "  ".join(f"{c:6.2f}{'*' if m else ' '}" for c, m in zip(cpu, order))
              + f"   metered/plain {ratios[-1]:.3f}   plain/plain {nulls[-1]:.3f}", flush=True)
    lo, mid, hi = quartiles(ratios)
    nlo, nmid, nhi = quartiles(nulls)
    print(f"  words per CPU second, median: without a consumer {statistics.median(plain_rates):,.0f}"
          f", with {statistics.median(metered_rates):,.0f}")
    print(f"  overhead of the consumer: {100 * (mid - 1):+.1f} % "
          f"(quartiles {100 * (lo - 1):+.1f} % .. {100 * (hi - 1):+.1f} %)")
    print(f"  null (plain/plain):       {100 * (nmid - 1):+.1f} % "
          f"(quartiles {100 * (nlo - 1):+.1f} % .. {100 * (nhi - 1):+.1f} %)")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.metrics_overhead")
    p.add_argument("--runs", type=int, default=7, help="direct runs (default 7)")
    p.add_argument("--sentences", type=int, default=600_000,
                   help="sentences per direct run (default 600,000)")
    p.add_argument("--rounds", type=int, default=12, help="end-to-end rounds (default 12)")
    p.add_argument("--e2e-sentences", type=int, default=300_000,
                   help="sentences per end-to-end run (default 300,000)")
    p.add_argument("--bucket", type=int, default=1, help="bucket size in seconds (default 1)")
    only = p.add_mutually_exclusive_group()
    only.add_argument("--direct-only", action="store_true", help="skip the end-to-end rounds")
    only.add_argument("--e2e-only", action="store_true", help="skip the direct runs")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        with_metrics = {"topology.builtin.metrics.bucket.size.secs": args.bucket,
                        "topology.metrics.consumer.register": [
                            {"class": "log", "argument": {"file": str(Path(d) / "m.log")}}]}
        if not args.e2e_only:
            direct_figures(args.sentences, args.runs, args.bucket, with_metrics)
        if not args.direct_only:
            end_to_end(args.e2e_sentences, args.rounds, with_metrics)


def direct_figures(n: int, runs: int, bucket: int, with_metrics: dict[str, Any]) -> None:
    shares, hot = [], []
    inc = increment_cost()
    print(f"direct: {n:,} sentences with a {bucket} s consumer, "
          f"{runs} runs; one counter update costs {1e9 * inc:.1f} ns")
    for _ in range(runs):
        cpu, timer_s, consumer_s, updates = direct(n, with_metrics)
        shares.append((timer_s + consumer_s) / cpu)
        hot.append(updates * inc / cpu)
        print(f"  CPU {cpu:6.2f} s   timer pass {1000 * timer_s:6.1f} ms   "
              f"consumer {1000 * consumer_s:6.1f} ms   reporting {100 * shares[-1]:.2f} %"
              f"   counters on the tuple path {100 * hot[-1]:.2f} %", flush=True)
    print(f"  median share of CPU: reporting {100 * statistics.median(shares):.2f} %, "
          f"built-in counters {100 * statistics.median(hot):.2f} %, "
          f"together {100 * statistics.median(a + b for a, b in zip(shares, hot)):.2f} %")


if __name__ == "__main__":
    main()
