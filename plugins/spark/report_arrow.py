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
    LATENCY_WEIGHTS,
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
                     [("value", "sum")]).to_pylist()}
    latency = {(r["topology"], r["component"], r["metric"]): _mean(r) for r in
               _weighted_latencies(table).group_by(["topology", "component", "metric"])
               .aggregate([("vw", "sum"), ("w", "sum")]).to_pylist()}
    rows = []
    for (topology, component), n in sorted(tasks.items()):
        row: dict[str, Any] = {"topology": topology, "component": component, "tasks": n}
        for key, metric in COUNTS.items():
            found = by_metric.get((topology, component, metric))
            row[key] = found["value_sum"] if found else None
        for key, metric in LATENCIES.items():
            row[f"{key}_ms"] = latency.get((topology, component, metric))
        rows.append(row)
    return rows


def _mean(sums: dict[str, Any]) -> float | None:
    """A weighted mean from its sums (None when nothing weighs)."""
    return sums["vw_sum"] / sums["w_sum"] if sums["w_sum"] else None


def _weighted_latencies(table: Any) -> Any:
    """The latency points of ``table`` with ``w``, the count of the tuples each is the mean
    of (:data:`LATENCY_WEIGHTS`, 1 when that point is missing), and ``vw``, value x w."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = pa.array(list(LATENCY_WEIGHTS))
    lat = table.filter(pc.is_in(table["metric"], value_set=names))
    lat = lat.append_column("wmetric", pc.take(pa.array(list(LATENCY_WEIGHTS.values())),
                                               pc.index_in(lat["metric"], value_set=names)))
    keys = ["topology", "component", "task", "time"]
    counts = table.filter(pc.is_in(table["metric"], value_set=pa.array(
        sorted(set(LATENCY_WEIGHTS.values())))))
    summed = counts.group_by([*keys, "metric"]).aggregate([("value", "sum")])
    weights = pa.table({**{k: summed[k] for k in keys}, "wmetric": summed["metric"],
                        "w": summed["value_sum"]})
    joined = lat.join(weights, keys=[*keys, "wmetric"], join_type="left outer")
    w = pc.fill_null(joined["w"], 1.0)
    joined = joined.set_column(joined.schema.get_field_index("w"), "w", w)
    return joined.append_column("vw", pc.multiply(joined["value"], w))


def _over_time(table: Any) -> list[dict[str, Any]]:
    import pyarrow as pa
    import pyarrow.compute as pc

    counted = table.filter(pc.and_(pc.is_in(table["metric"], value_set=pa.array(
        list(COUNTS.values()))), pc.greater(table["interval"], 0)))
    # each task's rate in the bucket: its counts over the seconds its points cover
    per_task = counted.group_by(["topology", "component", "task", "bucket", "metric"]).aggregate(
        [("value", "sum"), ("interval", "sum")])
    per_task = per_task.append_column("rate", pc.divide(per_task["value_sum"],
                                                        per_task["interval_sum"]))
    rates = per_task.group_by(["bucket", "topology", "component", "metric"]).aggregate(
        [("rate", "sum")])
    lat = _weighted_latencies(table)
    lat = lat.filter(pc.greater(lat["interval"], 0))
    means = lat.group_by(["bucket", "topology", "component", "metric"]).aggregate(
        [("vw", "sum"), ("w", "sum")])
    rows: dict[tuple[int, str, str], dict[str, Any]] = defaultdict(dict)
    for r in rates.to_pylist():
        rows[(r["bucket"], r["topology"], r["component"])][r["metric"]] = r["rate_sum"]
    for r in means.to_pylist():
        rows[(r["bucket"], r["topology"], r["component"])][r["metric"]] = _mean(r)
    out = []
    for (b, topology, component), metrics in sorted(rows.items()):
        row: dict[str, Any] = {"bucket": _bucket_start(b), "topology": topology,
                               "component": component}
        for key, metric in COUNTS.items():
            row[f"{key}_per_s"] = metrics.get(metric)
        for key, metric in LATENCIES.items():
            row[f"{key}_ms"] = metrics.get(metric)
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
