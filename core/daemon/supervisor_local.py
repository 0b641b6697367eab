"""A supervisor's local bookkeeping: its id and workers (``localstate``), worker processes,
local heartbeats and pids directories.

``storm.local.dir`` layout used here: ``supervisor/localstate`` (JSON: ``supervisor_id`` and
``workers`` = worker id -> topology id, port, executors, pid, launch time),
``workers/<worker-id>/heartbeats/<n>`` (written by the worker, ``n`` counting up; an earlier
release's worker names them by the time, ms), ``workers/<worker-id>/pids/
<pid>``, ``logs/<topology-id>-<port>.log`` (the worker's rotated log) and ``.out`` (its raw
stdout/stderr; see :mod:`squall.daemon.log_files`). Plain functions and values; the supervisor's
monitor thread is the only caller. Nothing here talks to ZooKeeper.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from squall.daemon import log_files

log = logging.getLogger(__name__)
WORKER_MODULE = "squall.daemon.worker_main"


@dataclass
class WorkerRecord:
    """A worker process this supervisor launched (or adopted after a restart)."""

    worker_id: str
    topology_id: str
    port: int
    executors: list[list[int]]
    pid: int
    launched: float = field(default_factory=time.time)
    proc: Any = field(default=None, repr=False, compare=False)   # Popen when our child

    def to_json(self) -> dict[str, Any]:
        return {"worker_id": self.worker_id, "topology_id": self.topology_id, "port": self.port,
                "executors": self.executors, "pid": self.pid, "launched": self.launched}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> WorkerRecord:
        return cls(str(d["worker_id"]), str(d["topology_id"]), int(d["port"]),
                   [list(map(int, e)) for e in d["executors"]], int(d["pid"]),
                   float(d.get("launched") or 0))

    def slot(self) -> tuple[str, list[list[int]]]:
        return self.topology_id, sorted(self.executors)


class LocalState:
    """``supervisor/localstate``: the supervisor id and the workers it runs."""

    def __init__(self, local_dir: Path) -> None:
        self.path = local_dir / "supervisor" / "localstate"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data: dict[str, Any] = {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as exc:
            log.warning("ignoring unreadable %s: %s", self.path, exc)
        self.supervisor_id = str(data.get("supervisor_id") or uuid.uuid4())
        self.workers: dict[str, WorkerRecord] = {}
        for wid, rec in (data.get("workers") or {}).items():
            try:
                self.workers[wid] = WorkerRecord.from_json(rec)
            except (KeyError, TypeError, ValueError):
                log.warning("ignoring a malformed worker record %s in %s", wid, self.path)
        self.save()

    def save(self) -> None:
        tmp = self.path.with_name("localstate.tmp")
        tmp.write_text(json.dumps({"supervisor_id": self.supervisor_id,
                                   "workers": {w: r.to_json() for w, r in self.workers.items()}},
                                  sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.path)


def worker_dir(local_dir: Path, worker_id: str) -> Path:
    return local_dir / "workers" / worker_id


class LocalBeat(NamedTuple):
    """A worker's newest readable local heartbeat file."""

    #: its file name: a counter, or (a worker of an earlier release) ms when it was written
    name: int
    beat: dict[str, Any]
    #: the heartbeats directory's ``st_mtime_ns``: it changes with every file a worker writes
    #: (or removes) there, even one that is not the newest by name
    dir_mtime_ns: int


def newest_heartbeat(local_dir: Path, worker_id: str) -> LocalBeat | None:
    """The readable local heartbeat of a worker with the highest name (None if it wrote
    none): the newest, the names counting up (an earlier release's, ms of the time written,
    do too while the clock does not step back)."""
    hb_dir = worker_dir(local_dir, worker_id) / "heartbeats"
    try:
        mtime_ns = hb_dir.stat().st_mtime_ns
        names = sorted((int(p.name) for p in hb_dir.iterdir() if p.name.isdigit()),
                       reverse=True)
    except FileNotFoundError:
        return None
    for name in names:
        try:
            return LocalBeat(name, dict(json.loads((hb_dir / str(name)).read_text(
                encoding="utf-8"))), mtime_ns)
        except (OSError, ValueError, TypeError):
            continue
    return None


