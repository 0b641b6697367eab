"""The metrics one task registered, grouped by reporting interval.

The executor keeps one :class:`MetricRegistry` per task, passes :meth:`MetricRegistry.register`
as ``register_metric`` to the task's :class:`squall.TopologyContext`, and every
``bucket_secs`` (one timer per distinct size in the worker) calls
:meth:`MetricRegistry.collect` to get the data points of that size to send to the metrics
consumers, with ``interval_secs`` set to the size. Everything runs on the task's executor
thread; no locks.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from squall.errors import TopologyError
from squall.spi.metrics import DataPoint

__all__ = ["BUILTIN_METRICS", "MetricRegistry"]

#: names of the built-in per-task metrics (API.md section 7); user metrics may not use ``__``
BUILTIN_METRICS = ("__emit-count", "__transfer-count", "__ack-count", "__fail-count",
                   "__execute-count", "__execute-latency", "__process-latency",
                   "__complete-latency", "__receive")


class MetricRegistry:
    """Metrics of one task: ``{bucket_secs: {name: metric}}``.

    ``default_bucket_secs`` is ``topology.builtin.metrics.bucket.size.secs``.
    """

    #: registrations in this process so far: the worker's metrics timers look for new bucket
    #: sizes when it changes
    registrations = 0

    def __init__(self, default_bucket_secs: int = 60) -> None:
        self.default_bucket_secs = default_bucket_secs
        self._buckets: dict[int, dict[str, Any]] = {}

    def register(self, name: str, metric: Any, bucket_secs: float | None = None, *,
                 builtin: bool = False) -> Any:
        """Add ``metric`` (anything with ``get_value_and_reset()``) under ``name``; returns it.

        Raises TopologyError for a name already registered by this task, a ``__`` name (kept
        for built-in metrics, which the executor registers with ``builtin=True``), an object
        without ``get_value_and_reset`` or a bucket size that is not a positive whole number.
        """
        if not isinstance(name, str) or not name:
            raise TopologyError(f"metric name must be a non-empty string, got {name!r}")
        if name.startswith("__") and not builtin:
            raise TopologyError(f"metric name {name!r}: names starting with '__' are reserved "
                                "for squall's built-in metrics")
        if not callable(getattr(metric, "get_value_and_reset", None)):
            raise TopologyError(f"metric {name!r}: {type(metric).__name__} has no "
                                "get_value_and_reset()")
        secs = self.default_bucket_secs if bucket_secs is None else bucket_secs
        if isinstance(secs, bool) or not isinstance(secs, (int, float)) or secs < 1 \
                or secs != int(secs):
            raise TopologyError(f"metric {name!r}: bucket_secs must be a positive whole number "
                                f"of seconds, got {bucket_secs!r}")
        if any(name in metrics for metrics in self._buckets.values()):
            raise TopologyError(f"metric {name!r} was registered twice by the same task")
        self._buckets.setdefault(int(secs), {})[name] = metric
        MetricRegistry.registrations += 1
        return metric

    def bucket_sizes(self) -> list[int]:
        """The distinct reporting intervals, in seconds (a timer per size)."""
        return sorted(self._buckets)

    def collect(self, bucket_secs: int,
                failed: Callable[[str, Exception], None] | None = None) -> list[DataPoint]:
        """Read and reset every metric of that interval; ``None`` values are left out, and so
        is a metric whose ``get_value_and_reset`` raises (``failed(name, exc)`` is told; the
        others are read all the same)."""
        points = []
        for name, metric in self._buckets.get(bucket_secs, {}).items():
            try:
                value = metric.get_value_and_reset()
            except Exception as exc:
                if failed is None:
                    raise
                failed(name, exc)
                continue
            if value is not None:
                points.append(DataPoint(name, value))
        return points
