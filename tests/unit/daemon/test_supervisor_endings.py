"""A worker its supervisor finds dead, or kills for missing its start deadline or its
heartbeats, is reported (log WARNING, ``/errors`` under ``__worker``, so the status reason
shows a crash loop) and counts towards its slot's backoff; one stopped on purpose or that
exited in order is neither. Real (tiny) processes stand in for workers."""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from squall.daemon import supervisor as sup_module
from squall.daemon import supervisor_local as sl
from squall.daemon.nimbus_info import start_failure_reason
from squall.daemon.supervisor import Supervisor
from squall.daemon.supervisor_backoff import LaunchBackoff
from squall.daemon.supervisor_beats import WorkerBeats
from squall.daemon.supervisor_endings import exit_status, process_stopped
from squall.daemon.worker_main import write_local_heartbeat
from squall.runtime.errors import WORKER_COMPONENT, death_reason
from squall.state.cluster_state import ClusterState
from squall.state.memory import MemoryStateStore
from squall.testing.waiting import wait_until

TID = "crashy-1-1"
PORT = 6700


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Launches:
    """Stands in for ``launch_worker``: each worker runs ``code`` (``python -c``)."""

    def __init__(self) -> None:
        self.code = "import time; time.sleep(60)"
        self.records: list[sl.WorkerRecord] = []

    def __call__(self, local_dir: Path, sup_id: str, tid: str, port: int,
                 execs: list[list[int]], install: Any, rotation: Any) -> sl.WorkerRecord:
        proc = subprocess.Popen([sys.executable, "-c", self.code], start_new_session=True,
                                stdin=subprocess.DEVNULL)
        rec = sl.WorkerRecord(uuid.uuid4().hex, tid, port, execs, proc.pid, time.time(), proc)
        (sl.worker_dir(local_dir, rec.worker_id) / "heartbeats").mkdir(parents=True)
        self.records.append(rec)
        return rec

    def last(self) -> sl.WorkerRecord:
        return self.records[-1]

    def stop_all(self) -> None:
        for rec in self.records:
            rec.proc.kill()
            rec.proc.wait()


@pytest.fixture
def launches(monkeypatch: pytest.MonkeyPatch) -> Any:
    fake = Launches()
    monkeypatch.setattr(sup_module, "launch_worker", fake)
    yield fake
    fake.stop_all()


@pytest.fixture
def supervisor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, launches: Launches) -> Any:
    conf = {"storm.local.dir": str(tmp_path), "supervisor.slots.ports": [PORT],
            "squall.state": "memory", "squall.state.memory.namespace": uuid.uuid4().hex,
            "storm.local.hostname": "h1", "supervisor.worker.timeout.secs": 5,
            "supervisor.worker.start.timeout.secs": 20,
            "supervisor.worker.shutdown.sleep.secs": 2}
    sup = Supervisor(conf)
    store = MemoryStateStore(conf)
    store.start()
    sup.state = ClusterState(store)
    sup.state.setup()
    sup.backoff = LaunchBackoff(Clock())
    sup.worker_beats = WorkerBeats(Clock())
    monkeypatch.setattr(sup, "ensure_code", lambda tid: True)
    monkeypatch.setattr(sup, "code_intact", lambda tid: True)
    monkeypatch.setattr(sup, "resources", {}, raising=False)      # set by start()
    assign(sup, "[1, 1]")
    yield sup
    store.close()


def assign(sup: Supervisor, executors: str) -> None:
    sup.state.set_assignment(TID, {"node_host": {sup.id: "h1"},
                                   "executor_node_port": {executors: [sup.id, PORT]}})


def beat(sup: Supervisor, rec: sl.WorkerRecord, age: float = 0.0) -> None:
    """A local heartbeat of ``rec`` written now, dated ``age`` s ago (its loop stuck)."""
    hb_dir = sl.worker_dir(sup.local_dir, rec.worker_id) / "heartbeats"
    write_local_heartbeat(hb_dir, {"time_secs": time.time() - age})


def later(sup: Supervisor, secs: float) -> None:
    """``secs`` pass on the clock the supervisor judges its workers' heartbeats on."""
    clock = sup.worker_beats.clock
    assert isinstance(clock, Clock)
    clock.now += secs


def exited(rec: sl.WorkerRecord) -> None:
    rec.proc.wait(30)


def worker_errors(sup: Supervisor) -> list[dict[str, Any]]:
    return sup.state.errors(TID).get(WORKER_COMPONENT, [])


def test_an_exit_status_is_said_with_its_code_or_signal() -> None:
    assert exit_status(3) == "exited with code 3"
    assert exit_status(-11) == "was killed by SIGSEGV"
    assert exit_status(-9) == ("was killed by SIGKILL (from the OOM killer when memory runs "
                               "out, or an operator)")
    assert exit_status(None).startswith("died (its exit status is unknown")


