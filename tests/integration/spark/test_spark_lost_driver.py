"""A SparkSpout whose worker loses its Spark driver JVM (the OOM killer picks it) reads on
through a new session, from its first row not yet emitted: every row once, and the loss
reported as the component's error. In a fresh process: the JVM is really killed."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.integration]

SCRIPT = """
import json, logging, os, signal, sys, time
logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s %(message)s")
from pyspark import SparkContext
from squall import TopologyContext
from squall.plugins.spark import SparkSpout

emitted, errors = [], []
spout = SparkSpout()
spout.emit = lambda values, stream="default", *, tup_id=None, **kw: emitted.append(
    (tup_id, values[0]))
spout.report_error = lambda e: errors.append(str(e))
spout.initialize({
    "spark.master": "local[1]", "spark.source.format": "parquet",
    "spark.source.path": sys.argv[1], "spark.source.columns": ["id"],
    "spark.spout.progress": False, "spark.spout.emit.batch": 50,
    "spark.source.retry.backoff.min.secs": 0.01, "spark.source.retry.backoff.max.secs": 0.1,
    "spark.conf": {"spark.ui.enabled": False, "spark.sql.files.maxPartitionBytes": "4k",
                   "spark.sql.files.openCostInBytes": "1k",
                   # the driver JVM's options (both of them): conftest's JVM_OPTIONS
                   "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
                   "spark.sql.execution.arrow.maxRecordsPerBatch": 100}},
    TopologyContext(topology_id="t-1", topology_name="t", component_id="rows", task_id=1,
                    task_to_component={1: "rows"}, this_worker_port=None,
                    outputs={"default": ("id",)}))

def pump(done, timeout):
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            sys.exit(f"timed out with {len(emitted)} rows emitted; errors: {errors}")
        spout.next_tuple()
        time.sleep(0.002)        # polling the spout, as its executor does

pump(lambda: emitted, 120)                        # the first rows are out
jvm = SparkContext._gateway.proc
os.kill(jvm.pid, signal.SIGKILL)                  # what the OOM killer does
jvm.wait()
at_kill = len(emitted)
pump(lambda: spout.exhausted, 150)
new_jvm = SparkContext._gateway.proc
print(json.dumps({"ids": [i for _, i in emitted], "tup_ids": [t for t, _ in emitted],
                  "at_kill": at_kill, "errors": errors,
                  "new_jvm": new_jvm.pid != jvm.pid and new_jvm.poll() is None}))
spout.close()
SparkContext._active_spark_context.stop()
"""


def test_a_killed_driver_jvm_is_replaced_and_reading_goes_on(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = 3000
    for f in range(6):
        pq.write_table(pa.table({"id": list(range(f * 500, (f + 1) * 500))}),
                       tmp_path / f"part-{f}.parquet")
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True,
                          text=True, timeout=280)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["at_kill"] < rows                     # killed mid-stream
    assert sorted(out["ids"]) == list(range(rows))   # every row, once
    assert len(set(map(tuple, out["tup_ids"]))) == rows
    assert out["new_jvm"]
    reported = [e for e in out["errors"] if "new session" in e]
    assert len(reported) == 1, out["errors"]
    assert "lost its driver JVM" in reported[0]
    assert "Spark driver JVM of this process is gone" in done.stderr
