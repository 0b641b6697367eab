"""SparkSpout throughput: rows/s from a Parquet dataset into a no-op bolt, one spout task.

    python -m bench.spark_spout [--runs 3] [--sizes 500000 2000000] [--master local[2]]

Datasets of N rows (``id`` int64, ``word`` string, ``score`` double; 4 files) are written with
pyarrow under a temp dir. One Spark session serves every run (started first, not timed). Each
case reports the *marginal* rate between the two sizes, (N2 - N1) / (t2 - t1), which cancels
Spark's per-query planning and the topology's start and stop; median of ``--runs``.

Cases: ``direct`` drives the spout alone (``emit`` does nothing: the spout's own ceiling);
``topology`` runs it in a LocalCluster into a no-op ``process_batch`` bolt, acking off
(``topology.acker.executors: 0``; the spout still gets its acks) and on (one acker,
``topology.max.spout.pending: 5000``).
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from squall import Bolt, LocalCluster, TopologyBuilder, TopologyContext
from squall.plugins.spark import SparkSpout
from squall.plugins.spark.session import get_session

_state = {"rows": 0}


class NoOp(Bolt):
    def process_batch(self, tuples: list[Any]) -> None:
        _state["rows"] += len(tuples)


def dataset(base: Path, rows: int) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = base / f"rows-{rows}"
    if not path.is_dir():
        path.mkdir(parents=True)
        per = rows // 4
        for f in range(4):
            ids = pa.array(range(f * per, (f + 1) * per), pa.int64())
            words = pa.array([f"w{i % 1000}" for i in range(f * per, (f + 1) * per)])
            pq.write_table(pa.table({"id": ids, "word": words,
                                     "score": pa.compute.multiply(ids, 0.5)}),
                           path / f"part-{f}.parquet")
    return str(path)


def source(path: str) -> dict[str, Any]:
    return {"spark.source.format": "parquet", "spark.source.path": path,
            "spark.source.columns": ["id", "word", "score"]}


def run_direct(path: str, rows: int) -> float:
    context = TopologyContext(topology_id="bench", topology_name="bench", component_id="rows",
                              task_id=1, task_to_component={1: "rows"}, this_worker_port=None,
                              outputs={"default": ("id", "word", "score")})
    spout = SparkSpout()
    count = [0]

    def emit(values: Any, stream: str = "default", *, tup_id: Any = None, **kw: Any) -> None:
        count[0] += 1
        spout.ack(tup_id)
    spout.emit = emit  # type: ignore[method-assign]
    t0 = time.perf_counter()
    spout.initialize(source(path), context)
    while not spout.exhausted:
        spout.next_tuple()
    elapsed = time.perf_counter() - t0
    spout.close()
    assert count[0] == rows, (count[0], rows)
    return elapsed


def run_topology(path: str, rows: int, acking: bool) -> float:
    b = TopologyBuilder()
    b.set_spout("rows", SparkSpout, config=source(path))
    b.set_bolt("noop", NoOp).shuffle_grouping("rows")
    conf = {"topology.acker.executors": 1 if acking else 0,
            "topology.max.spout.pending": 5000 if acking else None}
    _state["rows"] = 0
    with LocalCluster() as cluster:
        t0 = time.perf_counter()
        cluster.submit_topology("bench", conf, b.create_topology())
        while _state["rows"] < rows:
            time.sleep(0.005)
        elapsed = time.perf_counter() - t0
    return elapsed


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.spark_spout")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--sizes", type=int, nargs=2, default=(500_000, 2_000_000))
    p.add_argument("--master", default="local[2]")
    args = p.parse_args(argv)
    base = Path(tempfile.gettempdir()) / "squall-bench-spark"
    small, big = args.sizes
    paths = {n: dataset(base, n) for n in (small, big)}
    get_session(args.master, {"spark.ui.enabled": False, "spark.driver.host": "127.0.0.1",
                              "spark.driver.bindAddress": "127.0.0.1"}, app_name="bench")
    run_direct(paths[small], small)       # warm the JVM (JIT) before timing
    print(f"SparkSpout, 1 task, Parquet (id, word, score); marginal rows/s between {small:,} "
          f"and {big:,} rows; median of {args.runs}")
    cases = [("direct (spout alone)", lambda n: run_direct(paths[n], n)),
             ("topology, acking off", lambda n: run_topology(paths[n], n, False)),
             ("topology, acking on", lambda n: run_topology(paths[n], n, True))]
    for label, fn in cases:
        rates = []
        for _ in range(args.runs):
            t1, t2 = fn(small), fn(big)
            rates.append((big - small) / (t2 - t1))
        print(f"  {label:<22} {statistics.median(rates):>12,.0f} rows/s   (runs: "
              f"{', '.join(f'{r / 1000:,.0f}k' for r in rates)}; last {big:,} rows in "
              f"{t2:.2f} s)", flush=True)


if __name__ == "__main__":
    main()
