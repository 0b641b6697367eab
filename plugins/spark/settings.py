"""The SparkSpout's own settings (``spark.spout.*`` and ``spark.source.retry.*``), checked
without Spark: the rules live here once. :func:`check` runs them on the keys a conf holds (the
plugin's ``squall_validate_config``: ``squall submit``, nimbus, LocalCluster, each component's
config); the spout reads its settings through the same functions in ``initialize``, where a
value that got past validation is its TopologyError. Importing this module imports neither
pyspark nor pyarrow.

Every function runs on the caller's thread, does no I/O and raises
:class:`squall.ConfigError` naming the key and what it takes.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from squall.errors import ConfigError

__all__ = ["FETCH_METHODS", "RETRY_KEYS", "check", "check_retry", "emit_batch", "fetch_method",
           "progress_enabled", "progress_id", "progress_interval"]

#: ``spark.spout.fetch`` values
FETCH_METHODS = ("auto", "filter")
#: component config keys of the retry policy -> the field of
#: :class:`~squall.plugins.spark.fetch.RetryPolicy` each sets
RETRY_KEYS = {"spark.source.retry.backoff.min.secs": "min_secs",
              "spark.source.retry.backoff.max.secs": "max_secs",
              "spark.source.retry.report.after": "report_after"}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def emit_batch(conf: Mapping[str, Any]) -> int:
    """``spark.spout.emit.batch`` (500 when missing): the most rows one ``next_tuple`` emits,
    a positive integer."""
    batch = conf.get("spark.spout.emit.batch", 500)
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ConfigError(f"spark.spout.emit.batch must be a positive integer, got {batch!r}")
    return batch


def progress_enabled(conf: Mapping[str, Any]) -> bool:
    """``spark.spout.progress`` (true when missing): true or false."""
    value = conf.get("spark.spout.progress", True)
    if not isinstance(value, bool):
        raise ConfigError(f"spark.spout.progress must be true or false, got {value!r}")
    return value


def progress_id(conf: Mapping[str, Any]) -> str | None:
    """``spark.spout.progress.id``: a string, or None (empty or missing: the spout's own
    ``<topology name>/<component id>``)."""
    value = conf.get("spark.spout.progress.id")
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"spark.spout.progress.id must be a string, got {value!r}")
    return value or None


def progress_interval(conf: Mapping[str, Any]) -> float:
    """``spark.spout.progress.interval.secs`` (1 when missing): a number of seconds above 0
    (squall's validation also bounds every ``*.secs`` key to a year)."""
    value = conf.get("spark.spout.progress.interval.secs", 1.0)
    if not _number(value) or not value > 0:
        raise ConfigError(f"spark.spout.progress.interval.secs must be a positive number, "
                          f"got {value!r}")
    return float(value)


def fetch_method(conf: Mapping[str, Any]) -> str:
    """``spark.spout.fetch`` (``auto`` when missing): one of :data:`FETCH_METHODS`."""
    how = conf.get("spark.spout.fetch", "auto")
    if how not in FETCH_METHODS:
        raise ConfigError(f"spark.spout.fetch must be 'auto' or 'filter', got {how!r}")
    return str(how)


def check_retry(conf: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`RETRY_KEYS` values ``conf`` sets (null ones left out), by RetryPolicy
    field: ``report.after`` a positive integer, the backoffs finite numbers of seconds >= 0,
    and the least not above the most when both are set (a conf may hold one: a component's
    own config on top of the topology's)."""
    values: dict[str, Any] = {}
    for key, attr in RETRY_KEYS.items():
        value = conf.get(key)
        if value is None:
            continue
        if attr == "report_after":
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
            want = "a positive integer"
        else:
            ok = _number(value) and 0 <= value < float("inf")
            want = "a number of seconds >= 0"
        if not ok:
            raise ConfigError(f"{key} must be {want}, got {value!r}")
        values[attr] = value
    if values.get("min_secs", 0) > values.get("max_secs", float("inf")):
        raise ConfigError(f"spark.source.retry.backoff.min.secs ({values['min_secs']}) is above "
                          f"spark.source.retry.backoff.max.secs ({values['max_secs']})")
    return values


def check(conf: Mapping[str, Any]) -> None:
    """Run every rule above on the keys ``conf`` holds (missing keys pass: their defaults
    are good); ConfigError naming the first key at fault."""
    rules = (("spark.spout.emit.batch", emit_batch), ("spark.spout.progress", progress_enabled),
             ("spark.spout.progress.id", progress_id),
             ("spark.spout.progress.interval.secs", progress_interval),
             ("spark.spout.fetch", fetch_method))
    for key, rule in rules:
        if key in conf:
            rule(conf)
    check_retry(conf)
