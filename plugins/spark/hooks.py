"""The Spark plugin's hooks (entry point ``spark`` in ``squall.plugins``).

Adds its config keys (``spark.master`` and the ``spark.source.retry.*`` keys, with their
defaults) and ``squall metrics report DIR [--bucket minute]``. Importing this module does not
import pyspark; the command imports it when it runs.
"""
from __future__ import annotations

import argparse
from typing import Any

from squall.hookspecs import hookimpl

__all__ = ["squall_add_commands", "squall_add_defaults"]

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
}


def _global_options(parser: argparse.ArgumentParser) -> None:
    """Accept squall's global options after the sub-subcommand too (``squall metrics report
    DIR -c key=value``); defaults are suppressed so values given earlier are kept."""
    parser.add_argument("--config", metavar="FILE", default=argparse.SUPPRESS,
                        help="a YAML config file (default: $SQUALL_CONF)")
    parser.add_argument("-c", dest="overrides", metavar="KEY=VALUE", action="append",
                        default=argparse.SUPPRESS, help="override a config key (repeatable)")
    parser.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                        help="log at DEBUG")


@hookimpl
def squall_add_defaults() -> dict[str, Any]:
    return DEFAULTS


@hookimpl
def squall_add_commands(subparsers: Any) -> None:
    metrics = subparsers.add_parser("metrics", help="work with metrics written by the 'spark' "
                                                    "metrics consumer")
    metrics.set_defaults(func=lambda args, conf: _usage(metrics))
    actions = metrics.add_subparsers(dest="metrics_command", metavar="ACTION")
    rep = actions.add_parser("report", help="summarise a metrics dataset with Spark SQL: "
                                            "throughput, latency and failures per component")
    _global_options(rep)
    rep.add_argument("dir", metavar="DIR", help="the consumer's path (a Parquet dataset)")
    rep.add_argument("--bucket", default="minute",
                     choices=["second", "minute", "hour", "day"],
                     help="time bucket of the tables over time (default: minute)")
    rep.set_defaults(func=_cmd_report)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _cmd_report(args: argparse.Namespace, conf: dict[str, Any]) -> int:
    """Print the report; SquallError (missing DIR, no data) reaches the CLI's error line."""
    from squall.plugins.spark.report import check_dataset, report
    from squall.plugins.spark.session import get_session

    check_dataset(args.dir)              # before starting a JVM: a wrong DIR fails in one line

    settings = {"spark.ui.enabled": False, "spark.sql.session.timeZone": "UTC",
                **(conf.get("spark.conf") or {})}
    spark = get_session(conf.get("spark.master"), settings, app_name="squall-metrics-report")
    try:
        print(report(args.dir, spark=spark, bucket=args.bucket), end="")
    finally:
        spark.stop()
    return 0
