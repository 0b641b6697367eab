"""Service-provider interfaces: the base classes every driver implements."""
from __future__ import annotations

from squall.spi.acker import Acker
from squall.spi.grouping import (
    Grouping, GroupingDeclaration, LoadAwareGrouping, SingleTargetGrouping,
)
from squall.spi.metrics import DataPoint, MetricsConsumer, TaskInfo
from squall.spi.scheduler import Scheduler
from squall.spi.serializer import Serializer
from squall.spi.state import LeaderElection, StateStore
from squall.spi.transport import Connection, Transport

__all__ = [
    "Acker", "Connection", "DataPoint", "Grouping", "GroupingDeclaration", "LeaderElection",
    "LoadAwareGrouping", "MetricsConsumer", "Scheduler", "Serializer", "SingleTargetGrouping",
    "StateStore", "TaskInfo", "Transport",
]
