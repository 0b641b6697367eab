"""Submit-time grouping check: a subscription whose grouping's ``configure`` refuses the
declaration (or whose grouping cannot be built) is refused at submit, by LocalCluster and by
``python -m squall.daemon.validate`` (what nimbus runs), with one line naming the
subscription, instead of a cluster's workers failing to start for as long as the topology
lives."""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from squall import LocalCluster, TopologyError
from squall.daemon import packaging
from squall.daemon.validate import PREFIX
from validate_packages import stored_package, validate

TOPO = """
from squall import Bolt, Grouping, Spout, TopologyBuilder, TopologyError

class ByUser(Grouping):
    def configure(self, declaration):
        if "user" not in declaration.source_fields:
            raise TopologyError("ByUser needs a 'user' field")
        self.index = list(declaration.source_fields).index("user")

    def choose_tasks(self, task_id, values):
        return [self.target_tasks[0]]

class S(Spout):
    outputs = [FIELD]

class B(Bolt):
    def process(self, tup):
        pass

b = TopologyBuilder()
b.set_spout("s", S)
b.set_bolt("b", B, 2).custom_grouping("s", ByUser())
topology = b.create_topology()
"""


def _module(tmp_path: Path, field: str) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    path = project / "grouptopo.py"
    path.write_text(textwrap.dedent(TOPO).replace("FIELD", repr(field)))
    return path


def _package(tmp_path: Path, field: str) -> Path:
    return stored_package(tmp_path, TOPO.replace("FIELD", repr(field)), "grouptopo",
                          topology_id="g-1-1")


def test_a_grouping_refusing_its_declaration_is_refused_at_cluster_submit(
        tmp_path: Path) -> None:
    proc = validate(_package(tmp_path, "a"))
    assert proc.returncode == 1, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith(PREFIX)]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "component 'b'" in lines[0] and "'s' stream 'default'" in lines[0]
    assert "ByUser needs a 'user' field" in lines[0]


def test_a_grouping_accepting_its_declaration_passes(tmp_path: Path) -> None:
    pytest.importorskip("zmq")
    proc = validate(_package(tmp_path, "user"))
    assert proc.returncode == 0, proc.stderr


def test_local_cluster_refuses_it_with_the_same_line(tmp_path: Path) -> None:
    sub = packaging.prepare_submission(f"{_module(tmp_path, 'a')}:topology")
    sys.modules.pop("grouptopo", None)
    with LocalCluster() as cluster, pytest.raises(TopologyError) as info:
        cluster.submit_topology("g", {}, sub.topology)
    assert "component 'b'" in str(info.value) and "ByUser needs a 'user' field" in \
        str(info.value)
