"""A worker's ZooKeeper beat and its error reports: neither a beat the store refuses nor one
error it cannot store loses the other errors (a worker of ~1,000 executors, or a component id
that is no valid node name, lost every error of the worker)."""
from __future__ import annotations

import logging
import random
from pathlib import Path
from typing import Any

import pytest

from squall.daemon.worker_main import WorkerProcess, parse_args
from squall.state.cluster_state import ClusterState
from squall.state.memory import MemoryServer, MemoryStateStore


class FakeWorker:
    """The parts of a Worker heartbeat_zk uses."""

    host = "127.0.0.1"

    def __init__(self, stats: dict[str, Any]) -> None:
        self._stats = stats
        self.errors: list[dict[str, Any]] = []

    def stats(self) -> dict[str, Any]:
        return self._stats

    def spout_pending(self) -> dict[str, int]:
        return {}

    def drain_errors(self) -> list[dict[str, Any]]:
        out, self.errors = self.errors, []
        return out


@pytest.fixture
def state():
    store = MemoryStateStore({}, server=MemoryServer())
    store.start()
    cs = ClusterState(store)
    cs.setup()
    yield cs
    store.close()


def _process(tmp_path: Path, state: ClusterState, stats: dict[str, Any]) -> WorkerProcess:
    proc = WorkerProcess(parse_args(["--topology-id", "t-1-1", "--supervisor-id", "s1",
                                     "--port", "6700", "--worker-id", "w1",
                                     "--local-dir", str(tmp_path)]))
    proc.conf = {}
    proc.state = state
    proc.worker = FakeWorker(stats)
    return proc


def _error(component: str) -> dict[str, Any]:
    return {"component": component, "task": 1, "error": f"boom in {component}",
            "time_secs": 1}


def test_errors_are_written_when_the_beat_is_refused(
        tmp_path: Path, state: ClusterState, caplog: pytest.LogCaptureFixture) -> None:
    noise = random.Random(0).randbytes(1_200_000).hex()    # too large even compressed
    proc = _process(tmp_path, state, {"executors": {"[1, 1]": {"noise": noise}}})
    proc.worker.errors = [_error("wide")]
    with caplog.at_level(logging.WARNING, logger="squall"):
        proc.heartbeat_zk()
        proc.worker.errors = [_error("wide")]
        proc.heartbeat_zk()
    assert [e["error"] for e in state.errors("t-1-1")["wide"]] == ["boom in wide"] * 2
    assert state.worker_beats("t-1-1") == {}
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(lines) == 1, lines     # the same reason is not repeated every beat
    assert "beat was not written" in lines[0] and "1 executors" in lines[0]


def test_one_error_the_store_refuses_does_not_lose_the_others(
        tmp_path: Path, state: ClusterState, caplog: pytest.LogCaptureFixture) -> None:
    proc = _process(tmp_path, state, {"executors": {}})
    # a component id no node can be named after (the builder refuses these now)
    proc.worker.errors = [_error("a/b"), _error("ok"), _error("c" * 400)]
    with caplog.at_level(logging.WARNING, logger="squall"):
        proc.heartbeat_zk()
    assert sorted(state.errors("t-1-1")) == ["c" * 400, "ok"]
    assert list(state.worker_beats("t-1-1")) == ["s1-6700"]
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(lines) == 1 and "'a/b'" in lines[0], lines
