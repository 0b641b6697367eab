"""The cost of metrics on word count: a metrics consumer fed every second versus none.

    python -m bench.metrics_overhead [--runs 7] [--direct-only]

Two measures. *Direct*: one run with the consumer, timing what metrics reporting itself
executes on the worker's loop (the timer pass that folds stats and builds each task's data
points, and the consumer task's own execution) against the process's CPU time; stable from
run to run. *End to end*: paired runs with and without, compared below; on a shared machine
their spread is several times the effect.

Built-in counters are always on (plain integers on the hot path); what a user turns on is a
consumer (``topology.metrics.consumer.register``), which makes every task report its data
points each bucket and adds a consumer task. Runs alternate with and without, per-tuple word
count, acking off, alternating which goes first; the figure is the median ratio of marginal
words per CPU second.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from bench import wordcount
from bench.wordcount import marginal


def increment_cost() -> float:
    """Seconds one built-in counter update (``ts.emitted += 1`` on a task) takes."""
    import timeit

    from squall.runtime.tasks import TaskState
    ts = TaskState.__new__(TaskState)
    ts.emitted = 0
    loops = 2_000_000
    empty = min(timeit.repeat("pass", globals={"ts": ts}, number=loops, repeat=5))
    inc = min(timeit.repeat("ts.emitted += 1", globals={"ts": ts}, number=loops, repeat=5))
    return max(0.0, inc - empty) / loops


def direct(n: int, conf: dict) -> tuple[float, float, float, int]:
    """(process CPU s, s in the metrics timer pass, s executing the consumer, counter
    updates on the tuple path) for one run of ``n`` sentences with metrics ``conf``."""
    import squall.runtime.system as system
    from squall import LocalCluster

    spent = [0.0]
    original = system.timers

    def timed(worker, now):  # type: ignore[no-untyped-def]
        t = time.perf_counter()
        original(worker, now)
        spent[0] += time.perf_counter() - t

    from squall.runtime.executors import BoltExecutor
    batches = [0]
    run_tuples = BoltExecutor._run_tuples

    def counted(self, ts, q, k):  # type: ignore[no-untyped-def]
        batches[0] += 1
        run_tuples(self, ts, q, k)

    system.timers = timed
    BoltExecutor._run_tuples = counted  # type: ignore[method-assign]
    try:
        wordcount._state.update(words=0, acked=0)
        topo_conf = {"bench.sentences": n, "bench.tracked": False,
                     "topology.acker.executors": 0, **conf}
        with LocalCluster() as cluster:
            c0 = time.process_time()
            cluster.submit_topology("bench", topo_conf, wordcount.topology(False))
            while wordcount._state["words"] < n * 10:
                time.sleep(0.002)
            cpu = time.process_time() - c0
            stats = [system.executor_stats(ex, windows=False)
                     for w in cluster.workers("bench") for ex in w.executors]
            consumer = sum(s["_exec_total"] for s in stats
                           if s["component"].startswith("__metrics"))
            # one update per emit; per executed batch three counters, a latency sum and
            # two clock reads (counted as updates too)
            updates = sum(s["emitted"] for s in stats) + 6 * batches[0]
    finally:
        system.timers = original
        BoltExecutor._run_tuples = run_tuples  # type: ignore[method-assign]
    return cpu, spent[0], consumer / 1000, updates


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.metrics_overhead")
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--sizes", type=int, nargs=2, default=(100_000, 600_000),
                   help="sentences in the small and the big run (default 100,000 600,000)")
    p.add_argument("--bucket", type=int, default=1, help="bucket size in seconds (default 1)")
    p.add_argument("--direct-only", action="store_true", help="skip the end-to-end pairs")
    args = p.parse_args(argv)
    sizes = (args.sizes[0], args.sizes[1])
    with tempfile.TemporaryDirectory() as d:
        with_metrics = {"topology.builtin.metrics.bucket.size.secs": args.bucket,
                        "topology.metrics.consumer.register": [
                            {"class": "log", "argument": {"file": str(Path(d) / "m.log")}}]}
        shares, hot = [], []
        inc = increment_cost()
        print(f"direct: {sizes[1]:,} sentences with a {args.bucket} s consumer, "
              f"{args.runs} runs; one counter update costs {1e9 * inc:.1f} ns")
        for _ in range(args.runs):
            cpu, timer_s, consumer_s, updates = direct(sizes[1], with_metrics)
            shares.append((timer_s + consumer_s) / cpu)
            hot.append(updates * inc / cpu)
            print(f"  CPU {cpu:6.2f} s   timer pass {1000 * timer_s:6.1f} ms   "
                  f"consumer {1000 * consumer_s:6.1f} ms   reporting {100 * shares[-1]:.2f} %"
                  f"   counters on the tuple path {100 * hot[-1]:.2f} %", flush=True)
        print(f"  median share of CPU: reporting {100 * statistics.median(shares):.2f} %, "
              f"built-in counters {100 * statistics.median(hot):.2f} %, "
              f"together {100 * statistics.median(a + b for a, b in zip(shares, hot)):.2f} %")
        if args.direct_only:
            return
        plain, metered = [], []
        for i in range(args.runs):
            # alternate which goes first, so drift within the process cancels out
            if i % 2:
                metered.append(marginal(sizes, False, False, conf=with_metrics)[1])
                plain.append(marginal(sizes, False, False)[1])
            else:
                plain.append(marginal(sizes, False, False)[1])
                metered.append(marginal(sizes, False, False, conf=with_metrics)[1])
    ratios = [m / p for m, p in zip(metered, plain)]
    print(f"word count, per-tuple, acking off, {sizes[0]:,} -> {sizes[1]:,} sentences, "
          f"words per CPU second, median of {args.runs}")
    print(f"  without a consumer      {statistics.median(plain):>12,.0f}")
    print(f"  with a {args.bucket} s consumer     {statistics.median(metered):>12,.0f}")
    print(f"  overhead (median of paired ratios) {100 * (1 - statistics.median(ratios)):+.1f} %")


if __name__ == "__main__":
    main()
