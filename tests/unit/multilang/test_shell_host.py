"""ShellHost with real subprocesses: a launched subprocess starts and gets its handshake at
once and is waited for only by the first ``ensure``; ``stop`` ends a start that waits for an
answer instead of waiting it out; a worker's subprocesses are stopped side by side, within
its supervisor's shutdown grace; in a worker they are registered in its pids dir, which its
supervisor reads; a process that dies takes its subprocesses with it."""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from squall.daemon.supervisor_local import (
    WorkerRecord, kill_worker, registered_process, worker_dir,
)
from squall.multilang import process
from squall.multilang.process import ShellHost, ShellProcess, stop_grace, stop_worker
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
          key: tuple[str, Any] | None = None, grace: float | None = None) -> ShellHost:
    path = tmp_path / "script.py"
    path.write_text(script)
    return ShellHost(argv=[sys.executable, str(path), str(tmp_path / "go"), str(tmp_path)],
                     cwd=str(tmp_path), codec=JsonCodec, conf={}, context={}, timeout=60,
                     logger=logging.getLogger("test.shell"), report=reports.append,
                     on_messages=lambda proc, messages: None,
                     on_exit=lambda proc, reason: None, key=key or ("test", id(reports)),
                     grace=grace)


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


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


# dies as node does on a missing dependency: the error first, then its stack and version
DIES_AS_NODE_DOES = """
import sys
sys.stderr.write('''node:internal/modules/cjs/loader:1228
  throw err;
  ^

Error: Cannot find module 'shout'
Require stack:
- /code/shout_bolt.js
    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)
    at Module._load (node:internal/modules/cjs/loader:1051:27)
    at node:internal/main/run_main_module:28:49 {
  code: 'MODULE_NOT_FOUND',
  requireStack: [ '/code/shout_bolt.js' ]
}

Node.js v20.20.2
''')
sys.exit(1)
"""


def test_an_exit_report_quotes_the_first_error_line_the_tail_lacks(tmp_path: Path) -> None:
    reports: list[str] = []
    path = tmp_path / "script.py"
    path.write_text(DIES_AS_NODE_DOES)
    host = ShellHost(argv=[sys.executable, str(path)], cwd=str(tmp_path), codec=JsonCodec,
                     conf={}, context={}, timeout=60, logger=logging.getLogger("test.shell"),
                     report=reports.append, on_messages=lambda proc, messages: None,
                     on_exit=lambda proc, reason: None, key=("test", id(reports)))
    try:
        assert host.ensure() is None
        assert len(reports) == 1
        assert "exited with code 1; its first error on stderr: Error: Cannot find module " \
               "'shout'; its stderr ended with: " in reports[0]
        assert "Node.js v20.20.2" in reports[0] and "\n" not in reports[0]
    finally:
        host.stop()


# writes its first argument's megabytes of stderr (lines, or one line without its end, a
# progress bar's), says why it stops, then answers its handshake and stays
FLOODS_STDERR = FRAMING.read_text() + """
import os
mb, shape = int(sys.argv[1]), sys.argv[2]
chunk = ("a debug line of about a hundred bytes " * 3 + "\\n") * 4096 if shape == "lines" \\
    else "progress 12%\\r" * 100000
for _ in range(mb * (1 << 20) // len(chunk)):
    sys.stderr.write(chunk)
sys.stderr.write("the line's end\\nValueError: the last line\\n")
sys.stderr.flush()
handshake = read()
send({"pid": os.getpid()})
while True:
    read()
"""


def _flooding(tmp_path: Path, reports: list[str], logger: logging.Logger, mb: int, shape: str,
              timeout: float) -> ShellHost:
    path = tmp_path / "script.py"
    path.write_text(FLOODS_STDERR)
    return ShellHost(argv=[sys.executable, str(path), str(mb), shape], cwd=str(tmp_path),
                     codec=JsonCodec, conf={}, context={}, timeout=timeout, logger=logger,
                     report=reports.append, on_messages=lambda proc, messages: None,
                     on_exit=lambda proc, reason: None, key=("test", id(reports)))


def test_a_subprocess_writing_much_to_stderr_is_not_held_up_by_its_reading(
        tmp_path: Path) -> None:
    """Its stderr is read in chunks, not a byte per system call: 24 MB of stderr lines before
    its handshake's answer (a debug dump) take well under the handshake's time, where a
    subprocess blocked on a full stderr pipe would miss it and be killed."""
    reports: list[str] = []
    logger = logging.getLogger("test.shell.flood")
    logger.setLevel(logging.WARNING)
    host = _flooding(tmp_path, reports, logger, 24, "lines", timeout=6)
    try:
        started = time.monotonic()
        proc = host.ensure()
        assert reports == [] and proc is not None and proc.alive
        assert time.monotonic() - started < 6
    finally:
        host.stop()


