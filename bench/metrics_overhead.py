"""The cost of metrics on word count: a metrics consumer fed every second versus none.

    python -m bench.metrics_overhead [--runs 7]

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
from pathlib import Path

from bench.wordcount import marginal


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.metrics_overhead")
    p.add_argument("--runs", type=int, default=7)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        with_metrics = {"topology.builtin.metrics.bucket.size.secs": 1,
                        "topology.metrics.consumer.register": [
                            {"class": "log", "argument": {"file": str(Path(d) / "m.log")}}]}
        plain, metered = [], []
        for i in range(args.runs):
            # alternate which goes first, so drift within the process cancels out
            if i % 2:
                metered.append(marginal((20_000, 120_000), False, False, conf=with_metrics)[1])
                plain.append(marginal((20_000, 120_000), False, False)[1])
            else:
                plain.append(marginal((20_000, 120_000), False, False)[1])
                metered.append(marginal((20_000, 120_000), False, False, conf=with_metrics)[1])
    ratios = [m / p for m, p in zip(metered, plain)]
    print(f"word count, per-tuple, acking off, words per CPU second, median of {args.runs}")
    print(f"  without a consumer      {statistics.median(plain):>12,.0f}")
    print(f"  with a 1 s consumer     {statistics.median(metered):>12,.0f}")
    print(f"  overhead (median of paired ratios) {100 * (1 - statistics.median(ratios)):+.1f} %")


if __name__ == "__main__":
    main()
