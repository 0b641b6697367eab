"""``squall metrics report`` on pyarrow: the figures, bucket sizes and labels, CSV / JSON, the
HTML page with its charts, and one-line errors; no Spark involved."""
from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from squall import DataPoint, SquallError, TaskInfo
from squall.plugins.spark.report import build, report
from squall.plugins.spark.report_model import bucket_label, parse_bucket
from squall.plugins.spark.sink import SparkMetricsConsumer

T0 = 1_795_000_020.0       # 2026-11-18 11:07:00 UTC


def write_metrics(path: Path, interval: float = 30.0) -> None:
    """Two minutes of a split bolt (2 tasks) and a spout: known rates, latencies, failures."""
    sink = SparkMetricsConsumer()
    sink.prepare({}, {"path": str(path)}, None)
    steps = int(60 / interval)
    for minute in range(2):
        for step in range(steps):
            stamp = T0 + minute * 60 + step * interval
            for task in (1, 2):
                sink.handle(TaskInfo("wc-1", "split", task, "127.0.0.1", 1, stamp, interval), [
                    DataPoint("__execute-count", 10 * interval * (minute + 1)),
                    DataPoint("__emit-count", 30 * interval),
                    DataPoint("__execute-latency", 0.5 * task),
                    DataPoint("__fail-count", 3 if minute == 1 else 0)])
            sink.handle(TaskInfo("wc-1", "sentences", 3, "127.0.0.1", 1, stamp, interval), [
                DataPoint("__emit-count", 20 * interval), DataPoint("__complete-latency", 12.0)])
    sink.cleanup()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("metrics")
    write_metrics(path)
    return path


def test_text_report_figures(dataset: Path) -> None:
    text = report(dataset)
    lines = [x.split() for x in text.splitlines()]
    assert "40 data points from 2026-11-18 11:07:00 to 2026-11-18 11:08:30 (UTC)" in text
    total = next(x for x in lines if x[:2] == ["wc-1", "split"])
    # tasks, emitted, executed, acked, failed, execute ms, process ms, complete ms
    assert total[2:] == ["2", "7,200", "3,600", "-", "12", "0.750", "-", "-"]
    minutes = [x for x in lines if x[3:4] == ["split"]]
    # per minute: 2 tasks x 10/s executed in minute 1, 2 x 20/s in minute 2
    assert [m[5] for m in minutes[:2]] == ["20.0", "40.0"]
    assert [m[4] for m in minutes[:2]] == ["60.0", "60.0"]
    failures = text.split("Failures per minute")[1].splitlines()
    assert [x.split()[-1] for x in failures if "split" in x] == ["12"]


def test_buckets_never_shorter_than_the_data_and_labelled_by_their_size(tmp_path: Path) -> None:
    write_metrics(tmp_path, interval=5.0)
    rep = build(tmp_path, "second")
    assert rep.bucket_secs == 5 and rep.bucket == "5 s"
    text = report(tmp_path, bucket="second")
    assert "Throughput per 5 s (tuples/s)" in text and "per second" not in text
    assert "(buckets of 5 s, not second: the data points are 5 s apart)" in text
    assert len(build(tmp_path, "5s").over_time) == 2 * 24                   # 24 buckets x 2
    assert build(tmp_path, "10m").bucket == "10 min"
    assert [bucket_label(s) for s in (1, 60, 3600, 86400, 7200, 90)] == [
        "second", "minute", "hour", "day", "2 h", "90 s"]
    assert [parse_bucket(t) for t in ("minute", "5s", "10m", "2h", "1d", "30")] == [
        60, 5, 600, 7200, 86400, 30]
    for bad in ("fortnight", "0s", "-5s", "5 parsecs"):
        with pytest.raises(SquallError, match="unknown time bucket"):
            parse_bucket(bad)


def write_user_metric(path: Path, interval: float = 300.0) -> None:
    """A user metric of the spout, reported every ``interval`` seconds."""
    sink = SparkMetricsConsumer()
    sink.prepare({}, {"path": str(path)}, None)
    sink.handle(TaskInfo("wc-1", "sentences", 3, "127.0.0.1", 1, T0 + 90, interval),
                [DataPoint("lines_read", 1234)])
    sink.cleanup()


