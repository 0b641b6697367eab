"""ShellHost with real subprocesses: a launched subprocess starts and gets its handshake at
once and is waited for only by the first ``ensure``; ``stop`` ends a start that waits for an
answer instead of waiting it out; a worker's subprocesses are stopped side by side."""
from __future__ import annotations

import logging
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from squall.multilang import process
from squall.multilang.process import ShellHost, ShellProcess, stop_worker
from squall.multilang.protocol import JsonCodec
from squall.testing import wait_until

# answers the handshake once the file named by its first argument exists (the framing is the
# hand-written one of the topology tests' subprocesses)
FRAMING = Path(__file__).resolve().parents[2] / "topology" / "multilang" / "raw_protocol.py"
GATED = FRAMING.read_text() + """
import os, time
handshake = read()
with open(os.path.join(sys.argv[2], "greeted.tmp"), "w") as f:
    f.write(str(os.getpid()))
os.replace(os.path.join(sys.argv[2], "greeted.tmp"), os.path.join(sys.argv[2], "greeted"))
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
open(os.path.join(handshake["pidDir"], str(os.getpid())), "w").close()
send({"pid": os.getpid()})
while True:
    read()
"""


# answers the handshake, then neither reads its stdin nor leaves on SIGTERM: only SIGKILL ends it
STUBBORN = FRAMING.read_text() + """
import os, signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
handshake = read()
open(os.path.join(handshake["pidDir"], str(os.getpid())), "w").close()
send({"pid": os.getpid()})
while True:
    time.sleep(1)
"""


def _host(tmp_path: Path, reports: list[str], script: str = GATED,
          key: tuple[str, Any] | None = None) -> ShellHost:
    path = tmp_path / "script.py"
    path.write_text(script)
    return ShellHost(argv=[sys.executable, str(path), str(tmp_path / "go"), str(tmp_path)],
                     cwd=str(tmp_path), codec=JsonCodec, conf={}, context={}, timeout=60,
                     logger=logging.getLogger("test.shell"), report=reports.append,
                     on_messages=lambda proc, messages: None,
                     on_exit=lambda proc, reason: None, key=key or ("test", id(reports)))


def _waiting_for_an_answer(thread: threading.Thread) -> bool:
    frame = sys._current_frames().get(thread.ident or 0)
    while frame is not None:
        if frame.f_code is ShellProcess.answered.__code__:
            return True
        frame = frame.f_back
    return False


def test_a_launched_subprocess_gets_its_handshake_and_the_first_ensure_waits(
        tmp_path: Path) -> None:
    reports: list[str] = []
    host = _host(tmp_path, reports)
    try:
        host.launch()           # returns while the subprocess waits for "go" to answer
        wait_until(lambda: (tmp_path / "greeted").exists(), 30,
                   message="the launched subprocess never got its handshake")
        got: list[Any] = []
        first = threading.Thread(target=lambda: got.append(host.ensure()), daemon=True)
        first.start()
        wait_until(lambda: _waiting_for_an_answer(first), 30)
        (tmp_path / "go").touch()
        first.join(30)
        assert got and got[0] is not None and got[0].alive
        assert host.ensure() is got[0] and host.starts == 1 and reports == []
    finally:
        host.stop()


def test_stop_ends_a_start_that_waits_for_an_answer(tmp_path: Path) -> None:
    reports: list[str] = []
    host = _host(tmp_path, reports)
    host.launch()
    wait_until(lambda: (tmp_path / "greeted").exists(), 30)
    got: list[Any] = []
    starter = threading.Thread(target=lambda: got.append(host.ensure()), daemon=True)
    starter.start()
    wait_until(lambda: _waiting_for_an_answer(starter), 30)
    stopper = threading.Thread(target=host.stop, daemon=True)
    stopper.start()
    # both end long before the handshake's 60 s, the subprocess killed, nothing reported
    stopper.join(30)
    starter.join(30)
    assert not stopper.is_alive() and not starter.is_alive()
    assert got == [None] and reports == [] and host.stopped
    assert host.ensure() is None
    pid = int((tmp_path / "greeted").read_text())
    wait_until(lambda: not Path(f"/proc/{pid}").exists(), 10,
               message=f"subprocess {pid} outlived its host")


def test_a_workers_subprocesses_stop_side_by_side(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # each takes twice STOP_GRACE to stop (its stdin's end, then SIGTERM, are ignored): one
    # after another, four would take eight graces
    monkeypatch.setattr(process, "STOP_GRACE", 0.5)
    reports: list[str] = []
    hosts = []
    for i in range(4):
        (tmp_path / str(i)).mkdir()
        hosts.append(_host(tmp_path / str(i), reports, STUBBORN, key=("side", 6700)))
    try:
        procs = [host.ensure() for host in hosts]
        assert all(p is not None and p.alive for p in procs)
        started = time.monotonic()
        stop_worker("side", 6700)
        took = time.monotonic() - started
        assert all(host.stopped for host in hosts) and reports == []
        assert not [p.pid for p in procs if p is not None and Path(f"/proc/{p.pid}").exists()]
        assert took < 2.5, f"stopping four took {took:.1f} s"
    finally:
        for host in hosts:
            host.stop()


# says why on stderr, as a failed import does, then exits before the handshake (with a long
# line before the last one when its first argument says so)
DIES_SAYING_WHY = """
import sys
for i in range(20):
    sys.stderr.write("noise line %d\\n" % i)
if sys.argv[1].endswith("long"):
    sys.stderr.write("x" * 5000 + " the long line's end\\n")
sys.stderr.write("ModuleNotFoundError: No module named 'pystorm'\\n")
sys.exit(1)
"""


@pytest.mark.parametrize("long", [False, True])
def test_a_subprocess_that_exits_before_its_handshake_is_reported_with_its_stderr_tail(
        tmp_path: Path, long: bool) -> None:
    reports: list[str] = []
    path = tmp_path / "script.py"
    path.write_text(DIES_SAYING_WHY)
    host = ShellHost(argv=[sys.executable, str(path), "long" if long else "short"],
                     cwd=str(tmp_path), codec=JsonCodec, conf={}, context={}, timeout=60,
                     logger=logging.getLogger("test.shell"), report=reports.append,
                     on_messages=lambda proc, messages: None,
                     on_exit=lambda proc, reason: None, key=("test", id(reports)))
    try:
        assert host.ensure() is None
        assert len(reports) == 1
        report = reports[0]
        assert "exited with code 1; its stderr ended with: " in report
        assert report.endswith(
            "ModuleNotFoundError: No module named 'pystorm'; trying again in 0.5 s")
        assert "noise line 15" not in report            # the last five lines at most
        if long:        # bounded, its end kept
            assert "the long line's end | ModuleNotFoundError" in report
            assert len(report) < process.STDERR_TAIL_CHARS + 200, report
        else:
            assert "noise line 16 | noise line 17 | noise line 18 | noise line 19 | " \
                   "ModuleNotFoundError" in report
    finally:
        host.stop()
