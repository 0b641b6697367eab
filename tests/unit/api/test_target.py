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
