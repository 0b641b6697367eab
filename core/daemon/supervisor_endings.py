"""How a worker its supervisor stops ended, and what the operator is told about it.

The supervisor stops a worker for one of four problems (:meth:`Supervisor.worker_problem
<squall.daemon.supervisor.Supervisor.worker_problem>`): it is no longer assigned, its process
died, it wrote no heartbeat within ``supervisor.worker.start.timeout.secs`` of its launch, or
none for ``supervisor.worker.timeout.secs`` since. :func:`ending` says whether that was a
failure (what :class:`~squall.daemon.supervisor_backoff.LaunchBackoff` counts) and what is
reported:

- a worker that died (an exit code other than 0, or a signal: a C extension that crashed,
  the OOM killer's SIGKILL) is one WARNING line with its exit status, and an entry under
  ``__worker`` in the topology's ``/errors`` (``fatal: true``; ``start_failure: true`` when
  it had not beaten yet), unless the worker reported why itself (a start failure, or a
  fatal error of its loop, since its launch: :func:`reported_itself`);
- one that missed its start deadline is a start failure (``start_failure: true``) naming
  ``supervisor.worker.start.timeout.secs``: a component's ``initialize`` may be too slow;
- one that stopped heart-beating is ``fatal: true``, naming ``supervisor.worker.timeout.secs``:
  its loop stuck in one pass (the worker's own error names the component), or, with no beat
  written at all, a component holding the GIL in one long C call, or an overloaded machine;
  a worker whose process was stopped (state ``T`` or ``t`` in ``/proc/<pid>/stat``: SIGSTOP,
  a debugger, a frozen cgroup; :func:`process_stopped`) is said to be so instead, after
  either heartbeat timeout.

Each entry carries its slot (``node``, ``port``, ``host``) and ``source: supervisor``;
nimbus shows the newest as the topology's status reason (``squall list``, topology info, the
UI). A worker stopped on purpose (unassigned: killed, rebalanced, moved) or one that exited
in order (code 0) is no failure and is reported nowhere. Plain functions and values; the supervisor's monitor
thread is the only caller.
"""
from __future__ import annotations

import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: :meth:`Supervisor.worker_problem`'s answers (the heartbeat timeout's is :func:`no_beat_for`)
UNASSIGNED = "no longer assigned"
DIED = "process died"
NO_START_BEAT = "no heartbeat since launch"
_NO_BEAT_PREFIX = "no heartbeat for "
START_TIMEOUT_KEY = "supervisor.worker.start.timeout.secs"
TIMEOUT_KEY = "supervisor.worker.timeout.secs"
#: the ``source`` of the ``/errors`` entries a supervisor writes about its workers
SOURCE = "supervisor"


def no_beat_for(limit: float) -> str:
    """The problem of a worker whose newest heartbeat is older than ``limit`` seconds."""
    return f"{_NO_BEAT_PREFIX}{limit:g} s"


@dataclass(frozen=True)
class Ending:
    """What a stopped worker's end means (see the module docstring)."""

    #: :meth:`LaunchBackoff.stopped`'s ``failed``: True a failure, False a stop in order
    #: after the first beat, None neither (unassigned before it)
    failed: bool | None
    #: what became of it, after "worker <id>" in the log and "worker on port <port>" in
    #: ``/errors`` ('': the problem as it is, at INFO)
    text: str = ""
    #: the entry for ``/errors`` is a start failure (else a fatal error); None: no entry
    start_failure: bool | None = None


def exit_status(returncode: int | None) -> str:
    """``exited with code 3``, ``was killed by SIGSEGV`` (a negative ``returncode``: the
    signal), ``died (exit status unknown...)`` for None (a worker adopted after a restart of
    its supervisor is not its child)."""
    if returncode is None:
        return "died (its exit status is unknown: it was started by an earlier run of its " \
               "supervisor)"
    if returncode >= 0:
        return f"exited with code {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    why = " (from the OOM killer when memory runs out, or an operator)" \
        if -returncode == signal.SIGKILL else ""
    return f"was killed by {name}{why}"


