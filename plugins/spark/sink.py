"""The ``spark`` metrics consumer: every data point appended to a Parquet dataset.

Registered with::

    topology.metrics.consumer.register:
      - class: spark
        argument: {path: /var/squall/metrics}     # optional: flush.secs, flush.points

Layout: ``DIR/date=YYYY-MM-DD/part-<ms>-<host>-<pid>-<task>-<seq>.parquet`` (Hive-style
partitions by the data point's UTC date), each file written under a hidden name and renamed
into place, so readers (``spark.read.parquet(DIR)``) never see a half-written file. Columns:

=============  ==============================  =============================================
``time``       timestamp (UTC, microseconds)   end of the metrics bucket
``topology``   string                          topology id
``component``  string                          component id
``task``       int                             task id
``worker``     string                          ``host:port`` of the worker
``metric``     string                          metric name; a map's entries are ``name.key``
``value``      double                          numbers and booleans; other values are skipped
``interval``   double                          the bucket's length in seconds
``date``       (partition directory)           ``YYYY-MM-DD``
=============  ==============================  =============================================

Writing uses pyarrow only (no Spark session in the workers). Points are buffered and written
at the end of a ``handle`` call once ``flush.secs`` have passed since the last write or
``flush.points`` (default 10,000) are buffered, and always in ``cleanup`` (so a topology's
last points reach the dataset when it is killed). ``flush.secs`` defaults to the topology's
``topology.builtin.metrics.bucket.size.secs``: every task sends its points once per bucket,
so a consumer task writes about one file per date per bucket, whatever the number of tasks
(``flush.secs: 0`` writes one file per ``handle`` call, i.e. per task and bucket).
"""
from __future__ import annotations

import itertools
import logging
import os
import socket
import time
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from squall.errors import ConfigError
from squall.spi.metrics import DataPoint, MetricsConsumer, TaskInfo

__all__ = ["COLUMNS", "SparkMetricsConsumer", "flatten"]

log = logging.getLogger(__name__)

#: the data columns of every file (``date`` comes from the directory)
COLUMNS = ("time", "topology", "component", "task", "worker", "metric", "value", "interval")
_ARGS = {"path", "flush.secs", "flush.points"}
#: the files' sequence numbers, shared by every consumer of the process: two consumers writing
#: in the same millisecond (without a task id, as when called directly) never pick one name
_SEQ = itertools.count()


def flatten(name: str, value: Any) -> Iterator[tuple[str, float]]:
    """``(metric name, float)`` pairs for one data point.

    Numbers (and booleans, as 0/1) give one pair; a mapping gives ``name.key`` for each entry,
    recursively (a list gives ``name.0``, ``name.1``...); None, strings and other values give
    none. NaN and infinities are kept (Parquet doubles carry them)."""
    if isinstance(value, bool):
        yield name, 1.0 if value else 0.0
    elif isinstance(value, (int, float)):
        yield name, float(value)
    elif isinstance(value, Mapping):
        for key, inner in value.items():
            yield from flatten(f"{name}.{key}", inner)
    elif isinstance(value, (list, tuple)):
        for i, inner in enumerate(value):
            yield from flatten(f"{name}.{i}", inner)


class SparkMetricsConsumer(MetricsConsumer):
    """Appends data points to a date-partitioned Parquet dataset (see the module docstring).

    Needs pyarrow, imported when it first writes; ``squall_requires`` names it, so without it
    the consumer is refused when loaded (at submit), naming ``squall[spark]``.

    ``prepare``, ``handle`` and ``cleanup`` run on the consumer task's executor thread; a
    write blocks on the local disk (or the mounted file system holding DIR). ``prepare``
    raises ConfigError for a bad argument or a DIR that cannot be created; a failed write
    raises OSError from ``handle`` (reported by the consumer bolt; the points stay buffered
    and are written with the next flush).
    """

    squall_requires = ("pyarrow",)

    def __init__(self) -> None:
        self.path: Path | None = None
        self.flush_secs = 60.0
        self.flush_points = 10_000
        self._rows: dict[str, list[list[Any]]] = {}
        self._buffered = 0
        self._last_flush = time.monotonic()
        self._tag = f"{socket.gethostname()}-{os.getpid()}"

    def prepare(self, conf: Mapping[str, Any], argument: Any, context: Any) -> None:
        if not isinstance(argument, Mapping) or not argument.get("path"):
            raise ConfigError("the 'spark' metrics consumer needs argument {path: DIR}, got "
                              f"{argument!r}")
        unknown = set(argument) - _ARGS
        if unknown:
            raise ConfigError(f"the 'spark' metrics consumer does not know {sorted(unknown)}; "
                              f"it takes {sorted(_ARGS)}")
        bucket = conf.get("topology.builtin.metrics.bucket.size.secs") or 60
        try:
            self.flush_secs = float(argument.get("flush.secs", bucket))
            self.flush_points = int(argument.get("flush.points", 10_000))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"the 'spark' metrics consumer: bad flush setting: {exc}"
                              ) from exc
        if self.flush_secs < 0 or self.flush_points < 1:
            raise ConfigError("the 'spark' metrics consumer: flush.secs must be >= 0 and "
                              f"flush.points >= 1, got {self.flush_secs} and "
                              f"{self.flush_points}")
        self.path = Path(str(argument["path"]))
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"metrics directory {self.path} cannot be created: {exc}"
                              ) from exc
        task = getattr(context, "task_id", None)
        if task is not None:
            self._tag += f"-{task}"

    def handle(self, task_info: TaskInfo, data_points: list[DataPoint]) -> None:
        stamp = task_info.timestamp
        day = datetime.fromtimestamp(stamp, timezone.utc).strftime("%Y-%m-%d")
        micros = int(stamp * 1_000_000)
        worker = f"{task_info.worker_host}:{task_info.worker_port}"
        rows = self._rows.setdefault(day, [])
        for point in data_points:
            for metric, value in flatten(point.name, point.value):
                rows.append([micros, task_info.topology, task_info.component, task_info.task,
                             worker, metric, value, float(task_info.interval_secs)])
                self._buffered += 1
        if (self._buffered >= self.flush_points
                or time.monotonic() - self._last_flush >= self.flush_secs):
            self.flush()

    def flush(self) -> None:
        """Write the buffered points, one file per date; raises OSError if a write fails
        (what was not written stays buffered)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        self._last_flush = time.monotonic()
        if self.path is None:
            return
        for day in list(self._rows):
            rows = self._rows[day]
            if not rows:
                del self._rows[day]
                continue
            columns = list(zip(*rows, strict=True))
            table = pa.table({
                "time": pa.array(columns[0], pa.timestamp("us", tz="UTC")),
                "topology": pa.array(columns[1], pa.string()),
                "component": pa.array(columns[2], pa.string()),
                "task": pa.array(columns[3], pa.int32()),
                "worker": pa.array(columns[4], pa.string()),
                "metric": pa.array(columns[5], pa.string()),
                "value": pa.array(columns[6], pa.float64()),
                "interval": pa.array(columns[7], pa.float64()),
            })
            folder = self.path / f"date={day}"
            folder.mkdir(parents=True, exist_ok=True)
            name = f"part-{int(time.time() * 1000)}-{self._tag}-{next(_SEQ)}.parquet"
            hidden = folder / f".{name}.tmp"
            pq.write_table(table, hidden)
            os.replace(hidden, folder / name)
            self._buffered -= len(rows)
            del self._rows[day]
            log.debug("wrote %d metric points to %s", len(rows), folder / name)

    def cleanup(self) -> None:
        self.flush()