def test_a_worker_dying_soon_after_its_first_beat_is_reported_and_backs_off(
        supervisor: Supervisor, launches: Launches, caplog: pytest.LogCaptureFixture) -> None:
    # os._exit(3) on the 4th tuple (a C extension's crash): relaunched about once a second
    # for ever, nothing in /errors, the status reason empty, only "process died" at INFO
    launches.code = "import os; os._exit(3)"
    caplog.set_level(logging.INFO, logger="squall.daemon.supervisor")
    supervisor.sync()
    for _ in range(2):
        beat(supervisor, launches.last())
        exited(launches.last())
        supervisor.sync()
    assert len(launches.records) == 2                  # the second death waits a second
    assert not supervisor.backoff.ready(PORT) and supervisor.backoff.count(PORT) == 2
    first, second = worker_errors(supervisor)
    assert first["error"] == "worker on port 6700 exited with code 3"
    assert second["error"] == ("worker on port 6700 exited with code 3 (2 times in a row, each "
                               "within 60 s of its launch)")
    assert second["fatal"] and not second.get("start_failure")
    assert (second["node"], second["port"], second["host"]) == (supervisor.id, PORT, "h1")
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(m.endswith(f"({TID} port 6700) exited with code 3") for m in warned), warned
    assert any(f"the workers of {TID} on port 6700 failed 2 times in a row (each within 60 s "
               "of its launch; see its log and /errors); next launch in 1 s" in m
               for m in warned), warned
    reason = death_reason(supervisor.state.errors(TID), time.time())
    assert reason.endswith("exited with code 3 (2 times in a row, each within 60 s of its "
                           "launch)"), reason


def test_a_worker_that_said_why_it_ended_is_not_reported_again(
        supervisor: Supervisor, launches: Launches) -> None:
    launches.code = "import sys; sys.exit(1)"
    supervisor.sync()
    rec = launches.last()
    exited(rec)
    own = {"component": "split", "task": 1, "error": "worker stopped: ...", "fatal": True,
           "time_secs": int(time.time()), "host": "h1", "port": PORT}
    supervisor.state.report_error(TID, "split", own)
    supervisor.sync()
    assert worker_errors(supervisor) == []
    assert supervisor.backoff.count(PORT) == 1


def test_workers_stopped_on_purpose_or_exiting_in_order_are_not_failures(
        supervisor: Supervisor, launches: Launches, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="squall.daemon.supervisor")
    supervisor.sync()
    beat(supervisor, launches.last())
    assign(supervisor, "[1, 2]")                       # rebalanced: it stops on purpose
    supervisor.sync()
    launches.code = "pass"                             # exits in order (code 0)
    assign(supervisor, "[1, 3]")
    supervisor.sync()
    beat(supervisor, launches.last())
    exited(launches.last())
    supervisor.sync()
    assert worker_errors(supervisor) == []
    assert supervisor.backoff.count(PORT) == 0
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_worker_past_its_start_deadline_is_a_start_failure_counted_through_unassignment(
        supervisor: Supervisor, launches: Launches) -> None:
    # initialize sleeping past supervisor.worker.start.timeout.secs: restarted for ever and
    # nobody told; nimbus moving the executors in between reset the backoff
    supervisor.sync()
    later(supervisor, 30)
    supervisor.sync()                                  # killed and relaunched at once
    (entry,) = worker_errors(supervisor)
    assert entry["start_failure"] and entry["port"] == PORT and entry["node"] == supervisor.id
    assert entry["error"].startswith(
        "worker on port 6700 was restarted: no heartbeat within 20 s of its launch "
        "(supervisor.worker.start.timeout.secs); a component's initialize may be too slow"
        ), entry["error"]
    reason = start_failure_reason(supervisor.state.errors(TID), {}, time.time(),
                                  {(supervisor.id, PORT)})
    assert "20 s of its launch (supervisor.worker.start.timeout.secs)" in reason, reason
    assert len(launches.records) == 2
    assign(supervisor, "[1, 2]")                       # nimbus moved its executors
    supervisor.sync()                                  # the second one never beat either
    assert supervisor.backoff.count(PORT) == 1
    assert len(launches.records) == 3
    later(supervisor, 30)
    supervisor.sync()
    assert supervisor.backoff.count(PORT) == 2 and not supervisor.backoff.ready(PORT)
    assert worker_errors(supervisor)[-1]["error"].endswith("(2 times in a row, each within "
                                                           "60 s of its launch)")


def test_a_worker_that_stopped_beating_is_reported_naming_the_timeout(
        supervisor: Supervisor, launches: Launches) -> None:
    supervisor.sync()
    beat(supervisor, launches.last())
    supervisor.sync()
    later(supervisor, 30)                              # no beat at all since
    supervisor.sync()
    beat(supervisor, launches.last(), age=30)          # beats dated when its pass began
    supervisor.sync()
    gil, stuck = worker_errors(supervisor)
    prefix = ("worker on port 6700 was restarted: no heartbeat for 5 s "
              "(supervisor.worker.timeout.secs); ")
    assert gil["error"].startswith(prefix + "it wrote no heartbeat at all: a component may "
                                   "hold the GIL in one long C call"), gil["error"]
    assert gil["fatal"] and not gil.get("start_failure")
    assert stuck["error"].startswith(prefix + "its loop was stuck in one pass"), stuck["error"]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_a_worker_whose_process_was_stopped_is_reported_as_stopped(
        supervisor: Supervisor, launches: Launches) -> None:
    # SIGSTOP, a debugger or a frozen cgroup: not the GIL nor an overloaded machine
    supervisor.sync()
    rec = launches.last()
    beat(supervisor, rec)
    supervisor.sync()
    later(supervisor, 30)
    os.kill(rec.pid, signal.SIGSTOP)
    try:
        wait_until(lambda: process_stopped(rec.pid), 10, message="the worker stopped")
        supervisor.sync()
    finally:
        if rec.proc.poll() is None:
            os.kill(rec.pid, signal.SIGCONT)
    (entry,) = worker_errors(supervisor)
    assert entry["error"].startswith(
        "worker on port 6700 was restarted: no heartbeat for 5 s (supervisor.worker.timeout."
        "secs); its process was stopped (SIGSTOP, a debugger, a frozen cgroup)"), entry["error"]
    assert "GIL" not in entry["error"] and entry["fatal"]
    assert not process_stopped(launches.last().pid)     # its successor runs
