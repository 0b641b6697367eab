"""Topology targets: splitting ``module:attr``, files against dotted modules, loading."""
from __future__ import annotations

import importlib
import sys
import textwrap

import pluggy
import pytest

from squall.api.target import is_file_path, load_target, split_target
from squall.daemon.packaging import prepare_submission
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


@pytest.mark.parametrize("stem", ["json", "inspect", "types", "queue", "csv", "random"])
def test_a_topology_file_named_like_a_stdlib_module_is_refused_and_replaces_nothing(
        tmp_path, stem):
    before = sys.modules[stem] if stem in sys.modules else importlib.import_module(stem)
    (tmp_path / f"{stem}.py").write_text(textwrap.dedent(TOPO))
    for load in (load_target, prepare_submission):      # squall local, squall submit
        with pytest.raises(TopologyError, match=rf"^topology file {stem}\.py shadows the "
                                                rf"standard library module '{stem}' "):
            load(f"{tmp_path / f'{stem}.py'}:topology")
        assert sys.modules[stem] is before
    assert str(tmp_path) not in sys.path


def test_a_topology_file_named_like_an_imported_module_is_refused(tmp_path):
    (tmp_path / "pluggy.py").write_text(textwrap.dedent(TOPO))
    with pytest.raises(TopologyError, match=r"^topology file pluggy\.py has the name of the "
                                            r"module 'pluggy' this process imported already"):
        load_target(f"{tmp_path / 'pluggy.py'}:topology")
    assert sys.modules["pluggy"] is pluggy


def test_two_topology_files_of_one_name_load_one_after_the_other(tmp_path):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "twicetopo.py").write_text(textwrap.dedent(TOPO))
        assert isinstance(load_target(f"{tmp_path / folder / 'twicetopo.py'}:topology"),
                          Topology)
    assert sys.modules.pop("twicetopo").__file__ == str(tmp_path / "b" / "twicetopo.py")


@pytest.mark.parametrize("helper", ["platform.py", "uuid.py", "email/__init__.py"])
def test_a_module_beside_the_topology_named_like_a_stdlib_module_is_refused(tmp_path, helper):
    # it works or breaks depending on what imported the real one first: refused alike by
    # squall local and squall submit (and by nimbus and the workers: test_packaging)
    (tmp_path / "besidetopo.py").write_text(textwrap.dedent(TOPO))
    (tmp_path / helper).parent.mkdir(exist_ok=True)
    (tmp_path / helper).write_text("NAME = 'acme'\n")
    shown = helper.removesuffix("__init__.py")
    module = shown.removesuffix(".py").removesuffix("/")
    with pytest.raises(TopologyError, match=rf"^{shown} in {tmp_path} shadows the standard "
                                            rf"library module '{module}' .*; rename it$"):
        load_target(f"{tmp_path / 'besidetopo.py'}:topology")
    assert str(tmp_path) not in sys.path


def test_a_folder_without_init_named_like_a_stdlib_module_is_no_shadow(tmp_path):
    (tmp_path / "nsdirtopo.py").write_text(textwrap.dedent(TOPO))
    (tmp_path / "email").mkdir()            # templates, say: a stdlib package still wins
    (tmp_path / "email" / "welcome.txt").write_text("hi")
    assert isinstance(load_target(f"{tmp_path / 'nsdirtopo.py'}:topology"), Topology)
    sys.modules.pop("nsdirtopo")


def test_a_file_of_a_package_with_relative_imports_gets_the_dotted_target(tmp_path):
    pkg = tmp_path / "relwc"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "bolts.py").write_text("X = 1\n")
    (pkg / "reltopo.py").write_text("from .bolts import X\n")
    with pytest.raises(TopologyError, match=rf"no known parent package .*run from {tmp_path} "
                                            r"with the target relwc\.reltopo:ATTR$"):
        load_target(f"{pkg / 'reltopo.py'}:topology")
    sys.modules.pop("reltopo", None)


def test_an_attribute_that_is_none_is_not_called_missing(tmp_path):
    (tmp_path / "nonetopo.py").write_text("topology = None\n")
    with pytest.raises(TopologyError, match="is a NoneType, not a topology"):
        load_target(f"{tmp_path / 'nonetopo.py'}:topology")
    sys.modules.pop("nonetopo")
