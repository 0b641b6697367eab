"""squall's public names: the exact ``squall.__all__``, each resolving, and the imports API.md
documents (sections 1-7, what exists today) working as written."""
from __future__ import annotations

import importlib
import subprocess
import sys

import pytest
import squall

ALL = [
    "Acker", "Bolt", "Component", "ConfigError", "Connection", "Count", "CountMetric",
    "DRPCClient", "DRPCError", "DataPoint", "Duration",
    "Grouping", "GroupingDeclaration", "KeyValueState", "LoadAwareGrouping", "LocalCluster",
    "LocalDRPC", "MetricsConsumer", "MultilangError",
    "PluginLoadError", "PluginNotFoundError", "ReducedMetric", "Scheduler", "SchedulingError",
    "SerializationError", "Serializer", "ShellBolt", "ShellSpout", "SingleTargetGrouping", "Spout",
    "SquallError", "StateError", "StateProvider", "StateProviderError", "StateStore",
    "StatefulBolt", "Stream", "TaskInfo", "Topology",
    "TopologyBuilder", "TopologyContext", "TopologyError", "Transport", "TransportError", "Tuple",
    "TupleBatch", "WindowedBolt", "__version__", "hookimpl", "hookspec",
]
HEAVY = ("zmq", "pynng", "grpc", "pyspark", "pyarrow", "pandas", "kazoo", "redis")
PLUGINS = ["transport_zmq", "transport_nng", "transport_grpc", "scheduler_multidim", "spark"]


def test_all_is_exactly_the_public_names() -> None:
    assert sorted(squall.__all__) == ALL
    assert len(squall.__all__) == len(set(squall.__all__))


@pytest.mark.parametrize("name", ALL)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(squall, name) is not None
    namespace: dict[str, object] = {}
    exec(f"from squall import {name}", namespace)
    assert namespace[name] is getattr(squall, name)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        squall.Nope  # noqa: B018


def test_section_1_import_squall_and_its_plugins_imports_no_heavy_library() -> None:
    code = ("import importlib, sys\n"
            "import squall\n"
            f"for name in {ALL!r}:\n"
            "    getattr(squall, name)\n"
            f"for plugin in {PLUGINS!r}:\n"
            "    importlib.import_module('squall.plugins.' + plugin)\n"
            "import squall.hookspecs, squall.testing\n"
            f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})\n"
            "assert not heavy, heavy\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr


def test_section_2_components() -> None:
    from squall import Bolt, Spout, Stream, Tuple
    assert issubclass(Spout, squall.Component) and issubclass(Bolt, squall.Component)
    stream = Stream(["line", "reason"], name="rejects")
    assert (stream.name, stream.direct) == ("rejects", False)
    for attr in ("emit", "log", "report_error"):
        assert callable(getattr(Spout, attr)) and callable(getattr(Bolt, attr))
    for attr in ("ack", "fail"):
        assert callable(getattr(Bolt, attr))
    assert callable(Spout.declare_outputs)
    assert Tuple.__name__ == "Tuple"


def test_section_3_building_a_topology() -> None:
    from squall import Bolt, Spout, TopologyBuilder, TopologyError

    class Sentences(Spout):
        outputs = ["sentence"]

    class Split(Bolt):
        outputs = ["word"]

        def process(self, tup: squall.Tuple) -> None:
            for word in tup.values[0].split():
                self.emit([word])

    b = TopologyBuilder()
    b.set_spout("sentences", Sentences, parallelism=2)
    declarer = b.set_bolt("split", Split, parallelism=2, config={"k": 1})
    for method in ("shuffle_grouping", "fields_grouping", "all_grouping", "global_grouping",
                   "none_grouping", "direct_grouping", "local_or_shuffle_grouping",
                   "partial_key_grouping", "custom_grouping", "set_num_tasks", "add_config",
                   "set_resources"):
        assert callable(getattr(declarer, method)), method
    declarer.shuffle_grouping("sentences")
    assert isinstance(b.create_topology(), squall.Topology)
    bad = TopologyBuilder()
    bad.set_bolt("split", Split).shuffle_grouping("nowhere")
    with pytest.raises(TopologyError):
        bad.create_topology()


def test_section_4_running() -> None:
    from squall import LocalCluster
    from squall.testing import complete_topology
    for method in ("submit_topology", "kill_topology", "activate", "deactivate", "rebalance",
                   "get_topology_info", "__enter__", "__exit__"):
        assert callable(getattr(LocalCluster, method)), method
    assert callable(complete_topology)


def test_section_7_extension_points() -> None:
    from squall import (
        Acker, Connection, Grouping, MetricsConsumer, Scheduler, Serializer, StateStore, Transport,
    )
    for base in (Acker, Connection, Grouping, MetricsConsumer, Scheduler, Serializer, StateStore,
                 Transport):
        assert isinstance(base, type)
    hookspecs = importlib.import_module("squall.hookspecs")
    specs = [n for n in dir(hookspecs) if hasattr(getattr(hookspecs, n), "squall_spec")]
    assert specs and all(n.startswith("squall_") for n in specs)
    assert squall.hookimpl is hookspecs.hookimpl and squall.hookspec is hookspecs.hookspec
    from squall.errors import PluginLoadError, PluginNotFoundError, SquallError
    assert issubclass(PluginNotFoundError, SquallError) and issubclass(PluginLoadError,
                                                                       SquallError)
