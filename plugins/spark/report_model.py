"""What ``squall metrics report`` computes, whichever engine computed it (pyarrow or Spark).

A :class:`Report` holds three tables of plain rows (dicts), all per topology and component:

- ``totals``: ``tasks``, the summed counts (``emitted``, ``executed``, ``acked``, ``failed``)
  and the mean latencies in ms (``execute_ms``, ``process_ms``, ``complete_ms``);
- ``over_time``: per time bucket (``bucket``, its start, UTC) the throughput in tuples per
  second (``emitted_per_s`` ...: the sum over tasks of each task's rate, its counts over the
  seconds its data points cover, in the bucket) and the mean latencies;
- ``failures``: per bucket, the failed tuples (buckets with failures only).

A latency data point is the mean over one task's tuples of one data bucket: a mean latency
over several points (of several tasks or data buckets) weighs each by the count of its tuples
(:data:`LATENCY_WEIGHTS`: the point of the same task and time), so it is the mean over the
tuples themselves; a point without its count (a consumer whose whitelist left the counts out)
weighs 1.

A missing value is None. Buckets are :attr:`Report.bucket_secs` long; :func:`bucket_secs`
turns the ``--bucket`` option into seconds, never less than the data's own interval (a bucket
shorter than the points are apart would be mislabelled).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from squall.errors import SquallError

COUNTS = {"emitted": "__emit-count", "executed": "__execute-count", "acked": "__ack-count",
          "failed": "__fail-count"}
LATENCIES = {"execute": "__execute-latency", "process": "__process-latency",
             "complete": "__complete-latency"}
#: latency -> the count of the tuples it is the mean of (execute: the task's executes;
#: process: the bolt's acks; complete: the spout's acked trees)
LATENCY_WEIGHTS = {"__execute-latency": "__execute-count", "__process-latency": "__ack-count",
                   "__complete-latency": "__ack-count"}
#: the metrics the report's tables show: their interval sets the shortest bucket (a user
#: metric reported every five minutes does not widen the buckets of the others)
TABLED = frozenset(COUNTS.values()) | frozenset(LATENCIES.values())
REQUIRED = {"time", "topology", "component", "task", "metric", "value", "interval"}
NAMED = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
_UNITS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}


def parse_bucket(text: str) -> int:
    """``"minute"`` -> 60, ``"5s"`` -> 5, ``"10m"`` -> 600, ``"2h"``, ``"1d"``, ``"30"``
    (seconds). SquallError naming the accepted forms otherwise."""
    text = text.strip().lower()
    if text in NAMED:
        return NAMED[text]
    m = re.fullmatch(r"(\d+)\s*(s|m|min|h|d)?", text)
    if not m or int(m.group(1)) < 1:
        raise SquallError(f"unknown time bucket {text!r}; use second, minute, hour, day or a "
                          "duration such as 5s, 10m, 1h")
    return int(m.group(1)) * _UNITS[m.group(2) or "s"]


def bucket_secs(requested: int, data_interval: float | None) -> int:
    """The bucket used: ``requested``, raised to the data's interval when that is longer."""
    if data_interval and data_interval > requested:
        return int(-(-data_interval // 1))
    return requested


def bucket_label(secs: int) -> str:
    """``60`` -> ``"minute"``, ``5`` -> ``"5 s"``, ``600`` -> ``"10 min"``."""
    for name, value in NAMED.items():
        if secs == value:
            return name
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if secs % size == 0:
            return f"{secs // size} {unit}"
    return f"{secs} s"


@dataclass
class Report:
    """See the module docstring."""

    path: str
    points: int
    start: datetime | None
    end: datetime | None
    topologies: int
    bucket_secs: int
    requested_bucket_secs: int
    totals: list[dict[str, Any]] = field(default_factory=list)
    over_time: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)

    @property
    def bucket(self) -> str:
        return bucket_label(self.bucket_secs)

    def to_json(self) -> dict[str, Any]:
        def plain(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [{k: v.isoformat() if isinstance(v, datetime) else v for k, v in r.items()}
                    for r in rows]
        return {"path": self.path, "points": self.points,
                "start": self.start.isoformat() if self.start else None,
                "end": self.end.isoformat() if self.end else None,
                "topologies": self.topologies, "bucket_secs": self.bucket_secs,
                "bucket": self.bucket, "totals": plain(self.totals),
                "over_time": plain(self.over_time), "failures": plain(self.failures)}
