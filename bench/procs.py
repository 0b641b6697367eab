"""The processes of a benchmark's cluster, read from ``/proc``: each one's own CPU, the
processes descended from the daemons (the workers), and whether a measured window saw one of
them end or start.

A window is a measurement only if the cluster it measured stayed the same: a worker that died
and was started again in it gives figures that mix its two lives. ``bench.scale`` and
``bench.latency`` take :func:`cluster_processes` at both ends of a window and call
:func:`same_processes`, which raises :class:`~bench.distributed.WindowSpoiled` when they differ
(the beats' own check, a total or ``seq`` going down, is :func:`bench.distributed.beat_rates`).
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from bench.distributed import WindowSpoiled

TICK = os.sysconf("SC_CLK_TCK")
#: the kind :func:`cluster_processes` gives every process below a daemon
WORKERS = "workers"


def proc_stat(pid: int) -> tuple[int, float, str] | None:
    """(parent pid, CPU seconds of the process itself, name); None if gone (or ended and
    not yet reaped).

    User + system time only: the reaped children's (cutime, cstime) would add a dead
    worker's whole life to its supervisor's figure; every worker is counted as a live
    process of its own instead."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name = stat[stat.index("(") + 1:stat.rindex(")")]
    f = stat.rsplit(")", 1)[1].split()
    # after the name: state(0) ppid(1) ... utime(11) stime(12)
    if f[0] == "Z":
        return None
    return int(f[1]), (int(f[11]) + int(f[12])) / TICK, name


def tree(roots: Sequence[int]) -> list[int]:
    """``roots`` (those alive) and every process descended from them."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            st = proc_stat(int(entry.name))
            if st is not None:
                children.setdefault(st[0], []).append(int(entry.name))
    out: list[int] = []
    todo = [p for p in roots if proc_stat(p) is not None]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


def cluster_processes(daemons: Mapping[int, str]) -> dict[int, str]:
    """Every process of a cluster by pid: each daemon (``daemons``: pid -> what it is, e.g.
    nimbus, supervisor) that is alive, and the workers (and anything else) under them, as
    :data:`WORKERS`."""
    out = {pid: kind for pid, kind in daemons.items() if proc_stat(pid) is not None}
    for pid in tree(list(daemons)):
        out.setdefault(pid, WORKERS)
    return out


def changed(before: Iterable[int], after: Iterable[int], kinds: Mapping[int, str]) -> str:
    """Which processes ended and which started, by pid and kind."""
    gone, new = sorted(set(before) - set(after)), sorted(set(after) - set(before))
    named = {pid: f"{pid} ({kinds.get(pid, 'other')})" for pid in gone + new}
    return "; ".join(f"{what} " + ", ".join(named[pid] for pid in pids)
                     for what, pids in (("ended:", gone), ("started:", new)) if pids)


def same_processes(before: Iterable[int], after: Iterable[int],
                   kinds: Mapping[int, str]) -> None:
    """Raise :class:`~bench.distributed.WindowSpoiled`, naming what ended and what started,
    unless ``before`` and ``after`` (the pids at a window's two ends) are the same
    processes; ``kinds`` names them."""
    if set(before) != set(after):
        raise WindowSpoiled("the cluster's processes changed during the window: "
                            + changed(before, after, kinds))
