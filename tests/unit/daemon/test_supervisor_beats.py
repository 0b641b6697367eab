"""A supervisor judges its workers' local heartbeats on its own monotonic clock: a step of the
host's clock (NTP) neither restarts the workers that beat nor spares one that hangs, and a
worker of the previous release (beat files named by the time, ms) is judged the same way."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from squall.daemon import supervisor_local as sl
from squall.daemon.supervisor import Supervisor
from squall.daemon.supervisor_beats import WorkerBeats
from squall.daemon.worker_main import KEEP_HEARTBEATS, write_local_heartbeat
from squall.state.cluster_state import ClusterState
from squall.state.memory import MemoryStateStore

WANTED = ("t-1-1", [[1, 1]])
NO_BEAT = "no heartbeat for 5 s"


class Clock:
    """Stands in for ``time.monotonic`` (the supervisor's) or ``time.time`` (the host's)."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def wall(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """The host's clock (``time.time``), which an NTP step moves for every process on it."""
    clock = Clock(time.time())
    monkeypatch.setattr(time, "time", clock)
    return clock


@pytest.fixture
def process() -> Iterator[subprocess.Popen[bytes]]:
    """A live process standing in for a worker."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                            start_new_session=True)
    yield proc
    proc.kill()
    proc.wait()


def supervisor(local_dir: Path) -> Supervisor:
    """A supervisor on ``local_dir`` (a second one on the same dir: the first restarted),
    judging heartbeats on a :class:`Clock` of its own."""
    conf = {"storm.local.dir": str(local_dir), "supervisor.slots.ports": [6700],
            "squall.state": "memory", "squall.state.memory.namespace": uuid.uuid4().hex,
            "supervisor.worker.timeout.secs": 5, "supervisor.worker.start.timeout.secs": 20}
    sup = Supervisor(conf)
    store = MemoryStateStore(conf)
    store.start()
    sup.state = ClusterState(store)
    sup.worker_beats = WorkerBeats(Clock(1000.0))
    return sup


def later(sup: Supervisor, secs: float) -> None:
    clock = sup.worker_beats.clock
    assert isinstance(clock, Clock)
    clock.now += secs


def record(sup: Supervisor, proc: subprocess.Popen[bytes]) -> sl.WorkerRecord:
    rec = sl.WorkerRecord("w1", "t-1-1", 6700, [[1, 1]], proc.pid, time.time(), proc)
    (sl.worker_dir(sup.local_dir, "w1") / "heartbeats").mkdir(parents=True, exist_ok=True)
    sl.register_pid(sl.worker_dir(sup.local_dir, "w1") / "pids", proc.pid)   # for adoption
    sup.workers["w1"] = rec
    sup.worker_beats.launched("w1")
    return rec


def hb_dir(sup: Supervisor) -> Path:
    return sl.worker_dir(sup.local_dir, "w1") / "heartbeats"


def beat(sup: Supervisor, **fields: Any) -> None:
    """A beat of the worker ``w1``, as this release's worker writes it."""
    write_local_heartbeat(hb_dir(sup), {"time_secs": time.time(), **fields})


