"""Source configuration checks of the SparkSpout that need no Spark, and light imports."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from squall import TopologyError
from squall.plugins.spark import SparkSpout
from squall.plugins.spark.source import parse_source


def test_columns_given_means_no_spark_at_build_time(tmp_path: Path) -> None:
    config = {"spark.source.format": "parquet", "spark.source.path": str(tmp_path),
              "spark.source.columns": ["user", "amount"]}
    assert SparkSpout.declare_outputs(config) == ["user", "amount"]
    spec = parse_source({**config, "spark.source.options": {"header": True, "sep": ";"}})
    assert spec.options == {"header": "true", "sep": ";"}
    assert spec.kind == "path" and spec.columns == ("user", "amount")


@pytest.mark.parametrize("config, message", [
    ({}, "set exactly one of"),
    ({"spark.source.table": "t", "spark.source.query": "SELECT 1"}, r"got spark.source.table"),
    ({"spark.source.path": "/tmp"}, "needs spark.source.format"),
    ({"spark.source.format": "csv", "spark.source.path": "/no/such/file.csv"},
     "does not exist"),
    ({"spark.source.format": "csv", "spark.source.path": "/no/such/*.csv"}, "matches no file"),
    ({"spark.source.table": "t", "spark.source.options": ["header"]}, "mapping"),
    ({"spark.source.table": "t", "spark.source.columns": "a,b"}, "non-empty list"),
    ({"spark.source.table": "t", "spark.source.columns": ["a", "a"]}, "repeats"),
    ({"spark.source.query": 42}, "must be a string"),
    ({"spark.source.query": "SELECT 1", "spark.source.options": {"header": True}},
     r"^spark spout: spark.source.options do not apply to spark.source.query .*"
     r"FROM parquet.`/data/events`"),
])
def test_bad_source_configs_are_topology_errors(config: dict, message: str) -> None:
    with pytest.raises(TopologyError, match=message):
        SparkSpout.declare_outputs(config)


def test_remote_paths_are_left_to_spark() -> None:
    spec = parse_source({"spark.source.format": "parquet",
                         "spark.source.path": ["s3a://bucket/a", "hdfs:///b"],
                         "spark.source.columns": ["x"]})
    assert spec.target == ("s3a://bucket/a", "hdfs:///b")


@pytest.mark.parametrize("pattern", ["{2024,2025}", "{2024,2025}/*.parquet", "y[^x]*"])
def test_hadoop_globs_python_cannot_read_are_left_to_spark(tmp_path: Path,
                                                           pattern: str) -> None:
    """Spark reads {a,b} and [^x]; Python's glob does not, so squall does not judge them."""
    (tmp_path / "2024").mkdir()
    spec = parse_source({"spark.source.format": "parquet",
                         "spark.source.path": f"{tmp_path}/{pattern}"})
    assert spec.target == f"{tmp_path}/{pattern}"


def test_importing_the_plugin_and_its_hooks_does_not_import_pyspark() -> None:
    code = ("import sys, squall, squall.plugins.spark, squall.plugins.spark.hooks\n"
            "from squall.plugins.spark import SparkSpout, SparkMetricsConsumer\n"
            "import squall.plugins.spark.report\n"
            "heavy = [m for m in sys.modules if m.split('.')[0] in ('pyspark', 'pyarrow', "
            "'pandas', 'py4j')]\n"
            "assert not heavy, heavy\n")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("module", ["pyspark", "pyarrow"])
def test_a_spark_spout_without_the_spark_extra_is_refused_at_submit(
        module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # nimbus accepted it: the topology showed active while its workers failed to start
    from squall import Bolt, LocalCluster, PluginLoadError, TopologyBuilder
    from squall.plugin_manager import validate_topology

    class Sink(Bolt):
        def process(self, tup: object) -> None:
            pass

    b = TopologyBuilder()
    b.set_spout("rows", SparkSpout, config={
        "spark.source.format": "parquet", "spark.source.path": str(tmp_path),
        "spark.source.columns": ["sentence"]})
    b.set_bolt("sink", Sink).shuffle_grouping("rows")
    topology = b.create_topology()
    monkeypatch.setitem(sys.modules, module, None)        # an install without squall[spark]
    refused = (rf"^component 'rows' \(squall.plugins.spark.spout:SparkSpout\) needs the "
               rf"'{module}' module; install it with: pip install 'squall\[spark\]'$")
    with pytest.raises(PluginLoadError, match=refused):
        validate_topology(topology, {})                  # as nimbus checks a submit
    with LocalCluster() as cluster:
        with pytest.raises(PluginLoadError, match=refused):
            cluster.submit_topology("t", {}, topology)
        assert cluster.topologies() == []
