"""Built-in metrics consumers (entry-point group ``squall.metrics_consumers``).

``log``: :class:`LoggingMetricsConsumer`, registered with
``topology.metrics.consumer.register: [{class: log}]`` or, to also append to a file,
``[{class: log, argument: {file: /path/metrics.log}}]``.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from squall.errors import ConfigError
from squall.spi.metrics import DataPoint, MetricsConsumer, TaskInfo

__all__ = ["LoggingMetricsConsumer", "format_data_points"]

#: the logger every data point goes to (configure it to route metrics to their own file)
metrics_log = logging.getLogger("squall.metrics")


def _value_text(value: Any) -> str:
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return str(value)


def format_data_points(task_info: TaskInfo, data_points: list[DataPoint]) -> list[str]:
    """One line per data point, tab-separated as in Storm's metrics log: the bucket's time
    (epoch seconds), ``host:port`` of the worker, ``task:component``, the metric name and its
    value (maps and lists as compact JSON)."""
    head = (f"{int(task_info.timestamp)}\t{task_info.worker_host}:{task_info.worker_port}\t"
            f"{task_info.task}:{task_info.component}")
    return [f"{head}\t{p.name}\t{_value_text(p.value)}" for p in data_points]


class LoggingMetricsConsumer(MetricsConsumer):
    """Writes every data point to the ``squall.metrics`` logger at INFO, and to ``file`` when the
    registration argument is ``{"file": path}`` (appended, created with its directory).

    ``handle`` runs on the consumer task's executor thread; each call writes its lines with one
    ``write`` and flushes, so several consumer tasks may append to the same file.
    """

    def __init__(self) -> None:
        self._file: IO[str] | None = None

    def prepare(self, conf: Mapping[str, Any], argument: Any, context: Any) -> None:
        if argument is None:
            return
        if not isinstance(argument, Mapping) or set(argument) - {"file"}:
            raise ConfigError("the 'log' metrics consumer takes no argument or {file: PATH}, "
                              f"got {argument!r}")
        if argument.get("file"):
            path = Path(str(argument["file"]))
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._file = path.open("a", encoding="utf-8")
            except OSError as exc:
                raise ConfigError(f"metrics log file {path} cannot be opened: {exc}") from exc

    def handle(self, task_info: TaskInfo, data_points: list[DataPoint]) -> None:
        lines = format_data_points(task_info, data_points)
        if metrics_log.isEnabledFor(logging.INFO):
            for line in lines:
                metrics_log.info("%s", line)
        if self._file is not None and lines:
            self._file.write("\n".join(lines) + "\n")
            self._file.flush()

    def cleanup(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
