"""The 'spark' metrics consumer's dataset read by Spark, the report, and `squall metrics report`."""
from __future__ import annotations

import collections
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from squall import Bolt, DataPoint, LocalCluster, Spout, SquallError, TaskInfo, TopologyBuilder
from squall.plugins.spark.report import build, report
from squall.plugins.spark.sink import SparkMetricsConsumer, flatten
from squall.testing import wait_until

pytestmark = [pytest.mark.spark, pytest.mark.integration,
              pytest.mark.filterwarnings("ignore::FutureWarning")]

T0 = 1_795_000_020.0       # 2026-11-18 11:07:00 UTC


def write_metrics(path: Path) -> None:
    """Two minutes of a split bolt (2 tasks) and a spout: known rates, latencies, failures."""
    sink = SparkMetricsConsumer()
    sink.prepare({}, {"path": str(path)}, None)
    for minute in range(2):
        for half in range(2):                       # 30 s buckets
            stamp = T0 + minute * 60 + half * 30
            for task in (1, 2):
                sink.handle(TaskInfo("wc-1", "split", task, "127.0.0.1", 1, stamp, 30.0), [
                    DataPoint("__execute-count", 300 * (minute + 1)),
                    DataPoint("__emit-count", 900),
                    DataPoint("__execute-latency", 0.5 * task),
                    DataPoint("__fail-count", 3 if minute == 1 else 0),
                    DataPoint("__receive", {"population": 0, "capacity": 1000})])
            sink.handle(TaskInfo("wc-1", "sentences", 3, "127.0.0.1", 1, stamp, 30.0), [
                DataPoint("__emit-count", 600), DataPoint("__complete-latency", 12.0)])
    sink.cleanup()


def test_dataset_reads_back_in_spark(spark: Any, tmp_path: Path) -> None:
    write_metrics(tmp_path)
    df = spark.read.parquet(str(tmp_path))
    assert set(df.columns) == {"time", "topology", "component", "task", "worker", "metric",
                               "value", "interval", "date"}
    got = {(r.component, r.task, r.metric): r.total for r in df.groupBy(
        "component", "task", "metric").agg({"value": "sum"}).withColumnRenamed(
        "sum(value)", "total").collect()}
    assert got[("split", 1, "__execute-count")] == 2 * 300 + 2 * 600
    assert got[("split", 2, "__receive.capacity")] == 4 * 1000
    assert got[("sentences", 3, "__complete-latency")] == 4 * 12.0
    assert {str(r.date) for r in df.select("date").distinct().collect()} == {"2026-11-18"}


def test_report_tables(spark: Any, tmp_path: Path) -> None:
    write_metrics(tmp_path)
    text = report(tmp_path, spark=spark)
    lines = text.splitlines()
    assert "56 data points from 2026-11-18 11:07:00 to 2026-11-18 11:08:30" in text
    total = next(x.split() for x in lines if x.split()[:2] == ["wc-1", "split"])
    # tasks, emitted, executed, acked, failed, execute ms, process ms, complete ms
    assert total[2:] == ["2", "7,200", "3,600", "-", "12", "0.750", "-", "-"]
    minutes = [x.split() for x in lines if x.split()[3:4] == ["split"]]
    # per minute: 2 tasks x 300/30 s = 20/s executed in minute 1, 40/s in minute 2
    assert [m[5] for m in minutes[:2]] == ["20.0", "40.0"]
    assert [m[4] for m in minutes[:2]] == ["60.0", "60.0"]          # emitted/s
    failures = text.split("Failures per minute")[1].splitlines()
    assert [x.split()[-1] for x in failures if "split" in x] == ["12"]
    spout = next(x.split() for x in lines if x.split()[:2] == ["wc-1", "sentences"])
    assert spout[-1] == "12.000"