def write_uneven_latencies(path: Path) -> None:
    """Latency points over very different numbers of tuples (10 s data buckets): the spout's
    first bucket completes 1 tree in 1000 ms, its second 10,000 trees in 1 ms each; split's
    task 1 executes 99 tuples in 2 ms, task 2 one in 200 ms."""
    sink = SparkMetricsConsumer()
    sink.prepare({}, {"path": str(path), "flush.secs": 0}, None)
    for stamp, acks, ms in ((T0, 1, 1000.0), (T0 + 10, 10_000, 1.0), (T0 + 60, 3, 4.0)):
        sink.handle(TaskInfo("wc-1", "sentences", 3, "127.0.0.1", 1, stamp, 10.0), [
            DataPoint("__ack-count", acks), DataPoint("__complete-latency", ms)])
    for task, n, ms in ((1, 99, 2.0), (2, 1, 200.0)):
        sink.handle(TaskInfo("wc-1", "split", task, "127.0.0.1", 1, T0, 10.0), [
            DataPoint("__execute-count", n), DataPoint("__execute-latency", ms),
            DataPoint("__ack-count", n), DataPoint("__process-latency", ms + 1)])
    sink.cleanup()


#: the per-tuple means of write_uneven_latencies
UNEVEN_TOTALS = {"sentences": {"complete_ms": (1000.0 + 10_000 * 1.0 + 3 * 4.0) / 10_004},
                 "split": {"execute_ms": (99 * 2.0 + 200.0) / 100,
                           "process_ms": (99 * 3.0 + 201.0) / 100}}
UNEVEN_FIRST_MINUTE = {"sentences": {"complete_ms": (1000.0 + 10_000 * 1.0) / 10_001},
                       "split": {"execute_ms": (99 * 2.0 + 200.0) / 100}}


def test_mean_latencies_are_per_tuple_weighted_by_counts(tmp_path: Path) -> None:
    write_uneven_latencies(tmp_path)
    rep = build(tmp_path, "minute")
    totals = {r["component"]: r for r in rep.totals}
    for component, expected in UNEVEN_TOTALS.items():
        for key, value in expected.items():
            assert totals[component][key] == pytest.approx(value), (component, key)
    first = {r["component"]: r for r in rep.over_time if r["bucket"] == rep.over_time[0]["bucket"]}
    for component, expected in UNEVEN_FIRST_MINUTE.items():
        for key, value in expected.items():
            assert first[component][key] == pytest.approx(value), (component, key)


def test_a_slow_user_metric_does_not_widen_the_buckets(tmp_path: Path) -> None:
    write_metrics(tmp_path)
    write_user_metric(tmp_path)
    rep = build(tmp_path, "minute")
    assert rep.bucket_secs == 60 and len({row["bucket"] for row in rep.over_time}) == 2


def test_csv_and_json(dataset: Path) -> None:
    rows = list(csv.DictReader(io.StringIO(report(dataset, fmt="csv"))))
    split = [r for r in rows if r["component"] == "split"]
    assert [r["bucket"] for r in split] == ["2026-11-18T11:07:00", "2026-11-18T11:08:00"]
    assert [float(r["executed_per_s"]) for r in split] == [20.0, 40.0]
    assert [float(r["failed"]) for r in split] == [0.0, 12.0]
    assert rows[0]["acked_per_s"] == ""                                    # none: empty cell
    data = json.loads(report(dataset, fmt="json"))
    assert data["bucket"] == "minute" and data["bucket_secs"] == 60 and data["points"] == 40
    assert {t["component"]: t["tasks"] for t in data["totals"]} == {"sentences": 1, "split": 2}
    assert data["failures"] == [{"bucket": "2026-11-18T11:08:00", "topology": "wc-1",
                                 "component": "split", "failed": 12.0}]
    with pytest.raises(SquallError, match="unknown report format"):
        report(dataset, fmt="xml")


def test_cli_writes_the_html_charts_and_prints_json(dataset: Path, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    done = subprocess.run([sys.executable, "-m", "squall.cli.main", "metrics", "report",
                           str(dataset), "--format", "json", "--html", str(page)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["topologies"] == 1
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html and "src=" not in html
    for kind in ("throughput", "latency", "failures"):
        chart = html.split(f"data-chart='{kind}'>")[1].split("</figure>")[0]
        assert chart.startswith("<svg")
        assert "data-series='split'" in chart and "data-series='sentences'" in chart
    # the failures line of split rises to 12 in the second minute: two points
    failures = html.split("data-chart='failures'>")[1].split("</figure>")[0]
    split_line = failures.split("data-series='split'")[0].rsplit("points='", 1)[1]
    assert len(split_line.split("'")[0].split()) == 2


def test_cli_mistakes_are_one_line(tmp_path: Path) -> None:
    for args, message in (
            (["--bucket", "fortnight"], "unknown time bucket 'fortnight'"),
            ([], "does not exist")):
        done = subprocess.run([sys.executable, "-m", "squall.cli.main", "metrics", "report",
                               str(tmp_path / "nope"), *args], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
