"""``squall metrics report DIR``: summarise a ``spark`` metrics dataset.

:func:`build` reads the Parquet dataset the ``spark`` metrics consumer writes
(:mod:`squall.plugins.spark.sink`) and computes a :class:`~.report_model.Report`: totals per
component, then per time bucket the throughput in tuples per second, the mean latencies in ms
and the failures (rules in :mod:`.report_model`). Two engines compute the same report:

- ``arrow`` (default): pyarrow in this process, no JVM: a second or two for a day of metrics;
- ``spark``: Spark SQL (``spark.master``; for datasets too large for one machine's memory).

:func:`report` returns it rendered (:mod:`.report_render`: text, csv or json); the CLI adds
``--html FILE`` (charts). Importing this module imports neither pyarrow nor pyspark.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterable
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
    parse_bucket,
)
from squall.plugins.spark.report_render import FORMATS, format_table, render

__all__ = ["ENGINES", "FORMATS", "build", "check_dataset", "format_table", "report"]

ENGINES = ("arrow", "spark")
_views = itertools.count(1)


def report(dir: str | Path, spark: Any = None, bucket: str = "minute", fmt: str = "text",
           engine: str | None = None) -> str:
    """The report for the dataset under ``dir``, rendered as ``fmt`` (text, csv, json).

    ``engine`` None: ``spark`` when a session is given, else ``arrow``. Raises SquallError for
    a missing directory, one without metrics data, an unknown ``bucket``, format or engine."""
    if fmt not in FORMATS:
        raise SquallError(f"unknown report format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return render(build(dir, bucket, engine or ("spark" if spark is not None else "arrow"),
                        spark), fmt)


def build(dir: str | Path, bucket: str = "minute", engine: str = "arrow",
          spark: Any = None) -> Report:
    """The :class:`Report` of the dataset under ``dir`` (see the module docstring). With the
    ``spark`` engine, uses ``spark`` if given, else the process's session or a new local one
    (stopped before returning). Blocks while it computes."""
    requested = parse_bucket(bucket)
    if engine not in ENGINES:
        raise SquallError(f"unknown report engine {engine!r}; choose one of "
                          f"{', '.join(ENGINES)}")
    path = check_dataset(dir)
    if engine == "arrow":
        from squall.plugins.spark.report_arrow import compute
        return compute(path, requested)
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
        return _spark_report(spark, path, requested)
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
        what = "is a file, not a directory" if path.exists() else "does not exist"
        raise SquallError(f"metrics directory {str(path)!r} {what} (give the metrics "
                          "consumer's path)")
    for found in path.rglob("*.parquet"):
        if not any(part.startswith((".", "_")) for part in found.relative_to(path).parts):
            return path
    raise SquallError(f"no metrics data under {str(path)!r} (no Parquet files)")


# -- the Spark engine ---------------------------------------------------------------------------
def _spark_report(spark: Any, path: Path, requested: int) -> Report:
    from squall.plugins.spark.session import first_line, quiet_spark_errors

    try:
        with quiet_spark_errors():
            df = spark.read.parquet(str(path))
    except Exception as exc:
        raise SquallError(f"cannot read metrics under {str(path)!r}: {first_line(exc)}"
                          ) from exc
    missing = REQUIRED - set(df.columns)
    if missing:
        raise SquallError(f"{str(path)!r} is not a squall metrics dataset (no column "
                          f"{', '.join(sorted(missing))})")
    view = f"squall_metrics_{next(_views)}"
    df.createOrReplaceTempView(view)
    try:
        with quiet_spark_errors():          # the files are read here, not above
            return _spark_tables(spark, view, requested, path)
    except Exception as exc:
        raise SquallError(f"cannot read metrics under {str(path)!r}: {first_line(exc)}"
                          ) from exc
    finally:
        spark.catalog.dropTempView(view)


def _epoch(value: Any) -> datetime:
    return datetime.fromtimestamp(int(value), timezone.utc).replace(tzinfo=None)


def _instant(value: Any) -> datetime | None:
    """A time read as seconds since the epoch (a Spark timestamp collected as such would be
    made naive in the process's local zone), as naive UTC."""
    if value is None:
        return None
    return datetime.fromtimestamp(float(value), timezone.utc).replace(tzinfo=None)


def _quoted(names: Iterable[str]) -> str:
    """Metric names as a list of SQL string literals (they hold no quote)."""
    return ", ".join(f"'{n}'" for n in names)


def _spark_tables(spark: Any, view: str, requested: int, path: Path) -> Report:
    names = _quoted(sorted(TABLED))        # the metrics the tables show
    head = spark.sql(f"SELECT count(*) AS n, CAST(min(time) AS DOUBLE) AS t0, "
                     f"CAST(max(time) AS DOUBLE) AS t1, "
                     f"count(DISTINCT topology) AS topologies, max(CASE WHEN metric IN "
                     f"({names}) THEN interval END) AS iv FROM {view}").collect()[0]
    size = bucket_secs(requested, head.iv)
    rep = Report(path=str(path), points=int(head.n), start=_instant(head.t0),
                 end=_instant(head.t1),
                 topologies=int(head.topologies), bucket_secs=size,
                 requested_bucket_secs=requested)
    bucket = f"floor(CAST(time AS DOUBLE) / {size}) * {size}"
    sums = ", ".join(f"sum(CASE WHEN metric = '{m}' THEN value END) AS {k}"
                     for k, m in COUNTS.items())
    for r in spark.sql(f"SELECT topology, component, count(DISTINCT task) AS tasks, {sums} "
                       f"FROM {view} GROUP BY topology, component "
                       f"ORDER BY topology, component").collect():
        rep.totals.append({"topology": r.topology, "component": r.component, "tasks": r.tasks,
                           **{k: r[k] for k in COUNTS}})
    # latency points weighed by the count of their tuples (report_model.LATENCY_WEIGHTS)
    weighs = " ".join(f"WHEN '{m}' THEN '{c}'" for m, c in LATENCY_WEIGHTS.items())
    counts = _quoted(sorted(set(LATENCY_WEIGHTS.values())))
    lat = (f"SELECT l.*, coalesce(c.w, 1.0) AS w FROM (SELECT *, {bucket} AS bucket, "
           f"CASE metric {weighs} END AS wmetric FROM {view} WHERE metric IN "
           f"({_quoted(LATENCY_WEIGHTS)})) l LEFT JOIN "
           f"(SELECT topology, component, task, time, metric AS wmetric, sum(value) AS w "
           f"FROM {view} WHERE metric IN ({counts}) "
           f"GROUP BY topology, component, task, time, metric) c "
           f"ON l.topology = c.topology AND l.component = c.component AND l.task = c.task "
           f"AND l.time = c.time AND l.wmetric = c.wmetric")
    means = ", ".join(f"sum(CASE WHEN metric = '{m}' THEN value * w END) / "
                      f"nullif(sum(CASE WHEN metric = '{m}' THEN w END), 0) AS {k}"
                      for k, m in LATENCIES.items())
    totals = {(r.topology, r.component): r for r in spark.sql(
        f"SELECT topology, component, {means} FROM ({lat}) GROUP BY topology, component"
    ).collect()}
    for row in rep.totals:
        found = totals.get((row["topology"], row["component"]))
        row.update({f"{k}_ms": found[k] if found else None for k in LATENCIES})
    # each task's rate in a bucket: its counts over the seconds its points cover
    per_task = (f"SELECT topology, component, task, {bucket} AS bucket, metric, "
                f"sum(value) / sum(interval) AS v FROM {view} "
                f"WHERE metric IN ({_quoted(COUNTS.values())}) "
                f"AND interval > 0 GROUP BY topology, component, task, {bucket}, metric")
    rates = ", ".join(f"sum(CASE WHEN metric = '{m}' THEN v END) AS {k}"
                      for k, m in COUNTS.items())
    over_time: dict[tuple[Any, str, str], dict[str, Any]] = {}
    for r in spark.sql(f"SELECT bucket, topology, component, {rates} FROM ({per_task}) "
                       f"GROUP BY bucket, topology, component").collect():
        over_time[(r.bucket, r.topology, r.component)] = {f"{k}_per_s": r[k] for k in COUNTS}
    for r in spark.sql(f"SELECT bucket, topology, component, {means} FROM ({lat}) "
                       f"WHERE interval > 0 GROUP BY bucket, topology, component").collect():
        over_time.setdefault((r.bucket, r.topology, r.component), {
            f"{k}_per_s": None for k in COUNTS}).update({f"{k}_ms": r[k] for k in LATENCIES})
    for (b, topology, component), values in sorted(over_time.items()):
        rep.over_time.append({"bucket": _epoch(b), "topology": topology, "component": component,
                              **{f"{k}_per_s": values.get(f"{k}_per_s") for k in COUNTS},
                              **{f"{k}_ms": values.get(f"{k}_ms") for k in LATENCIES}})
    for r in spark.sql(f"SELECT {bucket} AS bucket, topology, component, "
                       f"sum(value) AS failed FROM {view} "
                       f"WHERE metric = '{COUNTS['failed']}' AND value > 0 "
                       f"GROUP BY 1, 2, 3 ORDER BY 1, 2, 3").collect():
        rep.failures.append({"bucket": _epoch(r.bucket), "topology": r.topology,
                             "component": r.component, "failed": r.failed})
    return rep