def test_report_times_are_utc_whatever_the_local_zone(spark: Any, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Spark hands a collected timestamp over in the process's local zone; the report's
    start and end, labelled UTC, are UTC (they read 9 hours late in Tokyo)."""
    write_metrics(tmp_path)
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        text = report(tmp_path, spark=spark)
    finally:
        monkeypatch.undo()
        time.tzset()
    assert "56 data points from 2026-11-18 11:07:00 to 2026-11-18 11:08:30 (UTC)" in text


def test_a_file_spark_cannot_read_is_one_error(spark: Any, tmp_path: Path) -> None:
    write_metrics(tmp_path)
    good = next(tmp_path.rglob("*.parquet"))
    (good.parent / "part-zz-truncated.parquet").write_bytes(good.read_bytes()[:300])
    with pytest.raises(SquallError, match=r"cannot read metrics under .*FAILED_READ_FILE"):
        report(tmp_path, spark=spark)


def test_a_slow_user_metric_does_not_widen_the_buckets(spark: Any, tmp_path: Path) -> None:
    write_metrics(tmp_path)
    sink = SparkMetricsConsumer()
    sink.prepare({}, {"path": str(tmp_path)}, None)
    sink.handle(TaskInfo("wc-1", "sentences", 3, "127.0.0.1", 1, T0 + 90, 300.0),
                [DataPoint("lines_read", 1234)])
    sink.cleanup()
    text = report(tmp_path, spark=spark)
    assert "Throughput per minute" in text and "5 min" not in text


def test_both_engines_weigh_latencies_by_their_tuples(spark: Any, tmp_path: Path) -> None:
    # the spout's first 10 s complete 1 tree in 1000 ms, its next 10 s 10,000 trees in 1 ms;
    # split's task 1 executes 99 tuples in 2 ms, task 2 one in 200 ms
    sink = SparkMetricsConsumer()
    sink.prepare({}, {"path": str(tmp_path), "flush.secs": 0}, None)
    for stamp, acks, ms in ((T0, 1, 1000.0), (T0 + 10, 10_000, 1.0), (T0 + 60, 3, 4.0)):
        sink.handle(TaskInfo("wc-1", "sentences", 3, "127.0.0.1", 1, stamp, 10.0), [
            DataPoint("__ack-count", acks), DataPoint("__complete-latency", ms)])
    for task, n, ms in ((1, 99, 2.0), (2, 1, 200.0)):
        sink.handle(TaskInfo("wc-1", "split", task, "127.0.0.1", 1, T0, 10.0), [
            DataPoint("__execute-count", n), DataPoint("__execute-latency", ms),
            DataPoint("__ack-count", n), DataPoint("__process-latency", ms + 1)])
    sink.cleanup()
    on_spark = build(tmp_path, "minute", "spark", spark)
    totals = {r["component"]: r for r in on_spark.totals}
    assert totals["sentences"]["complete_ms"] == pytest.approx(11_012 / 10_004)   # 1.10 ms
    assert totals["split"]["execute_ms"] == pytest.approx(3.98)
    assert totals["split"]["process_ms"] == pytest.approx(4.98)
    first = [r for r in on_spark.over_time if r["component"] == "sentences"][0]
    assert first["complete_ms"] == pytest.approx(11_000 / 10_001)
    on_arrow = build(tmp_path, "minute", "arrow")

    def near(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: pytest.approx(v) if isinstance(v, float) else v for k, v in r.items()}
                for r in rows]
    assert on_arrow.totals == near(on_spark.totals)
    assert on_arrow.over_time == near(on_spark.over_time)


def test_report_errors(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(SquallError, match="does not exist"):
        report(tmp_path / "missing", spark=spark)
    (tmp_path / "afile").write_text("")
    with pytest.raises(SquallError, match="afile' is a file, not a directory"):
        report(tmp_path / "afile", spark=spark)
    (tmp_path / "afile").unlink()
    with pytest.raises(SquallError, match="no metrics data"):
        report(tmp_path, spark=spark)
    with pytest.raises(SquallError, match="unknown time bucket"):
        report(tmp_path, spark=spark, bucket="fortnight")
    # files Spark skips are no data: one being written by the sink, Spark's markers
    (tmp_path / "date=2026-11-24").mkdir()
    (tmp_path / "date=2026-11-24" / ".part-1.parquet").write_bytes(b"PAR1")
    (tmp_path / "_SUCCESS").write_bytes(b"")
    with pytest.raises(SquallError, match="no metrics data"):
        report(tmp_path, spark=spark)


def test_cli_prints_the_report_and_one_line_errors(tmp_path: Path) -> None:
    squall = Path(sys.executable).with_name("squall")
    write_metrics(tmp_path / "m")
    done = subprocess.run([str(squall), "metrics", "report", str(tmp_path / "m"),
                           "--bucket", "hour"], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Throughput per hour (tuples/s)" in done.stdout
    assert "wc-1" in done.stdout and "split" in done.stdout
    missing = subprocess.run([str(squall), "metrics", "report", str(tmp_path / "nope")],
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode != 0
    assert missing.stderr.strip().splitlines()[-1] == (
        f"squall: error: metrics directory '{tmp_path / 'nope'}' does not exist (give the "
        "metrics consumer's path)")
    assert "Traceback" not in missing.stderr


def test_cli_on_a_directory_without_data_is_one_line_before_spark_starts(tmp_path: Path) -> None:
    squall = Path(sys.executable).with_name("squall")
    empty = tmp_path / "metrics"
    (empty / "date=2026-11-24").mkdir(parents=True)
    (empty / "date=2026-11-24" / ".part-1.parquet.tmp").write_bytes(b"")   # still being written
    done = subprocess.run([str(squall), "metrics", "report", str(empty)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert done.stdout == ""
    # one line and nothing else: no JVM started, so none of Spark's start-up logging
    assert done.stderr.splitlines() == [
        f"squall: error: no metrics data under '{empty}' (no Parquet files)"], done.stderr


_words: collections.Counter[str] = collections.Counter()
_lock = threading.Lock()


class Words(Spout):
    outputs = ["word"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.left = 200

    def next_tuple(self) -> None:
        if self.left:
            self.left -= 1
            self.emit(["w"], tup_id=self.left)


class Count(Bolt):
    def process(self, tup: Any) -> None:
        with _lock:
            _words[tup.values[0]] += 1


def test_topology_metrics_reach_the_dataset(spark: Any, tmp_path: Path) -> None:
    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("count", Count).shuffle_grouping("words")
    conf = {"topology.builtin.metrics.bucket.size.secs": 1,
            "topology.metrics.consumer.register": [{"class": "spark",
                                                    "argument": {"path": str(tmp_path)}}]}
    _words.clear()
    with LocalCluster() as cluster:
        cluster.submit_topology("metered", conf, b.create_topology())
        wait_until(lambda: _words["w"] == 200, 30)

        def executed() -> float:
            if not list(tmp_path.rglob("*.parquet")):
                return 0
            rows = spark.read.parquet(str(tmp_path)).where(
                "component = 'count' AND metric = '__execute-count'").collect()
            return sum(r.value for r in rows)
        wait_until(lambda: executed() >= 200, 30, interval=0.2,
                   message="the count bolt's executions in the metrics dataset")
    assert "count" in report(tmp_path, spark=spark)


def test_a_topology_s_points_all_reach_the_dataset_in_few_files(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the default flush (once per 1 s bucket), the consumer writes a file per bucket, not
    per task and bucket, and the points still buffered when the topology is killed are written
    by cleanup: the dataset holds every point the consumer was handed. Six tasks (the spout and
    five count tasks) hand it their points each second: 30 handle calls take about 5 s."""
    handled: list[int] = []
    cleaned = threading.Event()
    real_handle, real_cleanup = SparkMetricsConsumer.handle, SparkMetricsConsumer.cleanup

    def handle(self: SparkMetricsConsumer, task_info: TaskInfo, points: list[DataPoint]) -> None:
        with _lock:
            handled.append(sum(1 for p in points for _ in flatten(p.name, p.value)))
        real_handle(self, task_info, points)

    def cleanup(self: SparkMetricsConsumer) -> None:
        real_cleanup(self)
        cleaned.set()
    monkeypatch.setattr(SparkMetricsConsumer, "handle", handle)
    monkeypatch.setattr(SparkMetricsConsumer, "cleanup", cleanup)
    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("count", Count, parallelism=5).shuffle_grouping("words")
    conf = {"topology.builtin.metrics.bucket.size.secs": 1,
            "topology.metrics.consumer.register": [{"class": "spark",
                                                    "argument": {"path": str(tmp_path)}}]}
    start = time.monotonic()
    with LocalCluster() as cluster:
        cluster.submit_topology("metered", conf, b.create_topology())
        wait_until(lambda: len(handled) >= 30, 60, message="30 metrics handle calls")
        cluster.kill_topology("metered")
    elapsed = time.monotonic() - start
    wait_until(cleaned.is_set, 10, message="the consumer's cleanup")
    files = list(tmp_path.rglob("*.parquet"))
    assert spark.read.parquet(str(tmp_path)).count() == sum(handled)
    assert len(files) <= elapsed + 2                     # about one per second (+ a new date)
    assert len(files) < len(handled) / 2, (len(files), len(handled))
