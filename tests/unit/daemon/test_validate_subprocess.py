"""Nimbus's validating child (``check_in_subprocess``) and the processes a topology's code
starts at import: its answer does not wait for them, and none outlives the check."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from squall.daemon.validate import check_in_subprocess
from squall.errors import TopologyError
from squall.testing.waiting import wait_until
from validate_packages import PLAIN_TOPOLOGY, stored_package

TOPO = """
import os, subprocess, sys, time
from pathlib import Path

_out = os.environ.get("SQUALL_TEST_HELPER_DIR")
if _out:                        # in the validating child only, not at prepare_submission
    # a helper started at import (a local gateway, a sidecar), holding stdout and stderr
    _helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    Path(_out, "helper").write_text(str(_helper.pid))
    Path(_out, "validator").write_text(str(os.getpid()))
    if os.environ.get("SQUALL_TEST_HANG"):
        time.sleep(600)
""" + PLAIN_TOPOLOGY


def _gone(pid: int) -> bool:
    """Whether ``pid`` has exited (a zombie no one reaped yet counts as exited)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] == "Z"
    except FileNotFoundError:
        return True
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False


def _pids(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the validating child writes its pid and its helper's (packaged first: the
    helper starts in the child only)."""
    out = tmp_path / "pids"
    out.mkdir()
    monkeypatch.setenv("SQUALL_TEST_HELPER_DIR", str(out))
    return out


def _pid(out: Path, name: str) -> int:
    return int((out / name).read_text())


def test_a_helper_started_at_import_neither_holds_the_answer_nor_outlives_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist = stored_package(tmp_path, TOPO, "helpertopo", topology_id="h-1-1")
    pids = _pids(tmp_path, monkeypatch)
    started = time.monotonic()
    check_in_subprocess(str(dist), timeout=30)          # the helper would live 60 s
    assert time.monotonic() - started < 30
    helper = _pid(pids, "helper")
    wait_until(lambda: _gone(helper), timeout=10, message="the helper outlived the check")


def test_a_load_running_out_of_time_is_one_error_and_leaves_no_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist = stored_package(tmp_path, TOPO, "helpertopo", topology_id="h-1-1")
    pids = _pids(tmp_path, monkeypatch)
    monkeypatch.setenv("SQUALL_TEST_HANG", "1")
    started = time.monotonic()
    with pytest.raises(TopologyError, match=r"^loading the topology took more than 3 s$"):
        check_in_subprocess(str(dist), timeout=3)
    assert time.monotonic() - started < 30
    for name in ("validator", "helper"):
        pid = _pid(pids, name)
        wait_until(lambda pid=pid: _gone(pid), timeout=10, message=f"the {name} outlived it")
