"""squall: a distributed stream processor with Storm's model and guarantees.

>>> from squall import TopologyBuilder, Spout, Bolt
"""
from __future__ import annotations

import os
from typing import Any

# gRPC's fork handlers can kill a child forked with ``preexec_fn`` (a fork, not a vfork) while
# gRPC is in use in the parent: with grpcio 1.85, 11 of 300 such children of a process with a
# busy channel died before their exec, none of 600 with the handlers off. pyspark starts its
# JVM that way, beside squall's gRPC clients. squall never uses gRPC in a forked child (what it
# starts execs at once), so it turns the handlers off unless the user chose. The C core reads
# this once, when grpc is first imported: squall is imported before it.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

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
