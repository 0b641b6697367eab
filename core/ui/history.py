"""A short in-memory history of each topology's throughput and latency, for the UI's charts.

The UI's sampler records every topology's info each ``ui.sample.secs``; :class:`History` keeps
the newest ``ui.history.size`` distinct samples per topology (all-time counters and the 10-minute mean
latencies) and turns consecutive samples into rates. A component's counts between two samples
add up its executors' (:func:`_increase`): those of an executor restart with its worker, so the
component's total falls when one of its workers restarts. Nothing is stored on disk: a
restarted UI starts with empty charts. Thread-safe (the sampler writes, request handlers read).
"""
from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["History"]

_COUNTS = ("emitted", "transferred", "acked", "failed", "executed")
_MEANS = ("execute_latency_ms", "process_latency_ms", "complete_latency_ms")
#: None where the window has too few samples for one (squall.metrics.stats.P99_MIN_SAMPLES)
_P99S = ("execute_latency_p99_ms", "complete_latency_p99_ms")
_LATENCIES = _MEANS + _P99S


def _component_sample(stats: Mapping[str, Any]) -> dict[str, float | None]:
    windows = stats.get("windows") or {}
    counts = windows.get(":all-time") or stats
    recent = windows.get("600") or stats
    out: dict[str, float | None] = {k: float(counts.get(k, 0) or 0) for k in _COUNTS}
    out.update({k: float(recent.get(k, 0.0) or 0.0) for k in _MEANS})
    out.update({k: None if recent.get(k) is None else float(recent[k]) for k in _P99S})
    return out


def _executor_counts(info: Mapping[str, Any]) -> dict[str, dict[str, tuple[float, ...]]]:
    """Component -> executor -> its all-time counts (in ``_COUNTS`` order)."""
    out: dict[str, dict[str, tuple[float, ...]]] = {}
    for x in info.get("executors") or ():
        counts = (x.get("windows") or {}).get(":all-time") or x
        key = str(x.get("executor") or x.get("tasks"))
        out.setdefault(str(x.get("component")), {})[key] = tuple(
            float(counts.get(k, 0) or 0) for k in _COUNTS)
    return out


def _increase(before: Mapping[str, float | None], after: Mapping[str, float | None],
              execs_before: Mapping[str, tuple[float, ...]] | None,
              execs_after: Mapping[str, tuple[float, ...]] | None) -> dict[str, float]:
    """What a component counted between two samples: what each of its executors counted,
    summed, where both samples list its executors. One whose counts went down restarted
    since (with its worker) and one the sample before did not list started since: all they
    counted is new. Else the difference of the component's totals, at least 0 (which reads
    0 for the whole component when one of its workers restarted, though the others went on
    counting)."""
    if not execs_before or not execs_after:
        return {k: max(0.0, (after[k] or 0.0) - (before[k] or 0.0)) for k in _COUNTS}
    total = [0.0] * len(_COUNTS)
    for key, counts in execs_after.items():
        prev = execs_before.get(key)
        if prev is None or any(n < p for n, p in zip(counts, prev)):
            prev = (0.0,) * len(_COUNTS)
        for i, (n, p) in enumerate(zip(counts, prev)):
            total[i] += n - p
    return dict(zip(_COUNTS, total))


class History:
    """``size`` samples per topology id, at least 2 (a rate takes two; ValueError otherwise);
    see the module docstring."""

    def __init__(self, size: int, idle_secs: float = 15.0) -> None:
        if size < 2:
            raise ValueError(f"a history keeps at least 2 samples per topology, not {size}")
        self._size = int(size)
        self._idle_secs = idle_secs
        self._samples: dict[str, deque[tuple[float, dict[str, dict[str, float | None]],
                                             dict[str, dict[str, tuple[float, ...]]]]]] = {}
        self._lock = threading.Lock()

    def record(self, topology_id: str, now: float, info: Mapping[str, Any]) -> None:
        """Add one sample of ``info`` (a nimbus topology info) taken at ``now``. A sample equal
        to the one before is left out unless ``idle_secs`` passed since (workers report on
        their own period: a sample taken before their next report would show a dip to zero
        and then a double rate)."""
        sample = {comp: _component_sample(stats)
                  for comp, stats in (info.get("components") or {}).items()}
        execs = _executor_counts(info)
        with self._lock:
            ring = self._samples.get(topology_id)
            if ring is None:
                ring = self._samples[topology_id] = deque(maxlen=self._size)
            elif ring[-1][1:] == (sample, execs) and now - ring[-1][0] < self._idle_secs:
                return
            ring.append((now, sample, execs))

    def keep(self, topology_ids: Iterable[str]) -> None:
        """Forget every topology not in ``topology_ids`` (killed ones)."""
        live = set(topology_ids)
        with self._lock:
            for tid in [t for t in self._samples if t not in live]:
                del self._samples[tid]

    def series(self, topology_id: str, kinds: Mapping[str, str]) -> dict[str, Any]:
        """Chart data: ``{"topology": [point...], "components": {comp: [point...]}}`` (system
        components too; the topology's points count the user's components only); a point
        is ``{"time", "emitted", "acked", "failed", "executed"}`` (per second since the sample
        before) plus the component's latencies (ms, 10-minute means and 99th percentiles, a
        percentile None where the window had too few samples for one). The topology's
        ``acked`` / ``failed`` / ``completeLatency`` (mean) / ``completeLatencyP99`` (the
        highest of its spouts', None without any) come from its spouts (``kinds``: component
        -> kind)."""
        with self._lock:
            samples = list(self._samples.get(topology_id) or ())
        topology: list[dict[str, float | None]] = []
        components: dict[str, list[dict[str, float | None]]] = {}
        for (t0, before, execs_before), (t1, after, execs_after) in zip(samples, samples[1:]):
            span = t1 - t0
            if span <= 0:
                continue
            emitted = acked = failed = latency = weight = 0.0
            p99s: list[float] = []
            for comp, now in after.items():
                prev = before.get(comp)
                if prev is None:
                    continue
                counted = _increase(prev, now, execs_before.get(comp), execs_after.get(comp))
                rates = {k: counted[k] / span for k in _COUNTS}
                components.setdefault(comp, []).append(
                    {"time": t1, **rates, **{k: now[k] for k in _LATENCIES}})
                if comp.startswith("__"):       # system components: their own charts only
                    continue
                emitted += rates["emitted"]
                if kinds.get(comp) == "spout":
                    acked += rates["acked"]
                    failed += rates["failed"]
                    latency += (now["complete_latency_ms"] or 0.0) * rates["acked"]
                    weight += rates["acked"]
                    p99 = now["complete_latency_p99_ms"]
                    if p99 is not None:
                        p99s.append(p99)
            topology.append({"time": t1, "emitted": emitted, "acked": acked, "failed": failed,
                             "completeLatency": latency / weight if weight else 0.0,
                             "completeLatencyP99": max(p99s) if p99s else None})
        return {"topology": topology, "components": components}
