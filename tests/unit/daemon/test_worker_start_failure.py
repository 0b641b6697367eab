"""A worker process that cannot start says why before it exits 1: whatever its start raised
(a component's ``sys.exit()`` or KeyboardInterrupt in ``initialize`` too) is reported as a
start failure (``/errors``, component ``__worker``), which nimbus shows as the status reason;
it never leaves the process without a word."""
from __future__ import annotations

import logging
import signal
from pathlib import Path
from typing import Any

import pytest

from squall.daemon import worker_main


@pytest.fixture
def handlers() -> Any:
    """main() installs its SIGTERM and SIGINT handlers: the test's are restored after."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


@pytest.mark.parametrize("raised", [SystemExit(5), KeyboardInterrupt("from initialize"),
                                    RuntimeError("open boom")],
                         ids=lambda e: type(e).__name__)
def test_whatever_the_start_raises_is_reported_and_the_worker_exits_1(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, handlers: Any,
        raised: BaseException) -> None:
    reported: list[BaseException] = []

    def run(self: worker_main.WorkerProcess) -> int:
        raise raised        # as a component's initialize does, in Worker.build

    monkeypatch.setattr(worker_main.WorkerProcess, "run", run)
    monkeypatch.setattr(worker_main.WorkerProcess, "report_start_failure",
                        lambda self, exc: reported.append(exc))
    monkeypatch.setattr(logging, "shutdown", lambda: None)     # the test's log goes on
    rc = worker_main.main(["--topology-id", "t-1-1", "--supervisor-id", "s1", "--port", "6700",
                           "--worker-id", "w1", "--local-dir", str(tmp_path)])
    assert rc == 1
    assert reported == [raised]
