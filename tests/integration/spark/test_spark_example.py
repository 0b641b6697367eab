"""examples/spark_wordcount.py end to end: a Parquet dataset through SparkSpout, split and
count on a LocalCluster, its metrics written by the 'spark' consumer, and that dataset fed to
``squall metrics report``."""
from __future__ import annotations

import collections
import importlib.util
import subprocess
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from squall import DataPoint, LocalCluster, TaskInfo
from squall.plugins.spark.sink import SparkMetricsConsumer, flatten
from squall.testing import wait_until

pytestmark = [pytest.mark.spark, pytest.mark.integration,
              pytest.mark.filterwarnings("ignore::FutureWarning")]

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
SENTENCES = 3000

_lock = threading.Lock()
_counts: dict[int, collections.Counter[str]] = {}
_metrics: collections.Counter[tuple[str, str]] = collections.Counter()


def load_example(monkeypatch: pytest.MonkeyPatch, source: Path) -> ModuleType:
    monkeypatch.syspath_prepend(str(EXAMPLES))        # it imports examples/wordcount.py
    monkeypatch.setenv("SQUALL_SPARK_WORDCOUNT_INPUT", str(source))
    spec = importlib.util.spec_from_file_location("squall_example_spark_wordcount",
                                                  EXAMPLES / "spark_wordcount.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_spark_wordcount_counts_every_word_and_its_metrics_report(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source, metrics = tmp_path / "input", tmp_path / "metrics"
    source.mkdir()                          # the example's import-time build checks the path
    module = load_example(monkeypatch, source)
    module.sample_dataset(source, rows=SENTENCES, files=4)
    words = collections.Counter(w for i in range(SENTENCES)
                                for w in module.LINES[i % len(module.LINES)].split())

    class RecordingWordCount(module.WordCount):  # type: ignore[name-defined,misc]
        def process(self, tup: Any) -> None:
            super().process(tup)
            with _lock:
                _counts[id(self)] = collections.Counter(self.counts)

    real_handle = SparkMetricsConsumer.handle

    def handle(self: SparkMetricsConsumer, info: TaskInfo, points: list[DataPoint]) -> None:
        with _lock:
            for p in points:
                for name, value in flatten(p.name, p.value):
                    _metrics[info.component, name] += value
        real_handle(self, info, points)

    monkeypatch.setattr(module, "WordCount", RecordingWordCount)
    monkeypatch.setattr(SparkMetricsConsumer, "handle", handle)
    _counts.clear(), _metrics.clear()
    topology = module.build(str(source), str(metrics))

    def counted() -> collections.Counter[str]:
        with _lock:
            return sum(_counts.values(), collections.Counter())

    def in_metrics(component: str, metric: str) -> float:
        with _lock:
            return _metrics[component, metric]

    with LocalCluster() as cluster:
        cluster.submit_topology("spark-wordcount", {}, topology)
        wait_until(lambda: counted() == words, 90,
                   message=lambda: f"word counts {dict(counted())} != {dict(words)}")
        # the example's metrics (5 s buckets) report every sentence acked and word counted
        wait_until(lambda: (in_metrics("sentences", "__ack-count") >= SENTENCES
                            and in_metrics("count", "__execute-count") >= words.total()), 60,
                   message="the spout's acks and the counts in the metrics")
        info = cluster.get_topology_info("spark-wordcount")
        cluster.kill_topology("spark-wordcount")
    assert not any(info["errors"].values()), info["errors"]
    with _lock:
        assert len(_counts) == 2 and not set.intersection(*(set(c) for c in _counts.values()))

    squall = Path(sys.executable).with_name("squall")
    done = subprocess.run([str(squall), "metrics", "report", str(metrics)],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {cells[1]: cells for cells in (x.split() for x in done.stdout.splitlines())
            if len(cells) >= 10 and cells[0].startswith("spark-wordcount")}
    # totals per component: topology, component, tasks, emitted, executed, acked, failed, ...
    assert rows["sentences"][2:4] == ["1", f"{SENTENCES:,}"], done.stdout
    assert rows["sentences"][5:7] == [f"{SENTENCES:,}", "0"], done.stdout
    assert rows["split"][2:5] == ["2", f"{words.total():,}", f"{SENTENCES:,}"], done.stdout
    assert rows["count"][2] == "2" and rows["count"][4] == f"{words.total():,}", done.stdout
    assert "Throughput per minute (tuples/s)" in done.stdout
