"""Submit-time state provider check: a stateful topology whose conf chooses a provider that
cannot be loaded (``redis`` without ``squall[redis]``) fails ``python -m
squall.daemon.validate`` (what nimbus runs on submit) with one line naming the extra, as a
transport whose extra is missing does, instead of showing ``active`` while its workers fail
to start."""
from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from squall.daemon.validate import PREFIX
from validate_packages import PLAIN_TOPOLOGY, stored_package, validate

STATEFUL = """
from squall import Spout, StatefulBolt, TopologyBuilder

class S(Spout):
    outputs = ["x"]

class Count(StatefulBolt):
    def process(self, tup):
        pass

b = TopologyBuilder()
b.set_spout("s", S)
b.set_bolt("count", Count).shuffle_grouping("s")
topology = b.create_topology()
"""

STATELESS = PLAIN_TOPOLOGY


def _validate_without_redis(dist: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Validate as an install without the redis library would (its import fails)."""
    site = tmp_path / "no-redis"
    (site / "redis").mkdir(parents=True)
    (site / "redis" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'redis'\", name='redis')\n")
    return validate(dist, site=site)


def test_a_stateful_topology_on_a_provider_whose_extra_is_missing_is_refused(
        tmp_path: Path) -> None:
    proc = _validate_without_redis(
        stored_package(tmp_path, STATEFUL, "statetopo", {"topology.state.provider": "redis"}),
        tmp_path)
    assert proc.returncode == 1, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith(PREFIX)]
    assert lines == [
        f"{PREFIX}squall.state_providers 'redis' could not be loaded: No module named 'redis'; "
        "install it with: pip install 'squall[redis]'"], proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(("source", "conf"), [
    (STATEFUL, {}),                                          # the supervisors' provider
    (STATEFUL, {"topology.state.provider": "memory"}),
    (STATELESS, {"topology.state.provider": "redis"}),       # never loaded by its workers
])
def test_a_provider_the_workers_can_load_or_never_load_passes(
        tmp_path: Path, source: str, conf: dict[str, Any]) -> None:
    proc = _validate_without_redis(stored_package(tmp_path, source, "statetopo", conf),
                                  tmp_path)
    assert proc.returncode == 0, proc.stderr
