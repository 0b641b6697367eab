"""``squall metrics report DIR``: summarise a ``spark`` metrics dataset with Spark SQL.

:func:`report` reads the Parquet dataset the ``spark`` metrics consumer writes
(:mod:`squall.plugins.spark.sink`) and returns plain-text tables: totals per component, then
per time bucket (a minute by default) the throughput in tuples per second, the average
latencies in milliseconds and the failures.

Throughput of a component in a bucket is the sum over its tasks of each task's average rate
(``value / interval`` of its ``__emit-count``, ``__execute-count``... points in that bucket).
Latencies are the mean of the tasks' per-bucket averages (``__execute-latency``,
``__process-latency``, ``__complete-latency``).
"""
from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from squall.errors import SquallError

__all__ = ["BUCKETS", "check_dataset", "format_table", "report"]

BUCKETS = ("second", "minute", "hour", "day")
_COUNTS = {"emitted": "__emit-count", "executed": "__execute-count", "acked": "__ack-count",
           "failed": "__fail-count"}
_LATENCIES = {"execute": "__execute-latency", "process": "__process-latency",
              "complete": "__complete-latency"}
_REQUIRED = {"time", "topology", "component", "task", "metric", "value", "interval"}
_views = itertools.count(1)


def report(dir: str | Path, spark: Any = None, bucket: str = "minute") -> str:
    """The report for the dataset under ``dir`` as text.

    Uses ``spark`` if given, else the process's session or a new local one (``local[*]``,
    stopped before returning). Blocks while Spark runs the queries. Raises SquallError for a
    missing directory, one without metrics data, or an unknown ``bucket``."""
    if bucket not in BUCKETS:
        raise SquallError(f"unknown time bucket {bucket!r}; choose one of {', '.join(BUCKETS)}")
    path = check_dataset(dir)
    own = None
    if spark is None:
        from pyspark import SparkContext

        from squall.plugins.spark.session import get_session
        fresh = SparkContext._active_spark_context is None
        spark = get_session(None, {"spark.ui.enabled": False,
                                   "spark.sql.session.timeZone": "UTC"},
                            app_name="squall-metrics-report")
        own = spark if fresh else None
    try:
        return _report(spark, path, bucket)
    finally:
        if own is not None:
            own.stop()


def check_dataset(dir: str | Path) -> Path:
    """``dir`` as a Path if it holds Parquet data files; checked without Spark, so a command
    can fail fast before starting a session. Files under hidden or ``_`` names (a sink's file
    being written, Spark's ``_SUCCESS``) do not count, as Spark skips them. Raises SquallError
    for a missing directory or one without data files."""
    path = Path(dir)
    if not path.is_dir():
        raise SquallError(f"metrics directory {str(path)!r} does not exist")
    for found in path.rglob("*.parquet"):
        if not any(part.startswith((".", "_")) for part in found.relative_to(path).parts):
            return path
    raise SquallError(f"no metrics data under {str(path)!r} (no Parquet files)")


def _report(spark: Any, path: Path, bucket: str) -> str:
    from squall.plugins.spark.session import first_line

    try:
        df = spark.read.parquet(str(path))
    except Exception as exc:
        raise SquallError(f"cannot read metrics under {str(path)!r}: {first_line(exc)}"
                          ) from exc
    missing = _REQUIRED - set(df.columns)
    if missing:
        raise SquallError(f"{str(path)!r} is not a squall metrics dataset (no column "
                          f"{', '.join(sorted(missing))})")
    view = f"squall_metrics_{next(_views)}"
    df.createOrReplaceTempView(view)
    try:
        return _tables(spark, view, bucket, path)
    finally:
        spark.catalog.dropTempView(view)


