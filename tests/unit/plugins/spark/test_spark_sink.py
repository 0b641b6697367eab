"""The 'spark' metrics consumer without Spark: flattening, files, errors (read back by pyarrow;
tests/integration/spark reads them with Spark)."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest

from squall import ConfigError, DataPoint, TaskInfo
from squall.plugins.spark.sink import COLUMNS, SparkMetricsConsumer, flatten

STAMP = 1_795_000_000.0           # 2026-11-18 11:06:40 UTC


def info(component: str = "split", task: int = 3, stamp: float = STAMP) -> TaskInfo:
    return TaskInfo(topology="wc-1", component=component, task=task, worker_host="127.0.0.1",
                    worker_port=6700, timestamp=stamp, interval_secs=60.0)


def test_flatten_numbers_maps_lists_and_skips_the_rest() -> None:
    assert list(flatten("__emit-count", 5)) == [("__emit-count", 5.0)]
    assert list(flatten("up", True)) == [("up", 1.0)]
    assert list(flatten("__receive", {"population": 2, "capacity": 100})) == [
        ("__receive.population", 2.0), ("__receive.capacity", 100.0)]
    assert list(flatten("m", {"a": {"b": [1, 2]}, "s": "text", "n": None})) == [
        ("m.a.b.0", 1.0), ("m.a.b.1", 2.0)]
    assert list(flatten("s", "text")) == []


def test_points_land_in_date_partitions_with_the_documented_columns(tmp_path: Path) -> None:
    sink = SparkMetricsConsumer()
    sink.prepare({}, {"path": str(tmp_path / "m")}, SimpleNamespace(task_id=9))
    sink.handle(info(), [DataPoint("__emit-count", 120), DataPoint("__execute-latency", 0.25),
                         DataPoint("__receive", {"population": 1, "capacity": 10}),
                         DataPoint("note", "ignored")])
    sink.handle(info(task=4, stamp=STAMP + 86_400), [DataPoint("__emit-count", 7)])
    sink.cleanup()
    dirs = sorted(p.name for p in (tmp_path / "m").iterdir())
    assert dirs == ["date=2026-11-18", "date=2026-11-19"]
    assert not list((tmp_path / "m").rglob(".*"))           # no temporary file left behind
    table = pq.read_table(tmp_path / "m" / "date=2026-11-18")
    assert tuple(table.column_names) == COLUMNS
    rows = table.to_pylist()
    assert {(r["metric"], r["value"]) for r in rows} == {
        ("__emit-count", 120.0), ("__execute-latency", 0.25), ("__receive.population", 1.0),
        ("__receive.capacity", 10.0)}
    first = rows[0]
    assert (first["topology"], first["component"], first["task"], first["worker"],
            first["interval"]) == ("wc-1", "split", 3, "127.0.0.1:6700", 60.0)
    assert first["time"].timestamp() == STAMP


def test_flush_thresholds_buffer_points_until_cleanup(tmp_path: Path) -> None:
    sink = SparkMetricsConsumer()
    sink.prepare({}, {"path": str(tmp_path), "flush.secs": 3600, "flush.points": 3}, None)
    sink.handle(info(), [DataPoint("a", 1), DataPoint("b", 2)])
    assert not list(tmp_path.rglob("*.parquet"))
    sink.handle(info(), [DataPoint("c", 3)])               # third point: written
    assert len(list(tmp_path.rglob("*.parquet"))) == 1
    sink.handle(info(), [DataPoint("d", 4)])
    sink.cleanup()
    assert pq.read_table(tmp_path).num_rows == 4


def test_by_default_points_are_written_once_per_metrics_bucket(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Twenty tasks report every 10 s bucket: one file per bucket, not one per task."""
    import time

    import squall.plugins.spark.sink as sink_module
    clock = [1000.0]
    monkeypatch.setattr(sink_module, "time", SimpleNamespace(monotonic=lambda: clock[0],
                                                             time=time.time))
    sink = SparkMetricsConsumer()
    sink.prepare({"topology.builtin.metrics.bucket.size.secs": 10}, {"path": str(tmp_path)},
                 None)
    for bucket in range(1, 7):
        clock[0] = 1000.0 + 10.5 * bucket
        for task in range(20):
            clock[0] += 0.01
            sink.handle(info(task=task, stamp=STAMP + 10 * bucket), [DataPoint("n", task)])
    assert len(list(tmp_path.rglob("*.parquet"))) == 6
    sink.cleanup()                                      # the last bucket's points too
    assert len(list(tmp_path.rglob("*.parquet"))) == 7
    assert pq.read_table(tmp_path).num_rows == 6 * 20


def test_flush_secs_zero_writes_every_call(tmp_path: Path) -> None:
    sink = SparkMetricsConsumer()
    sink.prepare({"topology.builtin.metrics.bucket.size.secs": 10},
                 {"path": str(tmp_path), "flush.secs": 0}, None)
    for task in range(3):
        sink.handle(info(task=task), [DataPoint("n", task)])
    assert len(list(tmp_path.rglob("*.parquet"))) == 3


@pytest.mark.parametrize("argument, message", [
    (None, "needs argument"), ({"dir": "x"}, "needs argument"),
    ({"path": "x", "bogus": 1}, "does not know"), ({"path": "x", "flush.secs": "soon"}, "flush"),
    ({"path": "x", "flush.secs": -1}, "flush.secs must be >= 0"),
    ({"path": "x", "flush.points": 0}, "flush.points >= 1"),
])
def test_bad_arguments_are_config_errors(tmp_path: Path, argument: object, message: str,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=message):
        SparkMetricsConsumer().prepare({}, argument, None)


def test_unwritable_directory_is_a_config_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ConfigError, match="cannot be created"):
        SparkMetricsConsumer().prepare({}, {"path": str(blocker / "metrics")}, None)


def test_two_consumers_writing_in_the_same_millisecond_keep_both_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # no context, so no task id in the names (a consumer called directly, as reports' tests
    # and scripts do): the sequence alone must tell the files apart
    monkeypatch.setattr("squall.plugins.spark.sink.time.time", lambda: STAMP)
    for component in ("split", "count"):
        sink = SparkMetricsConsumer()
        sink.prepare({}, {"path": str(tmp_path)}, None)
        sink.handle(info(component), [DataPoint("__emit-count", 1)])
        sink.cleanup()
    table = pq.read_table(tmp_path)
    assert sorted(table.column("component").to_pylist()) == ["count", "split"]
