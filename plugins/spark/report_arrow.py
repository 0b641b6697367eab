"""The metrics report computed with pyarrow (the default engine: no JVM, a second or two).

Reads the dataset with ``pyarrow.dataset`` (Hive partitions; files under hidden or ``_`` names
skipped, as Spark does) and aggregates with Arrow's group-by, following the rules of
:mod:`.report_model`.
"""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from squall.errors import SquallError
from squall.plugins.spark.report_model import (
    COUNTS,
    LATENCIES,
    REQUIRED,
    TABLED,
    Report,
    bucket_secs,
)


def compute(path: Path, requested_bucket: int) -> Report:
    """The :class:`Report` of the dataset under ``path``; SquallError when it cannot be read
    or is not a squall metrics dataset."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    try:
        dataset = ds.dataset(str(path), format="parquet", partitioning="hive")
        missing = REQUIRED - set(dataset.schema.names)
        if missing:
            raise SquallError(f"{str(path)!r} is not a squall metrics dataset (no column "
                              f"{', '.join(sorted(missing))})")
        table = dataset.to_table(columns=sorted(REQUIRED))
    except (pa.ArrowException, OSError) as exc:
        raise SquallError(f"cannot read metrics under {str(path)!r}: "
                          f"{str(exc).splitlines()[0]}") from exc
    secs = pc.divide(pc.cast(pc.cast(table["time"], pa.timestamp("us")), pa.int64()), 1_000_000)
    tabled = table.filter(pc.is_in(table["metric"], pa.array(sorted(TABLED))))
    interval = pc.max(tabled["interval"]).as_py()
    size = bucket_secs(requested_bucket, interval)
    bucket = pc.multiply(pc.divide(secs, size), size)
    table = table.append_column("bucket", bucket)
    t0, t1 = pc.min(table["time"]).as_py(), pc.max(table["time"]).as_py()
    report = Report(path=str(path), points=table.num_rows, start=_utc(t0), end=_utc(t1),
                    topologies=pc.count_distinct(table["topology"]).as_py() if table.num_rows
                    else 0, bucket_secs=size, requested_bucket_secs=requested_bucket)
    report.totals = _totals(table)
    report.over_time = _over_time(table)
    report.failures = _failures(table)
    return report


def _utc(value: Any) -> datetime | None:
    if value is None:
        return None
    return value.astimezone(timezone.utc).replace(tzinfo=None) if value.tzinfo else value


def _bucket_start(secs: int) -> datetime:
    return datetime.fromtimestamp(secs, timezone.utc).replace(tzinfo=None)


def _totals(table: Any) -> list[dict[str, Any]]:
    tasks = {(r["topology"], r["component"]): r["task_count_distinct"] for r in
             table.group_by(["topology", "component"]).aggregate(
                 [("task", "count_distinct")]).to_pylist()}
    by_metric = {(r["topology"], r["component"], r["metric"]): r for r in
                 table.group_by(["topology", "component", "metric"]).aggregate(
                     [("value", "sum"), ("value", "mean")]).to_pylist()}
    rows = []
    for (topology, component), n in sorted(tasks.items()):
        row: dict[str, Any] = {"topology": topology, "component": component, "tasks": n}
        for key, metric in COUNTS.items():
            found = by_metric.get((topology, component, metric))
            row[key] = found["value_sum"] if found else None
        for key, metric in LATENCIES.items():
            found = by_metric.get((topology, component, metric))
            row[f"{key}_ms"] = found["value_mean"] if found else None
        rows.append(row)
    return rows


def _over_time(table: Any) -> list[dict[str, Any]]:
    import pyarrow as pa
    import pyarrow.compute as pc

    names = pa.array([*COUNTS.values(), *LATENCIES.values()])
    sel = table.filter(pc.and_(pc.is_in(table["metric"], value_set=names),
                               pc.greater(table["interval"], 0)))
    latency = pc.ends_with(sel["metric"], "-latency")
    v = pc.if_else(latency, sel["value"], pc.divide(sel["value"], sel["interval"]))
    sel = sel.append_column("v", v)
    per_task = sel.group_by(["topology", "component", "task", "bucket", "metric"]).aggregate(
        [("v", "mean")])
    per_comp = per_task.group_by(["bucket", "topology", "component", "metric"]).aggregate(
        [("v_mean", "sum"), ("v_mean", "mean")])
    rows: dict[tuple[int, str, str], dict[str, Any]] = defaultdict(dict)
    for r in per_comp.to_pylist():
        rows[(r["bucket"], r["topology"], r["component"])][r["metric"]] = r
    out = []
    for (b, topology, component), metrics in sorted(rows.items()):
        row: dict[str, Any] = {"bucket": _bucket_start(b), "topology": topology,
                               "component": component}
        for key, metric in COUNTS.items():
            found = metrics.get(metric)
            row[f"{key}_per_s"] = found["v_mean_sum"] if found else None
        for key, metric in LATENCIES.items():
            found = metrics.get(metric)
            row[f"{key}_ms"] = found["v_mean_mean"] if found else None
        out.append(row)
    return out


def _failures(table: Any) -> list[dict[str, Any]]:
    import pyarrow.compute as pc

    sel = table.filter(pc.and_(pc.equal(table["metric"], COUNTS["failed"]),
                               pc.greater(table["value"], 0)))
    grouped = sel.group_by(["bucket", "topology", "component"]).aggregate([("value", "sum")])
    return [{"bucket": _bucket_start(r["bucket"]), "topology": r["topology"],
             "component": r["component"], "failed": r["value_sum"]}
            for r in sorted(grouped.to_pylist(),
                            key=lambda r: (r["bucket"], r["topology"], r["component"]))]
