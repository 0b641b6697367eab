"""squall: a distributed stream processor with Storm's model and guarantees.

>>> from squall import TopologyBuilder, Spout, Bolt
"""
from __future__ import annotations

from typing import Any

from squall.api.component import Bolt, Component, Spout
from squall.api.context import TopologyContext
from squall.api.tuple import Stream, Tuple, TupleBatch
from squall.errors import (
    ConfigError, DRPCError, MultilangError, PluginLoadError, PluginNotFoundError,
    SchedulingError, SerializationError, SquallError, StateError, StateProviderError,
    TopologyError, TransportError,
)
from squall.hookspecs import hookimpl, hookspec
from squall.spi import (
    Acker, Connection, DataPoint, Grouping, GroupingDeclaration, LoadAwareGrouping,
    MetricsConsumer, Scheduler, Serializer, SingleTargetGrouping, StateStore, TaskInfo, Transport,
)

__version__ = "0.1.0"

__all__ = [
    "Acker", "Bolt", "Component", "ConfigError", "Connection", "CountMetric", "DRPCClient",
    "DRPCError", "DataPoint", "LocalDRPC", "Grouping", "GroupingDeclaration",
    "LoadAwareGrouping", "LocalCluster", "MetricsConsumer",
    "PluginLoadError", "PluginNotFoundError", "ReducedMetric", "Scheduler", "SchedulingError",
    "SerializationError", "Serializer", "SingleTargetGrouping", "Spout", "SquallError",
    "StateError", "StateStore", "Stream", "TaskInfo", "Topology",
    "KeyValueState", "StateProvider", "StateProviderError", "StatefulBolt",
    "TopologyBuilder", "TopologyContext", "TopologyError", "Transport", "TransportError", "Tuple",
    "TupleBatch", "hookimpl", "hookspec", "__version__",
    "Count", "Duration", "WindowedBolt",
    "MultilangError", "ShellBolt", "ShellSpout",
]

# Heavier pieces load on first use so `import squall` stays light.
_LAZY = {
    "TopologyBuilder": "squall.api.builder",
    "Topology": "squall.api.topology",
    "LocalCluster": "squall.runtime.local_cluster",
    "CountMetric": "squall.metrics.api",
    "ReducedMetric": "squall.metrics.api",
    "WindowedBolt": "squall.windowing",
    "Count": "squall.windowing",
    "Duration": "squall.windowing",
    "ShellBolt": "squall.multilang",
    "ShellSpout": "squall.multilang",
    "LocalDRPC": "squall.drpc.local",
    "DRPCClient": "squall.drpc.client",
    "StatefulBolt": "squall.stateful.bolt",
    "KeyValueState": "squall.stateful.state",
    "StateProvider": "squall.stateful.provider",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'squall' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
