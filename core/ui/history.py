"""A short in-memory history of each topology's throughput and latency, for the UI's charts.

The UI's sampler records every topology's info each ``ui.sample.secs``; :class:`History` keeps
the newest ``ui.history.size`` distinct samples per topology (all-time counters and the 10-minute mean
latencies) and turns consecutive samples into rates. Nothing is stored on disk: a restarted
UI starts with empty charts. Thread-safe (the sampler writes, request handlers read).
"""
from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["History"]

_COUNTS = ("emitted", "transferred", "acked", "failed", "executed")
_LATENCIES = ("execute_latency_ms", "process_latency_ms", "complete_latency_ms",
              "execute_latency_p99_ms", "complete_latency_p99_ms")


def _component_sample(stats: Mapping[str, Any]) -> dict[str, float]:
    windows = stats.get("windows") or {}
    counts = windows.get(":all-time") or stats
    recent = windows.get("600") or stats
    out = {k: float(counts.get(k, 0) or 0) for k in _COUNTS}
    out.update({k: float(recent.get(k, 0.0) or 0.0) for k in _LATENCIES})
    return out


class History:
    """``size`` samples per topology id, at least 2 (a rate takes two; ValueError otherwise);
    see the module docstring."""

    def __init__(self, size: int, idle_secs: float = 15.0) -> None:
        if size < 2:
            raise ValueError(f"a history keeps at least 2 samples per topology, not {size}")
        self._size = int(size)
        self._idle_secs = idle_secs
        self._samples: dict[str, deque[tuple[float, dict[str, dict[str, float]]]]] = {}
        self._lock = threading.Lock()

    def record(self, topology_id: str, now: float, info: Mapping[str, Any]) -> None:
        """Add one sample of ``info`` (a nimbus topology info) taken at ``now``. A sample equal
        to the one before is left out unless ``idle_secs`` passed since (workers report on
        their own period: a sample taken before their next report would show a dip to zero
        and then a double rate)."""
        sample = {comp: _component_sample(stats)
                  for comp, stats in (info.get("components") or {}).items()}
        with self._lock:
            ring = self._samples.get(topology_id)
            if ring is None:
                ring = self._samples[topology_id] = deque(maxlen=self._size)
            elif ring[-1][1] == sample and now - ring[-1][0] < self._idle_secs:
                return
            ring.append((now, sample))

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
        before) plus the component's latencies (ms, 10-minute means and 99th percentiles). The
        topology's ``acked`` / ``failed`` / ``completeLatency`` (mean) / ``completeLatencyP99``
        (the highest of its spouts') come from its spouts (``kinds``: component -> kind)."""
        with self._lock:
            samples = list(self._samples.get(topology_id) or ())
        topology: list[dict[str, float]] = []
        components: dict[str, list[dict[str, float]]] = {}
        for (t0, before), (t1, after) in zip(samples, samples[1:]):
            span = t1 - t0
            if span <= 0:
                continue
            total = {"time": t1, "emitted": 0.0, "acked": 0.0, "failed": 0.0,
                     "completeLatency": 0.0, "completeLatencyP99": 0.0}
            weight = 0.0
            for comp, now in after.items():
                prev = before.get(comp)
                if prev is None:
                    continue
                point: dict[str, float] = {"time": t1}
                for k in _COUNTS:
                    point[k] = max(0.0, now[k] - prev[k]) / span
                for k in _LATENCIES:
                    point[k] = now[k]
                components.setdefault(comp, []).append(point)
                if comp.startswith("__"):       # system components: their own charts only
                    continue
                total["emitted"] += point["emitted"]
                if kinds.get(comp) == "spout":
                    total["acked"] += point["acked"]
                    total["failed"] += point["failed"]
                    total["completeLatency"] += now["complete_latency_ms"] * point["acked"]
                    total["completeLatencyP99"] = max(total["completeLatencyP99"],
                                                      now["complete_latency_p99_ms"])
                    weight += point["acked"]
            total["completeLatency"] = total["completeLatency"] / weight if weight else 0.0
            topology.append(total)
        return {"topology": topology, "components": components}
