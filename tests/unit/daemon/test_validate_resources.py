"""Submit-time resource checks: a package whose component resources (written by hand, past
``set_resources``) or ``topology.component.*`` defaults no scheduler could use fails
``python -m squall.daemon.validate`` (what nimbus runs on submit) with one line."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from squall.daemon.validate import PREFIX
from validate_packages import stored_package, validate

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
    def written(topology: dict[str, Any]) -> None:      # as by hand, past set_resources
        for comp in topology["components"]:
            if comp["id"] == "s" and resources is not None:
                comp["resources"] = resources
    return stored_package(tmp_path, TOPO, "restopo", conf, edit=written)


@pytest.mark.parametrize("conf, resources, message", [
    ({}, {"cpu": True}, "component 's': resource cpu must be a non-negative number, got True"),
    ({}, {"memory_mb": -5}, "component 's': resource memory_mb must be a non-negative number"),
    ({}, {"gpu": 1}, "component 's': unknown resource 'gpu'"),
    ({"topology.component.net.slots": -1}, None,
     "resource net must be a non-negative number, got -1"),
])
def test_bad_resources_fail_validation_with_one_line(tmp_path, conf, resources, message):
    proc = validate(_package(tmp_path, conf, resources))
    assert proc.returncode == 1
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith(PREFIX)]
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_good_resources_pass_validation(tmp_path):
    proc = validate(_package(tmp_path, {"topology.component.memory.mb": 512},
                              {"cpu": 0.5, "memory_mb": 2048}))
    assert proc.returncode == 0, proc.stderr


def test_a_serializer_registration_that_does_not_import_fails_validation(tmp_path):
    conf = {"topology.serializer.register": {"restopo:Missing": ["restopo:enc", "restopo:dec"]}}
    proc = validate(_package(tmp_path, conf, None))
    assert proc.returncode == 1
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith(PREFIX)]
    assert len(lines) == 1 and "topology.serializer.register" in lines[0], proc.stderr
    assert "restopo:Missing" in lines[0] and "Traceback" not in proc.stderr
