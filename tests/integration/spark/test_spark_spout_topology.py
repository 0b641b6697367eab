"""SparkSpout in a running topology (LocalCluster): exactly once, and replays after failures."""
from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from squall import Bolt, LocalCluster, TopologyBuilder
from squall.plugins.spark import SparkSpout
from squall.testing import wait_until

pytestmark = [pytest.mark.spark, pytest.mark.integration,
              pytest.mark.filterwarnings("ignore::FutureWarning")]

_lock = threading.Lock()
_seen: Counter[tuple[Any, ...]] = Counter()
_acked: set[Any] = set()
_failed: Counter[Any] = Counter()


class RecordingSpout(SparkSpout):
    def ack(self, tup_id: Any) -> None:
        super().ack(tup_id)
        with _lock:
            _acked.add(tuple(tup_id))

    def fail(self, tup_id: Any) -> None:
        super().fail(tup_id)
        with _lock:
            _failed[tuple(tup_id)] += 1


class Collect(Bolt):
    """Records every row; fails the first delivery of rows whose id is a multiple of
    ``test.fail.every`` (0: never)."""

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.every = conf.get("test.fail.every", 0)
        self.failed_once: set[int] = set()

    def process(self, tup: Any) -> None:
        row_id = tup.values[0]
        if self.every and row_id % self.every == 0 and row_id not in self.failed_once:
            self.failed_once.add(row_id)
            raise RuntimeError(f"injected failure for row {row_id}")
        with _lock:
            _seen[tuple(tup.values)] += 1


def run(parquet_dir: Path, spouts: int, conf: dict[str, Any], expected: int) -> dict[str, Any]:
    """Run the topology until ``expected`` rows are acked; return its topology info."""
    with _lock:
        _seen.clear(), _acked.clear(), _failed.clear()
    b = TopologyBuilder()
    b.set_spout("rows", RecordingSpout, parallelism=spouts, config={
        "spark.source.format": "parquet", "spark.source.path": str(parquet_dir),
        "spark.source.columns": ["id", "word"]})
    b.set_bolt("collect", Collect, parallelism=2).fields_grouping("rows", ["word"])
    with LocalCluster() as cluster:
        cluster.submit_topology("spark-rows", {"topology.max.spout.pending": 500, **conf},
                                b.create_topology())
        wait_until(lambda: len(_acked) >= expected, 60, message="every row acked")
        info = cluster.get_topology_info("spark-rows")
        cluster.kill_topology("spark-rows")
    return info  # type: ignore[no-any-return]


def test_every_row_processed_exactly_once(spark: Any, parquet_dir: Path,
                                          parquet_rows: list[Any]) -> None:
    run(parquet_dir, 2, {}, len(parquet_rows))
    assert sorted(_seen) == [(i, w) for i, w, _ in parquet_rows]
    assert set(_seen.values()) == {1}
    assert not _failed
    assert len(_acked) == len(parquet_rows)


def test_failed_rows_are_replayed_until_acked(spark: Any, parquet_dir: Path,
                                              parquet_rows: list[Any]) -> None:
    run(parquet_dir, 1, {"test.fail.every": 10}, len(parquet_rows))
    assert sorted(_seen) == [(i, w) for i, w, _ in parquet_rows]
    assert set(_seen.values()) == {1}                  # each failed row processed once, later
    assert sum(_failed.values()) == len(parquet_rows) // 10


def test_rows_are_delivered_when_spark_reads_fail(spark: Any, parquet_dir: Path,
                                                  parquet_rows: list[Any],
                                                  flaky_fetch: Any) -> None:
    """Every partition's first 3 reads fail (partition 0 before any row, the others midway):
    the spout tasks retry and every row is still delivered and acked, and partition 0's
    repeated failures show up as the spout's errors."""
    flaky = flaky_fetch(3)
    info = run(parquet_dir, 2, flaky.RETRY, len(parquet_rows))
    assert {flaky.attempts[p] for p, _ in _acked} == {4}       # partitions holding rows
    assert sorted(_seen) == [(i, w) for i, w, _ in parquet_rows]     # at least once
    assert len(_acked) == len(parquet_rows)
    errors = [e["error"] for e in info["errors"].get("rows", [])]
    assert any("partition 0 failed" in e and "injected failure" in e for e in errors), errors
