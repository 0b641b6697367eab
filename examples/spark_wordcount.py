"""Word count fed by Spark: a Parquet dataset -> SparkSpout -> split -> count, with the
topology's metrics written as Parquet by the ``spark`` metrics consumer.

    squall local examples/spark_wordcount.py:topology --duration 30
    squall metrics report /tmp/squall-spark-wordcount/metrics

The input is ``SQUALL_SPARK_WORDCOUNT_INPUT`` (a Parquet dataset with a ``sentence`` column)
or, when unset, a small dataset generated with pyarrow under ``/tmp/squall-spark-wordcount``
(the temp dir); metrics go to its ``metrics`` folder every 5 seconds. The spout starts a local
Spark session (``spark.master``, default ``local[*]``) in the worker; its fields are given with
``spark.source.columns``, so building the topology does not start Spark.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from squall import TopologyBuilder
from squall.plugins.spark import SparkSpout
from wordcount import SplitSentence, WordCount   # examples/wordcount.py, shipped alongside

BASE = Path(tempfile.gettempdir()) / "squall-spark-wordcount"
LINES = [
    "the quick brown fox jumps over the lazy dog",
    "a stream of rows read by spark becomes a stream of tuples",
    "every row is acked once or replayed until it is",
]


def sample_dataset(path: Path, rows: int = 30_000, files: int = 4) -> Path:
    """Write ``rows`` sentences as ``files`` Parquet files under ``path`` (if not there)."""
    if path.is_dir() and any(path.glob("*.parquet")):
        return path
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.mkdir(parents=True, exist_ok=True)
    per_file = rows // files
    for f in range(files):
        sentences = [LINES[(f * per_file + i) % len(LINES)] for i in range(per_file)]
        pq.write_table(pa.table({"line_no": range(f * per_file, (f + 1) * per_file),
                                 "sentence": sentences}), path / f"part-{f}.parquet")
    return path


def build(source: str | None = None, metrics_dir: str | None = None):
    source = source or os.environ.get("SQUALL_SPARK_WORDCOUNT_INPUT") or str(
        sample_dataset(BASE / "input"))
    metrics_dir = metrics_dir or str(BASE / "metrics")
    b = TopologyBuilder()
    b.set_spout("sentences", SparkSpout, config={
        "spark.source.format": "parquet", "spark.source.path": source,
        "spark.source.columns": ["sentence"]})
    b.set_bolt("split", SplitSentence, parallelism=2).shuffle_grouping("sentences")
    b.set_bolt("count", WordCount, parallelism=2).fields_grouping("split", ["word"])
    return b.create_topology({
        "topology.max.spout.pending": 2000,
        "topology.builtin.metrics.bucket.size.secs": 5,
        "topology.metrics.consumer.register": [{"class": "spark",
                                                "argument": {"path": metrics_dir}}],
    })


topology = build()