def old_release_beat(sup: Supervisor, at: float | None = None) -> None:
    """A beat as a worker of the previous release writes it: named by ``time.time()`` in ms,
    the newest few names kept; dated ``at`` (its loop stuck since) or now."""
    directory = hb_dir(sup)
    name = f"{int(time.time() * 1000)}"
    tmp = directory / f".{name}.tmp"
    tmp.write_text(json.dumps({"time_secs": time.time() if at is None else at}))
    os.replace(tmp, directory / name)
    beats = sorted((p for p in directory.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    for old in beats[:-KEEP_HEARTBEATS]:
        old.unlink(missing_ok=True)
    # the kernel dates the directory's change by the host's clock, a beat later each time
    # (this test writes its beats faster than some kernels' timestamps tick)
    stamp = int(time.time() * 1e9)
    os.utime(directory, ns=(stamp, stamp))


def test_the_newest_beat_is_found_after_the_clock_steps_back(tmp_path, wall):
    directory = sl.worker_dir(tmp_path, "w1") / "heartbeats"
    for n in range(12):
        write_local_heartbeat(directory, {"time_secs": time.time(), "n": n})
        wall.now += 1
        if n == 5:
            wall.now -= 600                          # an NTP step back, 10 min
    kept = [json.loads(p.read_text())["n"] for p in directory.iterdir() if p.name.isdigit()]
    assert sorted(kept) == [7, 8, 9, 10, 11]         # the newest few, whatever their time
    assert sl.latest_heartbeat(tmp_path, "w1")["n"] == 11


def test_workers_beating_through_steps_of_the_clock_are_not_restarted(tmp_path, wall, process):
    sup = supervisor(tmp_path)
    record(sup, process)
    rec = sup.workers["w1"]
    for second in range(20):
        beat(sup)
        assert sup.worker_problem(rec, WANTED) == "", second
        if second in (5, 12):
            wall.now += 120 if second == 5 else -600  # NTP steps, between two beats
            assert sup.worker_problem(rec, WANTED) == "", second
        wall.now += 1
        later(sup, 1)


def test_a_hung_worker_is_restarted_on_time_after_the_clock_stepped_back(tmp_path, wall,
                                                                         process):
    sup = supervisor(tmp_path)
    rec = record(sup, process)
    for _ in range(8):
        beat(sup)
        assert sup.worker_problem(rec, WANTED) == ""
        later(sup, 1)
        wall.now += 1
    wall.now -= 600                                  # its beats are now dated ahead
    for _ in range(3):                               # it beats on, then hangs
        beat(sup)
        assert sup.worker_problem(rec, WANTED) == ""
        later(sup, 1)
        wall.now += 1
    later(sup, 4)
    assert sup.worker_problem(rec, WANTED) == ""
    later(sup, 1.5)                                  # no beat for 5 s on the supervisor's clock
    assert sup.worker_problem(rec, WANTED) == NO_BEAT


def test_a_beat_dated_long_before_it_was_written_is_a_stuck_loop(tmp_path, wall, process):
    # the worker's loop has been in one pass since then: restarted at once, whatever the
    # host's clock did meanwhile (both times are the worker's)
    sup = supervisor(tmp_path)
    rec = record(sup, process)
    beat(sup)
    assert sup.worker_problem(rec, WANTED) == ""
    wall.now += 3600
    beat(sup, time_secs=time.time() - 6)
    assert sup.worker_problem(rec, WANTED) == NO_BEAT


def test_beats_of_a_worker_of_the_previous_release_are_judged_the_same(tmp_path, wall,
                                                                        process):
    sup = supervisor(tmp_path)
    rec = record(sup, process)
    old_release_beat(sup, at=time.time() - 6)        # its loop stuck for 6 s
    assert sup.worker_problem(rec, WANTED) == NO_BEAT
    wall.now += 1
    for step in (0, 120, -600, 0):                   # beating through NTP steps
        wall.now += step
        for _ in range(8):
            old_release_beat(sup)
            assert sup.worker_problem(rec, WANTED) == "", step
            later(sup, 1)
            wall.now += 1
    later(sup, 6)                                    # then it hangs
    assert sup.worker_problem(rec, WANTED) == NO_BEAT


def test_the_start_deadline_counts_on_the_supervisors_clock(tmp_path, wall, process):
    sup = supervisor(tmp_path)
    rec = record(sup, process)
    wall.now += 3600                                 # an NTP step forward while it starts
    assert sup.worker_problem(rec, WANTED) == ""
    later(sup, 19)
    assert sup.worker_problem(rec, WANTED) == ""
    later(sup, 2)
    assert sup.worker_problem(rec, WANTED) == "no heartbeat since launch"


def test_an_adopted_workers_timeouts_count_from_the_restart(tmp_path, wall, process):
    first = supervisor(tmp_path)
    rec = record(first, process)
    beat(first)
    first.local.save()
    wall.now -= 600                                  # its beat now looks 10 min ahead
    again = supervisor(tmp_path)                     # the supervisor restarted
    adopted = again.workers["w1"]
    assert adopted.pid == rec.pid and adopted.proc is None
    assert again.worker_problem(adopted, WANTED) == ""
    later(again, 4)
    beat(again)
    later(again, 4)
    assert again.worker_problem(adopted, WANTED) == ""
    later(again, 6)                                  # then it hangs
    assert again.worker_problem(adopted, WANTED) == NO_BEAT
