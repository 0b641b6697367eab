"""Submit-time resource checks: a package whose component resources (written by hand, past
``set_resources``) or ``topology.component.*`` defaults no scheduler could use fails
``python -m squall.daemon.validate`` (what nimbus runs on submit) with one line."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from squall.daemon import packaging
from squall.daemon.validate import PREFIX

TOPO = """
from squall import Bolt, Spout, TopologyBuilder

class S(Spout):
    outputs = ["x"]

class B(Bolt):
    def process(self, tup):
        pass

b = TopologyBuilder()
b.set_spout("s", S).set_resources(cpu=1)
b.set_bolt("b", B).shuffle_grouping("s")
topology = b.create_topology()
"""


def _package(tmp_path: Path, conf: dict[str, Any], resources: dict[str, Any] | None) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "restopo.py").write_text(textwrap.dedent(TOPO))
    sub = packaging.prepare_submission(f"{project / 'restopo.py'}:topology")
    sys.modules.pop("restopo", None)
    dist = tmp_path / "stormdist" / "t-1-1"
    dist.mkdir(parents=True)
    (dist / packaging.CODE_FILE).write_bytes(packaging.zip_code_dir(sub.code_dir))
    packaging.write_json(dist / packaging.CONF_FILE, conf)
    topology = sub.topology.to_json()
    if resources is not None:
        for comp in topology["components"]:
            if comp["id"] == "s":
                comp["resources"] = resources
    packaging.write_json(dist / packaging.TOPOLOGY_FILE, topology)
    return dist


def _validate(dist: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "squall.daemon.validate", str(dist)],
                          cwd=str(dist), capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("conf, resources, message", [
    ({}, {"cpu": True}, "component 's': resource cpu must be a non-negative number, got True"),
    ({}, {"memory_mb": -5}, "component 's': resource memory_mb must be a non-negative number"),
    ({}, {"gpu": 1}, "component 's': unknown resource 'gpu'"),
    ({"topology.component.net.slots": -1}, None,
     "resource net must be a non-negative number, got -1"),
])
def test_bad_resources_fail_validation_with_one_line(tmp_path, conf, resources, message):
    proc = _validate(_package(tmp_path, conf, resources))
    assert proc.returncode == 1
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith(PREFIX)]
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_good_resources_pass_validation(tmp_path):
    proc = _validate(_package(tmp_path, {"topology.component.memory.mb": 512},
                              {"cpu": 0.5, "memory_mb": 2048}))
    assert proc.returncode == 0, proc.stderr


def test_a_serializer_registration_that_does_not_import_fails_validation(tmp_path):
    conf = {"topology.serializer.register": {"restopo:Missing": ["restopo:enc", "restopo:dec"]}}
    proc = _validate(_package(tmp_path, conf, None))
    assert proc.returncode == 1
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith(PREFIX)]
    assert len(lines) == 1 and "topology.serializer.register" in lines[0], proc.stderr
    assert "restopo:Missing" in lines[0] and "Traceback" not in proc.stderr