def _tables(spark: Any, view: str, bucket: str, path: Path) -> str:
    head = spark.sql(f"SELECT count(*) AS n, min(time) AS t0, max(time) AS t1, "
                     f"count(DISTINCT topology) AS topologies FROM {view}").collect()[0]
    tz = spark.conf.get("spark.sql.session.timeZone")
    lines = [f"squall metrics report: {path}",
             f"{head.n:,} data points from {head.t0} to {head.t1} ({tz}), "
             f"{head.topologies} topolog{'y' if head.topologies == 1 else 'ies'}", ""]

    sums = ", ".join(f"sum(CASE WHEN metric = '{m}' THEN value END) AS {k}"
                     for k, m in _COUNTS.items())
    avgs = ", ".join(f"avg(CASE WHEN metric = '{m}' THEN value END) AS {k}"
                     for k, m in _LATENCIES.items())
    rows = spark.sql(f"SELECT topology, component, count(DISTINCT task) AS tasks, {sums}, {avgs} "
                     f"FROM {view} GROUP BY topology, component "
                     f"ORDER BY topology, component").collect()
    lines += _section("Totals per component (latencies: mean, ms)",
                      ["topology", "component", "tasks", *_COUNTS, *(f"{k} ms" for k in
                                                                   _LATENCIES)],
                      [[r.topology, r.component, r.tasks, *(_count(r[k]) for k in _COUNTS),
                        *(_ms(r[k]) for k in _LATENCIES)] for r in rows])

    names = ", ".join(f"'{m}'" for m in (*_COUNTS.values(), *_LATENCIES.values()))
    per_task = (f"SELECT topology, component, task, date_trunc('{bucket}', time) AS bucket, "
                f"metric, avg(CASE WHEN metric LIKE '%-latency' THEN value "
                f"ELSE value / interval END) AS v "
                f"FROM {view} WHERE metric IN ({names}) AND interval > 0 "
                f"GROUP BY topology, component, task, date_trunc('{bucket}', time), metric")
    rates = ", ".join(f"sum(CASE WHEN metric = '{m}' THEN v END) AS {k}"
                      for k, m in _COUNTS.items())
    lats = ", ".join(f"avg(CASE WHEN metric = '{m}' THEN v END) AS {k}"
                     for k, m in _LATENCIES.items())
    rows = spark.sql(f"SELECT bucket, topology, component, {rates}, {lats} FROM ({per_task}) "
                     f"GROUP BY bucket, topology, component "
                     f"ORDER BY bucket, topology, component").collect()
    lines += _section(f"Throughput per {bucket} (tuples/s)",
                      [bucket, "topology", "component", *(f"{k}/s" for k in _COUNTS)],
                      [[str(r.bucket), r.topology, r.component, *(_rate(r[k]) for k in _COUNTS)]
                       for r in rows])
    lines += _section(f"Latency per {bucket} (ms)",
                      [bucket, "topology", "component", *_LATENCIES],
                      [[str(r.bucket), r.topology, r.component, *(_ms(r[k]) for k in _LATENCIES)]
                       for r in rows if any(r[k] is not None for k in _LATENCIES)])
    failures = spark.sql(f"SELECT date_trunc('{bucket}', time) AS bucket, topology, component, "
                         f"sum(value) AS failed FROM {view} "
                         f"WHERE metric = '{_COUNTS['failed']}' AND value > 0 "
                         f"GROUP BY 1, 2, 3 ORDER BY 1, 2, 3").collect()
    lines += _section(f"Failures per {bucket}", [bucket, "topology", "component", "failed"],
                      [[str(r.bucket), r.topology, r.component, _count(r.failed)]
                       for r in failures], empty="no failures")
    return "\n".join(lines).rstrip() + "\n"


def _section(title: str, headers: Sequence[str], rows: list[list[Any]],
             empty: str = "no data") -> list[str]:
    return [title, format_table(headers, rows) if rows else f"  ({empty})", ""]


def _count(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.3f}"


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table: text columns left-aligned, numbers right-aligned.

    >>> print(format_table(["name", "n"], [["a", "1"], ["bb", "22"]]))
      name   n
      ----  --
      a      1
      bb    22
    """
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    numeric = [all(_numeric(r[i]) for r in cells) for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        return "  " + "  ".join(v.rjust(w) if num else v.ljust(w)
                                for v, w, num in zip(values, widths, numeric, strict=True)).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]),
                      *(line(r) for r in cells)])


def _numeric(text: str) -> bool:
    return text == "-" or text.replace(",", "").replace(".", "", 1).lstrip("-").isdigit()
