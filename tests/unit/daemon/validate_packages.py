"""Packages stored as nimbus stores them, and ``python -m squall.daemon.validate`` run on one
as nimbus runs it at submit: shared by the tests of what that validation refuses."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from squall.daemon import packaging

#: a spout feeding a bolt, nothing more
PLAIN_TOPOLOGY = """
from squall import Bolt, Spout, TopologyBuilder

class S(Spout):
    outputs = ["x"]

class B(Bolt):
    def process(self, tup):
        pass

b = TopologyBuilder()
b.set_spout("s", S)
b.set_bolt("b", B).shuffle_grouping("s")
topology = b.create_topology()
"""


def stored_package(tmp_path: Path, source: str, module: str,
                   conf: Mapping[str, Any] | None = None, *, topology_id: str = "t-1-1",
                   edit: Callable[[dict[str, Any]], None] | None = None) -> Path:
    """``source`` written as ``proj/<module>.py`` under ``tmp_path``, packaged as ``squall
    submit`` does (its ``topology``) and stored under ``stormdist/<topology_id>`` with
    ``conf``; ``edit`` may change the topology's JSON first (what ``set_resources`` would
    refuse). Returns the package's directory."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / f"{module}.py").write_text(textwrap.dedent(source))
    sub = packaging.prepare_submission(f"{project / module}.py:topology")
    sys.modules.pop(module, None)
    dist = tmp_path / "stormdist" / topology_id
    dist.mkdir(parents=True)
    (dist / packaging.CODE_FILE).write_bytes(packaging.zip_code_dir(sub.code_dir))
    packaging.write_json(dist / packaging.CONF_FILE, dict(conf or {}))
    topology = sub.topology.to_json()
    if edit is not None:
        edit(topology)
    packaging.write_json(dist / packaging.TOPOLOGY_FILE, topology)
    return dist


def validate(dist: Path, *, site: Path | None = None,
             timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run the validation on ``dist`` in a child process, as nimbus does; ``site``, a
    directory put first on its ``PYTHONPATH`` (a library that is, or is not, installed)."""
    env = dict(os.environ)
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "squall.daemon.validate", str(dist)],
                          cwd=str(dist), capture_output=True, text=True, timeout=timeout,
                          env=env)