def process_stopped(pid: int) -> bool:
    """Whether process ``pid`` is stopped (SIGSTOP, a debugger, a frozen cgroup): its state
    in ``/proc/<pid>/stat`` is ``T`` or ``t``. False where there is no ``/proc`` (not Linux)
    or no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # "pid (comm) state ...": comm may hold spaces and parentheses
    fields = stat.rpartition(")")[2].split()
    return bool(fields) and fields[0] in ("T", "t")


#: why a worker that was stopped (SIGSTOP, ...) missed its heartbeats
_STOPPED = ("its process was stopped (SIGSTOP, a debugger, a frozen cgroup), so it wrote "
            "no heartbeat")


def ending(problem: str, *, returncode: int | None, child: bool, started: bool,
           beats_written: bool, limit: float, stopped: bool = False) -> Ending:
    """What the end of a worker stopped for ``problem`` means.

    ``returncode``: its process's exit status when ``child`` (the supervisor's own child;
    None while it runs); ``started``: it wrote a heartbeat; ``beats_written``: its heartbeats
    still came within the timeout, dated in the past (its loop found stuck: it said where);
    ``limit``: the timeout the problem is about (start or heartbeat); ``stopped``: its
    process was stopped (:func:`process_stopped`)."""
    if problem == UNASSIGNED:
        return Ending(failed=False if started else None)
    if problem == DIED:
        if not child:
            return Ending(failed=True, text=exit_status(None))
        if returncode == 0:
            return Ending(failed=False if started else None, text="exited (code 0)")
        return Ending(failed=True, text=exit_status(returncode), start_failure=not started)
    if problem == NO_START_BEAT:
        return Ending(failed=True, start_failure=True, text=(
            f"was restarted: no heartbeat within {limit:g} s of its launch "
            f"({START_TIMEOUT_KEY}); " + (_STOPPED if stopped else
                                          "a component's initialize may be too slow (raise "
                                          "that timeout), or the worker hangs before its "
                                          "first beat (see its log)")))
    if problem.startswith(_NO_BEAT_PREFIX):
        if stopped:
            why = _STOPPED
        elif beats_written:
            why = ("its loop was stuck in one pass (the error of the component it was in "
                   "says where)")
        else:
            why = ("it wrote no heartbeat at all: a component may hold the GIL in one long "
                   "C call (a regex, a C extension), or the machine is overloaded")
        return Ending(failed=True, start_failure=False, text=(
            f"was restarted: {no_beat_for(limit)} ({TIMEOUT_KEY}); {why}"))
    return Ending(failed=True)


def reported_itself(errors: Mapping[str, Sequence[Mapping[str, Any]]], port: int,
                    launched: float) -> bool:
    """Whether ``errors`` (a topology's ``/errors``: component -> entries) hold a start
    failure or a fatal error of the worker on ``port`` launched at ``launched``
    (``time.time()``): it said why it ended, with its traceback."""
    for entries in errors.values():
        for entry in entries:
            if not (entry.get("start_failure") or entry.get("fatal")) or \
                    entry.get("source") == SOURCE:
                continue
            try:
                same = int(entry.get("port") or 0) == port and \
                    float(entry.get("time_secs") or 0) >= int(launched)
            except (TypeError, ValueError):
                continue
            if same:
                return True
    return False


def report_text(port: int, text: str, failures: int, settle_secs: float) -> str:
    """What ``/errors`` says of the worker on ``port`` that ended as ``text`` says (an
    :class:`Ending`'s), with how many failures in a row its slot has had, when more than one
    (each within ``settle_secs`` of its launch)."""
    out = f"worker on port {port} {text}"
    if failures <= 1:
        return out
    return f"{out} ({failures} times in a row, each within {settle_secs:g} s of its launch)"
