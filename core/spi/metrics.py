"""The metrics consumer SPI (``squall.metrics_consumers``).

Consumers are registered per topology through ``topology.metrics.consumer.register`` (a list of
``{class: NAME, argument: ANY, parallelism.hint: N}``) and receive every data point of every task
once per ``topology.builtin.metrics.bucket.size.secs``. ``handle`` runs on the consumer task's
own executor, never on another component's hot path.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TaskInfo:
    topology: str
    component: str
    task: int
    worker_host: str
    worker_port: int
    timestamp: float           # end of the bucket, seconds since the epoch
    interval_secs: float


@dataclass(frozen=True)
class DataPoint:
    name: str
    value: Any


class MetricsConsumer(ABC):
    def prepare(self, conf: Mapping[str, Any], argument: Any, context: Any) -> None:
        """Called once before the first ``handle``."""

    @abstractmethod
    def handle(self, task_info: TaskInfo, data_points: list[DataPoint]) -> None: ...

    def cleanup(self) -> None:
        """Called once when the topology stops."""
