"""Topology targets: splitting ``module:attr``, files against dotted modules, loading."""
from __future__ import annotations

import textwrap

import pytest

from squall.api.target import is_file_path, load_target, split_target
from squall.api.topology import Topology
from squall.errors import TopologyError

TOPO = """
from squall import Spout, TopologyBuilder

class S(Spout):
    outputs = ["x"]

def build():
    b = TopologyBuilder()
    b.set_spout("s", S)
    return b.create_topology()

topology = build()
"""


def test_split_target_takes_the_last_colon():
    assert split_target("pkg.mod:topology") == ("pkg.mod", "topology")
    assert split_target("C:/x/topo.py:build") == ("C:/x/topo.py", "build")


@pytest.mark.parametrize("bad", ["pkg.mod", ":topology", "pkg.mod:", ""])
def test_split_target_without_module_or_attribute_is_one_topology_error(bad):
    with pytest.raises(TopologyError, match="must look like"):
        split_target(bad)


def test_a_missing_colon_gets_a_hint():
    with pytest.raises(TopologyError, match=r"e\.g\. 'topo\.py:topology'"):
        split_target("topo.py")


def test_is_file_path_tells_files_from_dotted_modules():
    assert is_file_path("topo.py") and is_file_path("dir/topo") and is_file_path("a/b.py")
    assert not is_file_path("pkg.topo") and not is_file_path("topo")


def test_load_target_returns_the_topology_or_calls_the_function(tmp_path):
    (tmp_path / "targettopo.py").write_text(textwrap.dedent(TOPO))
    for attr in ("topology", "build"):
        got = load_target(f"{tmp_path / 'targettopo.py'}:{attr}")
        assert isinstance(got, Topology) and sorted(got.components) == ["s"]
    with pytest.raises(TopologyError, match="has no attribute 'nope'"):
        load_target(f"{tmp_path / 'targettopo.py'}:nope")


WINDOWED = """
from squall import Duration, Spout, TopologyBuilder, WindowedBolt

class S(Spout):
    outputs = ["x", "ts"]

class W(WindowedBolt):
    window = Duration(seconds=20)
    timestamp_field = "ts"
    def process_window(self, window):
        pass

def build():
    b = TopologyBuilder()
    b.set_spout("s", S)
    b.set_bolt("w", W).global_grouping("s")
    return b.create_topology()
"""


def test_a_target_is_built_for_the_conf_it_is_loaded_with(tmp_path):
    # squall local / submit load it with their conf (config files and -c): a create_topology()
    # without a conf checks its windows against that, and declares the late stream it names
    (tmp_path / "windowedtopo.py").write_text(textwrap.dedent(WINDOWED))
    target = f"{tmp_path / 'windowedtopo.py'}:build"
    with pytest.raises(TopologyError, match=r"does not fit in topology.message.timeout.secs "
                                            r"\(30 s\)"):
        load_target(target)
    got = load_target(target, {"topology.message.timeout.secs": 60,
                               "topology.bolts.late.tuple.stream": "late"})
    assert "late" in got.components["w"].streams
    assert got.conf == {}                           # the loading conf is not the topology's
    with pytest.raises(TopologyError, match="does not fit"):
        load_target(target)                         # only while loading for that conf