def test_a_stderr_line_without_end_is_logged_cut(tmp_path: Path,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    """A line of many megabytes (a progress bar redrawn after a carriage return) is logged as
    its first 64 KB and its end, saying how much was cut between; the lines after it as they
    are."""
    reports: list[str] = []
    logger = logging.getLogger("test.shell.cut")
    caplog.set_level(logging.INFO, logger="test.shell.cut")
    host = _flooding(tmp_path, reports, logger, 6, "line", timeout=60)
    try:
        assert host.ensure() is not None and reports == []
        wait_until(lambda: any(r.getMessage() == "ValueError: the last line"
                               for r in caplog.records), timeout=10)
        got = [r.getMessage() for r in caplog.records if r.name == "test.shell.cut"]
        assert len(got) == 2 and got[1] == "ValueError: the last line"
        assert got[0].startswith("progress 12%\rprogress 12%")
        assert got[0].endswith("progress 12%\rthe line's end")
        assert len(got[0]) < process.STDERR_LINE_MAX + process.STDERR_TAIL_CHARS + 100
        chunk = len("progress 12%\r") * 100000
        line = 6 * (1 << 20) // chunk * chunk + len("the line's end")
        cut = line - process.STDERR_LINE_MAX - process.STDERR_TAIL_CHARS
        assert f" ... ({cut} bytes cut) ... " in got[0]
    finally:
        host.stop()


def test_stderr_lines_split_across_reads_and_undecodable_bytes() -> None:
    lines = process.StderrLines()
    assert lines.feed(b"one\ntw") == ["one"]
    assert lines.feed(b"o\n\xff\xfethree") == ["two"]
    assert lines.end() == ["\\xff\\xfethree"]
    assert lines.end() == []


def test_a_subprocess_stops_within_its_workers_shutdown_grace(tmp_path: Path) -> None:
    # the stop's two waits (stdin's end, SIGTERM) take half of the time the supervisor gives
    # a worker between SIGTERM and SIGKILL, not 2 s each (4 s of a default 3)
    grace = stop_grace({"supervisor.worker.shutdown.sleep.secs": 1})
    assert grace == 0.25 and stop_grace({}) == process.STOP_GRACE
    reports: list[str] = []
    host = _host(tmp_path, reports, STUBBORN, grace=grace)
    proc = host.ensure()
    assert proc is not None and proc.alive
    started = time.monotonic()
    host.stop()
    took = time.monotonic() - started
    assert not _running(proc.pid) and reports == []
    assert took < 1.0, f"stopping took {took:.1f} s"


def test_in_a_worker_subprocesses_are_registered_in_its_pids_dir_and_its_supervisor_stops_them(
        tmp_path: Path) -> None:
    # as Storm's: the handshake's pidDir is the worker's pids dir, where each subprocess is
    # registered from its start (before it answers), so the supervisor's stop of a worker that
    # died (kill -9) stops it too
    pids = worker_dir(tmp_path / "local", "w1") / "pids"
    pids.mkdir(parents=True)
    process.use_pid_dir(pids)
    try:
        reports: list[str] = []
        host = _host(tmp_path, reports)
    finally:
        process.use_pid_dir(None)
    try:
        assert host.pid_dir == str(pids)
        host.launch()               # it never answers: no "go"
        wait_until(lambda: (tmp_path / "greeted").exists(), 30)
        pid = int((tmp_path / "greeted").read_text())
        assert registered_process(pids, pid)
        dead_worker = WorkerRecord("w1", "t-1-1", 6700, [[1, 1]], 0, time.time())
        kill_worker(tmp_path / "local", dead_worker, grace=5)
        wait_until(lambda: not _running(pid), 10, message=f"subprocess {pid} survived")
    finally:
        host.stop()


def test_a_host_of_its_own_removes_its_pid_dir_and_a_worker_keeps_its_own(tmp_path: Path) -> None:
    reports: list[str] = []
    (tmp_path / "go").touch()
    own = _host(tmp_path, reports)
    proc = own.ensure()
    assert proc is not None and (Path(own.pid_dir) / str(proc.pid)).exists()
    own.stop()
    assert not Path(own.pid_dir).exists()
    pids = tmp_path / "pids"
    pids.mkdir()
    process.use_pid_dir(pids)
    try:
        host = _host(tmp_path, reports)
    finally:
        process.use_pid_dir(None)
    proc = host.ensure()
    assert proc is not None and (pids / str(proc.pid)).exists()
    host.stop()
    # the worker's dir stays; the reaped subprocess's registration goes
    wait_until(lambda: not (pids / str(proc.pid)).exists(), 10)
    assert pids.is_dir()


# starts a subprocess from a thread that ends before it prints the subprocess's pid (the
# death signal of a subprocess forked by that thread would have come with its end), then waits
PARENT = """
import logging, os, sys, threading, time
from squall.multilang.process import ShellHost
from squall.multilang.protocol import JsonCodec
script, here = sys.argv[1], sys.argv[2]
host = ShellHost(argv=[sys.executable, script, "unused", here], cwd=here, codec=JsonCodec,
                 conf={}, context={}, timeout=60, logger=logging.getLogger("parent"),
                 report=print, on_messages=lambda p, m: None, on_exit=lambda p, r: None,
                 key=("parent", 1))
tids = []
starter = threading.Thread(target=lambda: (tids.append(threading.get_native_id()),
                                           host.ensure()))
starter.start()
starter.join()
while os.path.exists(f"/proc/self/task/{tids[0]}"):
    time.sleep(0.01)
print(host.current.pid, flush=True)
sys.stdin.read()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_process_killed_with_kill_9_takes_its_subprocesses_with_it(tmp_path: Path) -> None:
    (tmp_path / "parent.py").write_text(PARENT)
    (tmp_path / "script.py").write_text(STUBBORN)
    parent = subprocess.Popen([sys.executable, str(tmp_path / "parent.py"),
                               str(tmp_path / "script.py"), str(tmp_path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    pid = 0
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        assert _running(pid)    # the end of the thread that started it did not end it
        parent.kill()
        parent.wait(10)
        wait_until(lambda: not _running(pid), 10, message=f"subprocess {pid} outlived it")
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if pid and _running(pid):
            os.kill(pid, signal.SIGKILL)