def latest_heartbeat(local_dir: Path, worker_id: str) -> dict[str, Any] | None:
    """The newest readable local heartbeat of a worker (None if it wrote none)."""
    newest = newest_heartbeat(local_dir, worker_id)
    return None if newest is None else newest.beat


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:   # a zombie is dead for our purposes
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def start_ticks(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot, /proc/<pid>/stat's field 22);
    None when it cannot be read (no such process, no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def register_pid(pids_dir: Path, pid: int | None = None) -> None:
    """Register process ``pid`` (default: this one) in a worker's ``pids/`` dir, with its
    start time, so the supervisor stops it with the worker (a worker's children may register
    themselves: they are stopped even if they left its process group)."""
    pid = os.getpid() if pid is None else pid
    pids_dir.mkdir(parents=True, exist_ok=True)
    ticks = start_ticks(pid)
    (pids_dir / str(pid)).write_text("" if ticks is None else str(ticks), encoding="ascii")


def registered_process(pids_dir: Path, pid: int) -> bool:
    """Whether ``pid`` runs the process that registered it in ``pids_dir`` (not a recycled
    pid): its start time is the one recorded, or, for a pid file without one, it started
    before the file was written."""
    if not pid_alive(pid):
        return False
    ticks = start_ticks(pid)
    if ticks is None:
        return True     # no /proc: trust the pid
    path = pids_dir / str(pid)
    try:
        recorded = path.read_text(encoding="ascii").strip()
        written = path.stat().st_mtime
    except OSError:
        return False
    if recorded.isdigit():
        return int(recorded) == ticks
    return _boot_time() + ticks / os.sysconf("SC_CLK_TCK") <= written + 1.0


def _boot_time() -> float:
    try:
        with open("/proc/stat", encoding="ascii") as f:
            for line in f:
                if line.startswith("btime "):
                    return float(line.split()[1])
    except OSError:
        pass
    return 0.0


def is_our_worker(pid: int, worker_id: str) -> bool:
    """True if ``pid`` runs the worker module for ``worker_id`` (guards against pid reuse)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().split(b"\0")
    except OSError:
        return pid_alive(pid)   # no /proc: trust the pid
    return WORKER_MODULE.encode() in cmd and worker_id.encode() in cmd


def record_alive(rec: WorkerRecord, local_dir: Path | None = None) -> bool:
    """Whether the worker of ``rec`` runs: our child's exit status, or (an adopted worker)
    its registration in its ``pids/`` dir, or its command line before it registered."""
    if rec.proc is not None:
        return rec.proc.poll() is None
    if local_dir is not None:
        pids = worker_dir(local_dir, rec.worker_id) / "pids"
        if (pids / str(rec.pid)).exists():
            return registered_process(pids, rec.pid)
    return pid_alive(rec.pid) and is_our_worker(rec.pid, rec.worker_id)


def launch_worker(local_dir: Path, supervisor_id: str, topology_id: str, port: int,
                  executors: list[list[int]],
                  prepare: Callable[[Path], None] | None = None,
                  rotation: tuple[int, int] = (0, 0)) -> WorkerRecord:
    """Start a worker process in its own process group. ``prepare(worker_dir)`` runs first
    (the worker's credentials); when it raises, nothing is left behind and the exception
    propagates. The worker logs to its rotated log file (``rotation``: max bytes, backups);
    its raw stdout/stderr go to its ``.out`` file, opened to append (so that
    :func:`~squall.daemon.log_files.cap_out_file` can empty it in place while the worker
    runs), and capped here first."""
    worker_id = uuid.uuid4().hex
    wdir = worker_dir(local_dir, worker_id)
    (wdir / "heartbeats").mkdir(parents=True)
    (wdir / "pids").mkdir()
    if prepare is not None:
        try:
            prepare(wdir)
        except BaseException:
            shutil.rmtree(wdir, ignore_errors=True)
            raise
    logs = log_files.logs_dir(local_dir)
    logs.mkdir(exist_ok=True)
    log_file = logs / log_files.worker_log_name(topology_id, port)
    raw = logs / log_files.worker_out_name(topology_id, port)
    log_files.cap_out_file(raw, *rotation)
    with open(raw, "ab") as out:
        out.write(f"--- worker {worker_id} starting {time.ctime()}\n".encode())
        out.flush()
        proc = subprocess.Popen(
            [sys.executable, "-m", WORKER_MODULE, "--topology-id", topology_id,
             "--supervisor-id", supervisor_id, "--port", str(port), "--worker-id", worker_id,
             "--local-dir", str(local_dir), "--log-file", str(log_file),
             "--log-max-bytes", str(rotation[0]), "--log-backups", str(rotation[1])],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=str(wdir),
            start_new_session=True)
    log.info("launched worker %s (pid %d) for %s on port %d", worker_id, proc.pid, topology_id,
             port)
    return WorkerRecord(worker_id, topology_id, port, sorted(executors), proc.pid, time.time(),
                        proc)


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _signal_only_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_worker(local_dir: Path, rec: WorkerRecord, grace: float) -> None:
    """:func:`stop_workers` of ``rec`` alone."""
    stop_workers(local_dir, [rec], grace)


def stop_workers(local_dir: Path, recs: list[WorkerRecord], grace: float) -> None:
    """Stop the workers ``recs`` side by side: SIGTERM each one's process group and every
    process registered in its ``pids/`` dir (each checked by its start time, so a recycled
    pid is left alone; the group of a registered process that is gone gets SIGKILL at once),
    SIGKILL what still runs ``grace`` seconds after, reap them, and remove their
    directories. Blocks up to ``grace`` + a moment however many they are (one at a time,
    workers each in a component's call that long would hold the supervisor that many
    times)."""
    stopping = [(rec, _terminate(local_dir, rec)) for rec in recs]
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(
            _alive(p, rec) for rec, pids in stopping for p in pids):
        time.sleep(0.05)
    for rec, pids in stopping:
        for pid in pids:
            if _alive(pid, rec):
                log.warning("worker %s (pid %d) did not exit within %g s of SIGTERM "
                            "(supervisor.worker.shutdown.sleep.secs); killing it",
                            rec.worker_id, pid, grace)
                _signal_group(pid, signal.SIGKILL)
    for rec, _ in stopping:
        if rec.proc is not None:
            try:
                rec.proc.wait(5)
            except subprocess.TimeoutExpired:
                log.error("worker %s (pid %d) did not die", rec.worker_id, rec.pid)
        shutil.rmtree(worker_dir(local_dir, rec.worker_id), ignore_errors=True)


def _terminate(local_dir: Path, rec: WorkerRecord) -> set[int]:
    """SIGTERM the processes of worker ``rec`` (see :func:`stop_workers`); the pids told."""
    pids_dir = worker_dir(local_dir, rec.worker_id) / "pids"
    pids = {rec.pid}
    try:
        pids.update(int(p.name) for p in pids_dir.iterdir() if p.name.isdigit())
    except FileNotFoundError:
        pass
    # a registered process that is gone may leave its group behind: a shell subprocess dies
    # with its worker (PR_SET_PDEATHSIG), the children it started do not. No process can take
    # a pid while a group of that number has members, so such a group is still the one the
    # registered process led
    leaderless = {p for p in pids if p > 0 and p != rec.pid and not pid_alive(p)
                  and _group_alive(p)}
    pids = {p for p in pids if p > 0 and ((rec.proc is not None and p == rec.pid)
                                        or registered_process(pids_dir, p)
                                        or (p == rec.pid and is_our_worker(p, rec.worker_id)))}
    for pgid in leaderless:
        log.info("worker %s: stopping what process %d left running", rec.worker_id, pgid)
        _signal_only_group(pgid, signal.SIGKILL)
    for pid in pids:
        _signal_group(pid, signal.SIGTERM)
        _signal_group(pid, signal.SIGCONT)     # a stopped process (SIGSTOP) takes it only so
    return pids


def _alive(pid: int, rec: WorkerRecord) -> bool:
    if rec.proc is not None and pid == rec.pid:
        return rec.proc.poll() is None
    return pid_alive(pid)


def stray_worker_ids(local_dir: Path, known: set[str]) -> list[str]:
    """Worker directories not in ``known`` (left by a crash between launch and save)."""
    try:
        return sorted(p.name for p in (local_dir / "workers").iterdir()
                      if p.is_dir() and p.name not in known)
    except FileNotFoundError:
        return []
