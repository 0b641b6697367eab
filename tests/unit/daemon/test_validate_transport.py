"""Submit-time transport check: a package whose conf chooses a transport that works inside one
process only (the local one, or a third party's with ``in_process = True``) fails
``python -m squall.daemon.validate`` (what nimbus runs on submit) with one line, instead of
showing ``active`` on a cluster and processing nothing."""
from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from squall.daemon.validate import PREFIX
from validate_packages import PLAIN_TOPOLOGY, stored_package, validate

TOPO = PLAIN_TOPOLOGY

#: a third party's transport that, like squall's local one, never leaves its process
IN_PROCESS = """
from squall.transports.local import LocalTransport

class SameProcessTransport(LocalTransport):
    name = "sameprocess"
"""


def _install(site: Path, module: str, source: str, transport: str) -> Path:
    """A distribution registering ``transport`` in ``squall.transports``, as pip leaves it,
    for the validating process only (it reaches ``PYTHONPATH``)."""
    info = site / "squall_sameprocess-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: squall-sameprocess\n"
                                   "Version: 0.1\n")
    (info / "entry_points.txt").write_text(f"[squall.transports]\n{transport}\n")
    (site / f"{module}.py").write_text(source)
    return site


def _one_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith(PREFIX)]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


def test_the_local_transport_is_refused_for_a_cluster(tmp_path: Path) -> None:
    dist = stored_package(tmp_path, TOPO, "transtopo", {"squall.transport": "local"})
    line = _one_line(validate(dist))
    assert "squall.transport 'local' only connects workers inside one process" in line
    assert "'zmq' is the default" in line and "LocalCluster" in line


def test_a_third_party_in_process_transport_is_refused_the_same_way(tmp_path: Path) -> None:
    site = _install(tmp_path / "site", "squall_sameprocess", IN_PROCESS,
                    "sameprocess = squall_sameprocess:SameProcessTransport")
    dist = stored_package(tmp_path, TOPO, "transtopo", {"squall.transport": "sameprocess"})
    proc = validate(dist, site=site)
    assert "squall.transport 'sameprocess' only connects workers inside one process" in \
        _one_line(proc)


@pytest.mark.parametrize("conf", [{}, {"squall.transport": "zmq"}])
def test_a_transport_between_processes_or_none_chosen_passes(tmp_path: Path,
                                                             conf: dict[str, Any]) -> None:
    pytest.importorskip("zmq")
    proc = validate(stored_package(tmp_path, TOPO, "transtopo", conf))
    assert proc.returncode == 0, proc.stderr
