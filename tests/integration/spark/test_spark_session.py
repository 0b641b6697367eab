"""``spark.master`` chooses the Spark cluster of the session a SparkSpout starts (in a fresh
process, since a process holds one Spark driver); asking for another master once a session
runs gives one warning naming the master in use (none for the default master); a local
session's driver binds 127.0.0.1."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.integration]

SCRIPT = """
import logging, sys
logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s %(message)s")
from pyspark import SparkContext
from squall.plugins.spark import SparkSpout

def source(master):
    # the driver JVM's options: conftest's JVM_OPTIONS
    return {"spark.master": master, "spark.source.format": "json", "spark.source.path": sys.argv[1],
            "spark.conf": {"spark.ui.enabled": False,
                           "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"}}

print("FIELDS", SparkSpout.declare_outputs(source("local[1]")), flush=True)
print("MASTER", SparkContext._active_spark_context.master, flush=True)
conf = SparkContext._active_spark_context.getConf()
print("DRIVER", conf.get("spark.driver.host"), conf.get("spark.driver.bindAddress"), flush=True)
for _ in range(3):
    SparkSpout.declare_outputs(source("local[3]"))
SparkSpout.declare_outputs(source("local[*]"))     # the default: no word
print("MASTER", SparkContext._active_spark_context.master, flush=True)
SparkContext._active_spark_context.stop()
"""


def test_spark_master_chooses_the_session_and_a_later_one_is_warned_once(tmp_path: Path) -> None:
    data = tmp_path / "rows.json"
    data.write_text('{"a": 1}\n')
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(data)], capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    # a local session's driver binds 127.0.0.1 unless spark.conf says otherwise
    assert done.stdout.splitlines() == ["FIELDS ['a']", "MASTER local[1]",
                                        "DRIVER 127.0.0.1 127.0.0.1", "MASTER local[1]"]
    warnings = [x for x in done.stderr.splitlines() if x.startswith("WARNING squall")]
    assert warnings == ["WARNING squall.plugins.spark.session spark.master 'local[3]' is not "
                        "used: this process already runs a Spark session on local[1], which "
                        "squall's Spark components share"]
