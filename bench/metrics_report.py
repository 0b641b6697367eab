"""``squall metrics report`` on pyarrow versus Spark SQL, end to end as a user runs it.

    python -m bench.metrics_report [--runs 3] [--minutes 10]

Writes a dataset with the ``spark`` metrics consumer (5 components x 4 tasks, 10 s buckets,
6 metrics: 1,200 rows a minute), then runs ``squall metrics report DIR`` with ``--engine
arrow`` and ``--engine spark`` alternately, each in a fresh process (start-up included, as a
user waits for it), and prints each run's wall time and the medians. Both engines' outputs are
compared: they must be the same text.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

T0 = 1_795_000_020.0


def write_dataset(path: Path, minutes: int) -> int:
    from squall import DataPoint, TaskInfo
    from squall.plugins.spark.sink import SparkMetricsConsumer
    sink = SparkMetricsConsumer()
    sink.prepare({}, {"path": str(path)}, None)
    rows = 0
    for b in range(minutes * 6):
        for c, comp in enumerate(["sentences", "split", "count", "sink", "audit"]):
            for task in range(4):
                points = [DataPoint("__emit-count", 1000), DataPoint("__execute-count", 900),
                          DataPoint("__ack-count", 900), DataPoint("__fail-count", b % 7 == 0),
                          DataPoint("__execute-latency", 0.4),
                          DataPoint("__complete-latency", 3.0)]
                sink.handle(TaskInfo("wc-1", comp, c * 4 + task, "h", 1, T0 + b * 10, 10.0),
                            points)
                rows += len(points)
    sink.cleanup()
    return rows


def run(path: Path, engine: str) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "squall", "metrics", "report", str(path),
                           "--engine", engine], capture_output=True, text=True, check=True)
    return time.perf_counter() - start, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.metrics_report")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--minutes", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "metrics"
        rows = write_dataset(path, args.minutes)
        print(f"{rows:,} data points, {args.minutes} min")
        times: dict[str, list[float]] = {"arrow": [], "spark": []}
        outputs: dict[str, str] = {}
        for i in range(args.runs):
            for engine in times:
                secs, out = run(path, engine)
                times[engine].append(secs)
                outputs[engine] = out
                print(f"run {i + 1} {engine:<5} {secs:7.2f} s", flush=True)
        same = outputs["arrow"] == outputs["spark"]
        for engine, values in times.items():
            print(f"{engine:<5} median {statistics.median(values):7.2f} s")
        ratio = statistics.median(times["spark"]) / statistics.median(times["arrow"])
        print(f"ratio spark/arrow {ratio:.1f}x; same output: {same}")


if __name__ == "__main__":
    main()
