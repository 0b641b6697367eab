"""``./dev demo`` installs once (a stamp keyed on pyproject.toml and the extras), quietly, and
shows pip's log only when the install fails; ``./dev test`` runs the whole suite in parallel and
arguments alone as given. Run against a copy of the script with a stand-in
``.venv/bin/python`` that records what it was asked to do."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

FAKE_PYTHON = """#!/usr/bin/env bash
echo "$*" >> "$(dirname "$0")/../calls"
if [ "$1 $2" = "-m pip" ]; then
    echo "setuptools: some warning nobody needs to read" >&2
    [ -f "$(dirname "$0")/../fail" ] && { echo "ERROR: no matching distribution" >&2; exit 1; }
    printf '#!/usr/bin/env bash\\necho "squall $*"\\n' > "$(dirname "$0")/squall"
    chmod +x "$(dirname "$0")/squall"
fi
"""
#: the commands whose absence ./dev test installs a Debian package for
SYSTEM_COMMANDS = ["java", "redis-server", "node", "chromium", "chromedriver", "ip", "chattr"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "dev", tmp_path / "dev")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    python = bin_dir / "python"
    python.write_text(FAKE_PYTHON)
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    return tmp_path


def dev(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(project / "dev"), *args], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHON": "false", **env})


def pip_calls(project: Path) -> int:
    calls = project / ".venv" / "calls"
    return sum("-m pip install" in line for line in calls.read_text().splitlines()) \
        if calls.exists() else 0


def test_demo_installs_once_and_quietly(project: Path) -> None:
    first = dev(project, "demo", "--duration", "1")
    assert first.returncode == 0, first.stderr
    assert first.stdout == "squall demo --duration 1\n" and first.stderr == ""
    assert pip_calls(project) == 1
    again = dev(project, "demo")
    assert again.returncode == 0 and again.stderr == "" and pip_calls(project) == 1
    # pyproject.toml changed: install again
    with open(project / "pyproject.toml", "a") as f:
        f.write("\n# changed\n")
    assert dev(project, "demo").returncode == 0 and pip_calls(project) == 2


def test_a_failed_install_shows_pip_and_stops(project: Path) -> None:
    (project / ".venv" / "fail").touch()
    done = dev(project, "demo")
    assert done.returncode == 1 and done.stdout == ""
    assert "ERROR: no matching distribution" in done.stderr
    assert "dev: installing squall failed" in done.stderr


def test_test_spreads_the_whole_suite_over_processes_and_passes_arguments_alone(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # every system package present (stand-in commands, ZooKeeper where ZOOKEEPER_HOME says):
    # nothing to install with apt
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for command in SYSTEM_COMMANDS:
        (stubs / command).write_text("#!/bin/sh\n")
        (stubs / command).chmod(0o755)
    for command in ("apt-get", "sudo"):     # the test fails, and installs nothing, if asked
        (stubs / command).write_text("#!/bin/sh\necho \"asked to install: $*\" >&2; exit 1\n")
        (stubs / command).chmod(0o755)
    env = {"PATH": f"{stubs}:{os.environ['PATH']}", "ZOOKEEPER_HOME": str(tmp_path)}
    monkeypatch.delenv("SQUALL_TEST_PROCESSES", raising=False)
    for args in ([], ["tests/unit", "-k", "dev"]):
        done = dev(project, "test", *args, **env)
        assert done.returncode == 0, done.stderr
    runs = [line for line in (project / ".venv" / "calls").read_text().splitlines()
            if line.startswith("-m pytest")]
    assert runs == ["-m pytest -q -n 3 --dist loadfile", "-m pytest -q tests/unit -k dev"]
