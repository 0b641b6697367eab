"""How one SparkSpout task reads its source: the session, the planned DataFrame, and the plan
made again when the session's driver JVM is lost.

:meth:`SourcePlan.plan` runs once, in the spout's ``initialize``: it gets the worker's session
(:func:`~squall.plugins.spark.session.get_session`), builds the DataFrame
(:func:`~squall.plugins.spark.source.load_dataframe`), checks its columns against the declared
fields, splits it into partitions (:func:`~squall.plugins.spark.fetch.plan`) and takes the
source's fingerprint (:func:`~squall.plugins.spark.source.fingerprint`).

:meth:`SourcePlan.recover` is the :class:`~squall.plugins.spark.fetch.PartitionReader`'s
``recover``: after a failed read whose session lost its driver JVM, it does the same on a new
session and hands the reader the new fetch, provided the source is split as before (same
partitions, same fingerprint), so row ids keep naming the same rows and the reader goes on from
its first row not yet emitted. A source that changed meanwhile is an error, reported with each
failed read, never read under the old ids.
"""
from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from squall.errors import ConfigError, TopologyError

from squall.plugins.spark.fetch import Fetch
from squall.plugins.spark.settings import FETCH_METHODS, fetch_method
from squall.plugins.spark.source import SourceSpec, fingerprint, load_dataframe

__all__ = ["FETCH_METHODS", "SourcePlan"]

log = logging.getLogger(__name__)


class SourcePlan:
    """The plan of one spout task's source (see the module doc).

    ``conf`` gives ``spark.master``, ``spark.conf`` and ``spark.spout.fetch``; ``fields`` are
    the declared output fields (None: unknown); ``name`` names the spout in errors. Raises
    TopologyError for a bad ``spark.spout.fetch``."""

    def __init__(self, conf: Mapping[str, Any], spec: SourceSpec, *, name: str, app_name: str,
                 fields: Sequence[str] | None) -> None:
        try:
            self.how = fetch_method(conf)
        except ConfigError as exc:
            raise TopologyError(f"{name}: {exc}") from None
        self.spec = spec
        self.name = name
        self.app_name = app_name
        self.master = conf.get("spark.master")
        self.settings = conf.get("spark.conf")
        self.fields = None if fields is None else list(fields)
        #: set by :meth:`plan`: the session, partitions, the source's fingerprint, the method
        self.spark: Any = None
        self.count = 0
        self.fingerprint = ""
        self.method = ""

    def plan(self) -> Fetch:
        """Plan the source (the spout's ``initialize``: blocks while Spark starts and plans);
        returns the fetch of one partition. TopologyError for a source that cannot be read."""
        self.spark, self.count, fetch, self.fingerprint, self.method = self._plan()
        return fetch

    def recover(self) -> tuple[Any, Fetch] | None:
        """On the reading thread, after a failed read: None while the session works; else
        ``(new session, fetch)`` planned on a new session. TopologyError when the source is no
        longer split as it was (or cannot be read); ConfigError when no session starts."""
        from squall.plugins.spark.session import driver_lost

        if not driver_lost(self.spark):
            return None
        log.warning("%s: its Spark session lost its driver JVM; planning the source again on "
                    "a new session", self.name)
        spark, count, fetch, digest, _ = self._plan()
        if count != self.count or digest != self.fingerprint:
            what = (f"{count} partitions, {self.count} when the task started" if count != self.count
                    else "other input files than when the task started")
            raise TopologyError(f"{self.name}: the source, planned again on a new Spark session, "
                                f"has {what}: row ids would name other rows; kill the topology "
                                f"and submit it again")
        self.spark = spark
        return spark, fetch

    def _plan(self) -> tuple[Any, int, Fetch, str, str]:
        from squall.plugins.spark.fetch import _filter_plan, plan
        from squall.plugins.spark.session import first_line, get_session, quiet_spark_errors

        spec, name = self.spec, self.name
        spark = get_session(self.master, self.settings, app_name=self.app_name)
        df = load_dataframe(spark, spec, name)
        if self.fields is not None and spec.columns is None and list(df.columns) != self.fields:
            raise TopologyError(f"{name}: the source's columns {df.columns} differ from the "
                                f"declared fields {self.fields}; set spark.source.columns")
        try:
            with quiet_spark_errors():
                count, fetch, method = _filter_plan(df) if self.how == "filter" else plan(df)
        except Exception as exc:   # a column type Arrow cannot carry, ...: one line
            raise TopologyError(f"{name}: cannot read {spec.describe()}: {first_line(exc)} "
                                f"(cast such columns, e.g. in spark.source.query)") from exc
        return spark, count, fetch, fingerprint(spec, df), method
