"""The Spark plugin's hooks (entry point ``spark`` in ``squall.plugins``).

Adds its config keys (``spark.master``, the SparkSpout's ``spark.source.*`` and
``spark.spout.*`` keys and ``spark.conf``, with their defaults and types), checks their values
where squall validates a conf (:mod:`squall.plugins.spark.settings`), and ``squall
metrics report DIR [--bucket SIZE] [--format F] [--html FILE] [--engine arrow|spark]``.
Importing this module imports neither pyarrow nor pyspark; the command imports what it uses
when it runs.
"""
from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from squall.errors import SquallError
from squall.hookspecs import hookimpl

__all__ = ["squall_add_commands", "squall_add_config_types", "squall_add_defaults",
           "squall_validate_config"]

#: the keys this plugin owns. SparkSpout: a failed partition read is retried from its first row
#: not yet emitted, waiting ``min.secs`` doubling up to ``max.secs``; from ``report.after``
#: consecutive failures of one partition on, each failure is reported as the component's error
#: and retried every ``max.secs`` (never dropped)
DEFAULTS: dict[str, Any] = {
    "spark.master": "local[*]",
    "spark.source.retry.backoff.min.secs": 0.5,
    "spark.source.retry.backoff.max.secs": 30.0,
    "spark.source.retry.report.after": 5,
    # SparkSpout's read progress (acking on): where it is kept in the cluster state store
    # (null: "<topology name>/<component id>") and how often it is written
    "spark.spout.progress": True,
    "spark.spout.progress.id": None,
    "spark.spout.progress.interval.secs": 1.0,
    "spark.spout.emit.batch": 500,
    "spark.spout.fetch": "auto",
    # the source a SparkSpout reads (set in its component config: plugins/spark/source.py)
    # and the settings of a session the plugin makes; known, so that a misspelt one is
    # warned of with a did-you-mean instead of being left unread
    "spark.source.format": None,
    "spark.source.path": None,
    "spark.source.table": None,
    "spark.source.query": None,
    "spark.source.options": None,
    "spark.source.columns": None,
    "spark.conf": None,
}
#: the types of the keys above whose default is null
TYPES: dict[str, type | tuple[type, ...]] = {
    "spark.source.format": str,
    "spark.source.path": (str, list),
    "spark.source.table": str,
    "spark.source.query": str,
    "spark.source.options": dict,
    "spark.source.columns": list,
    "spark.conf": dict,
}


@hookimpl
def squall_add_defaults() -> dict[str, Any]:
    return DEFAULTS


@hookimpl
def squall_add_config_types() -> dict[str, type | tuple[type, ...]]:
    return TYPES


@hookimpl
def squall_validate_config(conf: Mapping[str, Any]) -> None:
    """A SparkSpout setting it cannot use is refused at submit (the conf and each component's
    config), not by every task in ``initialize`` after Spark started."""
    from squall.plugins.spark.settings import check
    check(conf)


@hookimpl
def squall_add_commands(subparsers: Any) -> None:
    from squall.cli.main import global_options
    metrics = subparsers.add_parser("metrics", help="work with metrics written by the 'spark' "
                                                    "metrics consumer")
    metrics.set_defaults(func=lambda args, conf: _usage(metrics))
    actions = metrics.add_subparsers(dest="metrics_command", metavar="ACTION")
    rep = actions.add_parser("report", help="summarise a metrics dataset: throughput, latency "
                                            "and failures per component over time")
    global_options(rep)
    rep.add_argument("dir", metavar="DIR", help="the consumer's path (a Parquet dataset)")
    rep.add_argument("--bucket", default="minute", metavar="SIZE",
                     help="time bucket of the tables over time: second, minute, hour, day or "
                          "a duration such as 5s, 10m, 1h (default: minute; never shorter "
                          "than the data points are apart)")
    rep.add_argument("--format", dest="fmt", default="text", choices=["text", "csv", "json"],
                     help="text tables (default), CSV of the rows over time, or JSON of all")
    rep.add_argument("--html", metavar="FILE", default=None,
                     help="also write a self-contained HTML page with charts of throughput, "
                          "latency and failures over time")
    rep.add_argument("--engine", default="arrow", choices=["arrow", "spark"],
                     help="compute with pyarrow in this process (default) or with Spark SQL "
                          "on spark.master (for datasets larger than memory)")
    rep.set_defaults(func=_cmd_report)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _cmd_report(args: argparse.Namespace, conf: dict[str, Any]) -> int:
    """Print the report (and write ``--html``); SquallError (missing DIR, no data, a bad
    bucket) reaches the CLI's error line."""
    from squall.plugins.spark.report import build, check_dataset
    from squall.plugins.spark.report_model import parse_bucket
    from squall.plugins.spark.report_render import html, render

    parse_bucket(args.bucket)
    check_dataset(args.dir)              # before starting a JVM: a wrong DIR fails in one line
    spark = None
    if args.engine == "spark":
        from squall.plugins.spark.session import get_session
        settings = {"spark.ui.enabled": False, "spark.sql.session.timeZone": "UTC",
                    **(conf.get("spark.conf") or {})}
        spark = get_session(conf.get("spark.master"), settings,
                            app_name="squall-metrics-report")
        # the command's own session: a file Spark cannot read is the report's one error
        # line, not also Spark's stack trace of every task that met it
        spark.sparkContext.setLogLevel("OFF")
    try:
        rep = build(args.dir, args.bucket, args.engine, spark)
    finally:
        if spark is not None:
            spark.stop()
    if args.html:
        try:
            Path(args.html).write_text(html(rep), encoding="utf-8")
        except OSError as exc:
            raise SquallError(f"cannot write {args.html}: {exc}") from exc
    print(render(rep, args.fmt), end="")
    return 0
