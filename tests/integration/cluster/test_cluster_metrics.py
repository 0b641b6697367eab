"""Metrics on a real cluster: two worker processes report their tasks' built-in metrics to a
`log` and a `spark` consumer every second, and nimbus shows the stats windows; every count is
exact (each tuple once, no bucket reported twice)."""
from __future__ import annotations

import collections
import json
from pathlib import Path
from typing import Any

import pytest


pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

TOTAL = 200


def logged(path: Path) -> list[tuple[int, int, str, str, float]]:
    """(bucket second, task, component, metric, value) of every numeric line of a `log`
    consumer's file."""
    out = []
    text = path.read_text() if path.exists() else ""
    for line in text[:text.rfind("\n") + 1].splitlines():
        stamp, _worker, task_component, metric, value = line.split("\t")
        task, component = task_component.split(":", 1)
        try:
            out.append((int(stamp), int(task), component, metric, float(value)))
        except ValueError:          # a map (__receive) as JSON
            continue
    return out


def stored(path: Path) -> list[dict[str, Any]]:
    """Every row of the `spark` consumer's dataset, read with pyarrow (what Spark reads)."""
    import pyarrow.dataset as ds

    if not any(path.rglob("*.parquet")):
        return []
    table = ds.dataset(str(path), format="parquet", partitioning="hive").to_table(
        columns=["time", "topology", "component", "task", "worker", "metric", "value",
                 "interval"])
    return table.to_pylist()


def totals(points: Any) -> dict[tuple[str, str], float]:
    out: collections.Counter[tuple[str, str]] = collections.Counter()
    for component, metric, value in points:
        out[(component, metric)] += value
    return dict(out)


def test_consumers_and_stats_windows_get_exact_counts_from_every_worker(
        squall_cluster, wordcount, tmp_path):
    pytest.importorskip("pyarrow")
    c = squall_cluster
    c.start_nimbus()
    c.start_supervisor("sup1", slots=2)
    c.wait_ready(supervisors=1)
    log, dataset = tmp_path / "metrics.log", tmp_path / "metrics"
    consumers = [{"class": "log", "argument": {"file": str(log)}},
                 {"class": "spark", "argument": {"path": str(dataset)}}]
    c.squall("submit", c.wordcount_target, "--name", "wc", "-c", "topology.workers=2",
             "-c", f"test.sentences={TOTAL}",
             "-c", "topology.builtin.metrics.bucket.size.secs=1",
             # no tuple times out on a busy machine, so each one executes exactly once
             "-c", "topology.message.timeout.secs=60",
             "-c", f"topology.metrics.consumer.register={json.dumps(consumers)}")
    assert len(c.wait(lambda: len(c.worker_slots("wc")) == 2 and c.worker_slots("wc"), 30,
                      "no assignment on 2 workers")) == 2
    c.wait(lambda: sorted(wordcount.read_acks(c.out_dir)) == list(range(TOTAL)), 60,
           "not every sentence was acked")
    words = sum(wordcount.expected_counts(TOTAL).values())
    expected = {("sentences", "__emit-count"): TOTAL, ("sentences", "__ack-count"): TOTAL,
                ("split", "__execute-count"): TOTAL, ("count", "__execute-count"): words}

    def in_log() -> dict[tuple[str, str], float]:
        got = totals((comp, m, v) for _t, _task, comp, m, v in logged(log))
        return {k: got.get(k, 0) for k in expected}

    def in_dataset() -> dict[tuple[str, str], float]:
        got = totals((r["component"], r["metric"], r["value"]) for r in stored(dataset))
        return {k: got.get(k, 0) for k in expected}

    c.wait(lambda: in_log() == expected, 30, f"log consumer totals != {expected}")
    c.wait(lambda: in_dataset() == expected, 30, f"spark consumer totals != {expected}")

    # the counts stay exact while later buckets arrive: nothing is reported twice
    last = max(t for t, *_ in logged(log))
    last_stored = max(r["time"] for r in stored(dataset))
    c.wait(lambda: max(t for t, *_ in logged(log)) >= last + 2, 20, "no later log buckets")
    c.wait(lambda: max(r["time"] for r in stored(dataset)).timestamp()
           >= last_stored.timestamp() + 2, 20, "no later buckets in the dataset")
    assert in_log() == expected
    assert in_dataset() == expected
    rows = stored(dataset)
    keys = collections.Counter((r["task"], r["time"], r["metric"]) for r in rows)
    assert max(keys.values()) == 1, [k for k, n in keys.items() if n > 1][:5]
    # both worker processes' tasks reached the one consumer task of each kind
    assert {r["worker"] for r in rows} == {f"127.0.0.1:{port}"
                                           for _node, port in c.worker_slots("wc")}
    assert {r["topology"] for r in rows} == {c.state.find_topology_id("wc")}
    assert {r["interval"] for r in rows} == {1.0}

    def windows() -> dict | None:
        # stats are folded each second and reach nimbus with the next executor beat
        got = c.client().topology_info("wc")["components"]["count"].get("windows")
        return got if got and got[":all-time"]["executed"] == words else None
    info = c.wait(windows, 30, f"the count bolt's all-time window never showed {words}")
    assert set(info) == {"600", "10800", "86400", ":all-time"}
    assert {w: info[w]["executed"] for w in info} == dict.fromkeys(info, words)
