"""A worker whose /metrics endpoint cannot listen runs on without it, with one error line
(a port past 65535 from ``worker.metrics.port.offset`` crashed every worker)."""
from __future__ import annotations

import logging
from pathlib import Path

import pytest

from squall.daemon.worker_main import WorkerProcess, parse_args


def _worker(tmp_path: Path, offset: int) -> WorkerProcess:
    worker = WorkerProcess(parse_args(["--topology-id", "t-1-1", "--supervisor-id", "s1",
                                       "--port", "6700", "--worker-id", "w1",
                                       "--local-dir", str(tmp_path)]))
    worker.conf = {"worker.metrics.endpoint": True, "worker.metrics.port.offset": offset}
    return worker


def test_an_endpoint_port_past_65535_is_one_error_line(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    worker = _worker(tmp_path, 70000)
    with caplog.at_level(logging.ERROR, logger="squall"):
        worker._start_metrics_endpoint("127.0.0.1")
    assert worker.metrics_endpoint is None
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert errors[0].startswith("worker t-1-1:6700: the /metrics endpoint cannot listen on "
                                "127.0.0.1:76700: ")
