"""The signals that stop squall's foreground processes: SIGTERM and SIGHUP (a closed
terminal), unless SIGHUP is ignored (``nohup``)."""
from __future__ import annotations

import os
import signal
from typing import Any

import pytest

from squall.daemon.stop_signals import on_stop_signals
from squall.testing.waiting import wait_until

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="no SIGHUP here")


@pytest.fixture
def dispositions() -> Any:
    """The test's SIGTERM and SIGHUP handlers, put back after it."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    yield
    for sig, old in saved.items():
        signal.signal(sig, signal.SIG_DFL if old is None else old)


@pytest.mark.parametrize("sig", [signal.SIGTERM, getattr(signal, "SIGHUP", 1)],
                         ids=["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_call_the_handler_and_the_previous_handlers_come_back(
        dispositions: Any, sig: int) -> None:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    got: list[int] = []
    restore = on_stop_signals(lambda signum, frame: got.append(signum))
    os.kill(os.getpid(), sig)
    wait_until(lambda: got == [sig], timeout=5, message=lambda: f"handled {got}")
    restore()
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_DFL


def test_a_process_started_with_nohup_keeps_ignoring_sighup(dispositions: Any) -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    handler = lambda signum, frame: None  # noqa: E731
    restore = on_stop_signals(handler)
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    assert signal.getsignal(signal.SIGTERM) is handler
    restore()
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
