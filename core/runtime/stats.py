"""Executor statistics: the counters of an executor's tasks summed, and folded once a second
into the windowed stats (10 min / 3 h / 1 day / all time) that ``squall`` and the UI show."""
from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from squall.runtime.executors.base import Executor
from squall.runtime.executors.spout import SpoutExecutor

#: TaskState counter -> the built-in metric's name
BUILTIN_METRICS = {"emitted": "__emit-count", "transferred": "__transfer-count",
                   "acked": "__ack-count", "failed": "__fail-count",
                   "executed": "__execute-count"}
#: latency name -> the TaskState histogram that feeds its percentiles, and its sample count
_HISTOGRAMS = {"execute": ("exec_hist", "exec_samples"),
               "complete": ("complete_hist", "complete_samples")}


def fold_stats(executors: Iterable[Executor], max_age: float) -> None:
    """Fold each executor's counters since the last fold into its windowed stats, and drop
    the process-latency samples of bolts older than ``max_age`` seconds (never acked)."""
    from squall.metrics.stats import SAMPLES, WindowedStats
    from squall.runtime.executors.bolt import BoltExecutor
    stamp = time.time()
    for ex in executors:
        if ex.windows is None:
            ex.windows = WindowedStats()
        cur = executor_stats(ex, windows=False)
        prev = ex.last_fold
        counts = {k: cur[k] - prev.get(k, 0) for k in BUILTIN_METRICS}
        for name in _HISTOGRAMS:
            counts[name + SAMPLES] = cur[f"_{name}_samples"] - prev.get(f"_{name}_samples", 0)
        lat = {}
        for name in ("execute", "process", "complete"):
            total, n = cur[f"_{name}_total"], cur[f"_{name}_n"]
            ptotal, pn = prev.get(f"_{name}_total", 0.0), prev.get(f"_{name}_n", 0)
            if n - pn:
                lat[name] = (total - ptotal, n - pn)
        hists = {name: _drain(ex, attr) for name, (attr, _) in _HISTOGRAMS.items()}
        ex.windows.add(counts, lat, stamp, hists)
        ex.last_fold = cur
        if isinstance(ex, BoltExecutor):
            ex.drop_stale_samples(max_age)


def _drain(ex: Executor, attr: str) -> dict[int, int]:
    """The samples in the ``attr`` histograms of ``ex``'s tasks since the last fold (sparse),
    each task given a fresh one. On the loop thread: a threaded component's sample that lands
    in the list being replaced is lost (a sample, not a count)."""
    from squall.metrics import histogram
    out: dict[int, int] = {}
    for ts in ex.tasks:
        hist = getattr(ts, attr)
        if any(hist):
            setattr(ts, attr, histogram.new())
            for i, n in enumerate(hist):
                if n:
                    out[i] = out.get(i, 0) + n
    return out


def executor_stats(ex: Executor, windows: bool = True) -> dict[str, Any]:
    """Counters of one executor, summed over its tasks (read from any thread)."""
    total: dict[str, Any] = {"component": ex.component_id, "kind": ex.kind,
                             "tasks": [ts.task for ts in ex.tasks]}
    sums = {"execute": [0.0, 0], "process": [0.0, 0], "complete": [0.0, 0]}
    for ts in ex.tasks:
        for key in BUILTIN_METRICS:
            total[key] = total.get(key, 0) + getattr(ts, key)
        for name, ms, n in (("execute", ts.exec_ms, ts.exec_n),
                            ("process", ts.proc_ms, ts.proc_n),
                            ("complete", ts.complete_ms, ts.complete_n)):
            sums[name][0] += ms
            sums[name][1] += n
    for name, (ms, n) in sums.items():
        total[f"{name}_latency_ms"] = ms / n if n else 0.0
        if not windows:
            total[f"_{name}_total"], total[f"_{name}_n"] = ms, n
    if not windows:
        for name, (_, samples) in _HISTOGRAMS.items():
            total[f"_{name}_samples"] = sum(getattr(ts, samples) for ts in ex.tasks)
    if windows and ex.windows is not None:
        total["windows"] = ex.windows.snapshot(time.time())
    total["queued"] = sum(ts.queued() for ts in ex.tasks)
    #: the most tuples one of its tasks' queues held with what waited in front of it, and the
    #: passes backpressure paused it
    total["queued_peak"] = max(ts.queue_peak for ts in ex.tasks)
    total["paused"] = ex.paused
    #: on a thread of its own: its busy time is not its worker's loop's (see the UI's capacity)
    total["threaded"] = ex.threaded
    if isinstance(ex, SpoutExecutor):
        now = ex.clock.now
        total["held_secs"] = round(ex.held_secs(now), 1)
        total["stalled"] = ex.held_secs(now) >= ex.stall_secs
        total["waiting_for"] = ex.waiting_for(now)
        total["at_max_pending"] = ex.at_max_pending
        if ex.max_replays:
            total["poison"] = list(ex.poison)
    total["uptime_secs"] = int(time.time() - ex.start_time)
    return total


def stall_reason(executors: Iterable[dict[str, Any]]) -> str:
    """A topology's ``status_reason`` from its executors' stats when backpressure has held a
    spout back past ``topology.backpressure.stall.report.secs`` (``""`` when none is)."""
    stalled = sorted({(str(st.get("component")), float(st.get("held_secs") or 0))
                      for st in executors if st.get("stalled")}, key=lambda c: -c[1])
    if not stalled:
        return ""
    names = ", ".join(c for c, _ in stalled[:3])
    return (f"spouts held back by backpressure for {stalled[0][1]:.0f} s ({names}): a bolt "
            f"downstream does not keep up")
