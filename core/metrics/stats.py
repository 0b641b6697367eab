"""Rolling executor statistics over Storm's windows: 10 minutes, 3 hours, 1 day and all time.

The executor counts on its hot path with plain integers and, on a timer (not per tuple), folds
them into a :class:`WindowedStats` with :meth:`WindowedStats.add`. Each window is a ring of
:data:`BUCKETS` time buckets, so memory stays bounded however long the executor runs; a window
covers between ``window - window / BUCKETS`` and ``window`` seconds of the most recent history.

``add`` and ``snapshot`` take a lock (both are called on timers: the executor folds, the worker's
heartbeat reads), so a WindowedStats may be shared between those two threads.

Latencies fed with a histogram (:mod:`squall.metrics.histogram`) also report their 50th and
99th percentiles, ``<name>_latency_p50_ms`` and ``<name>_latency_p99_ms``, and the sparse
histogram itself, ``<name>_latency_hist``, so that :func:`aggregate` adds executors up exactly.
The histogram's sample count is fed as the count ``<name>_latency_samples`` (a bolt's pass is
one sample, weighted by its tuples): the 99th percentile is left out of a window with fewer
than :data:`P99_MIN_SAMPLES` samples, where it would be little more than the largest one.
"""
from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from squall.metrics import histogram

__all__ = ["ALL_TIME", "BUCKETS", "COUNTS", "LATENCIES", "P99_MIN_SAMPLES", "PERCENTILES",
           "SAMPLES", "WINDOWS", "WindowedStats", "aggregate"]

#: window names as in Storm's UI and heartbeats; the numbers are seconds
WINDOWS = ("600", "10800", "86400")
ALL_TIME = ":all-time"
BUCKETS = 20
#: counters every snapshot reports (0 when never fed); other names fed to ``add`` are kept too
COUNTS = ("emitted", "transferred", "acked", "failed", "executed")
#: latency names: snapshot reports ``<name>_latency_ms`` (mean, 0.0 without samples)
LATENCIES = ("execute", "process", "complete")
#: which count weighs each latency when snapshots of several executors are aggregated
_WEIGHT = {"execute": "executed", "process": "executed", "complete": "acked"}
#: the percentiles reported for latencies fed with a histogram
PERCENTILES = (("p50", 0.5), ("p99", 0.99))
#: the fewest samples a window's histogram holds for its 99th percentile to be reported
P99_MIN_SAMPLES = 100
#: ``<name>`` + SAMPLES: the count of samples fed to that latency's histogram
SAMPLES = "_latency_samples"
_HIST = "_latency_hist"

_Latency = Sequence[float]   # (total milliseconds, number of samples)


class _Bucket:
    __slots__ = ("counts", "hists", "index", "latencies")

    def __init__(self, index: int) -> None:
        self.index = index
        self.counts: dict[str, int] = {}
        self.latencies: dict[str, list[float]] = {}
        self.hists: dict[str, list[int]] = {}


def _fold_hists(hists: dict[str, list[int]],
                new_hists: Mapping[str, Mapping[int, int]]) -> None:
    for name, hist in new_hists.items():
        if hist:
            dense = hists.get(name)
            if dense is None:
                dense = hists[name] = histogram.new()
            histogram.add_sparse(dense, hist)


def _fold(counts: dict[str, int], latencies: dict[str, list[float]],
          new_counts: Mapping[str, int], new_latencies: Mapping[str, _Latency]) -> None:
    for name, n in new_counts.items():
        if n:
            counts[name] = counts.get(name, 0) + n
    for name, (total, count) in new_latencies.items():
        if count:
            acc = latencies.get(name)
            if acc is None:
                latencies[name] = [float(total), int(count)]
            else:
                acc[0] += total
                acc[1] += count


class _Window:
    """One rolling window: the buckets of the last ``secs`` seconds."""

    def __init__(self, secs: int, buckets: int) -> None:
        self.bucket_secs = secs / buckets
        self.buckets: deque[_Bucket] = deque(maxlen=buckets)

    def _expire(self, index: int) -> None:
        oldest = index - (self.buckets.maxlen or 1) + 1
        while self.buckets and self.buckets[0].index < oldest:
            self.buckets.popleft()

    def add(self, counts: Mapping[str, int], latencies: Mapping[str, _Latency],
            now: float, hists: Mapping[str, Mapping[int, int]]) -> None:
        index = int(now // self.bucket_secs)
        self._expire(index)
        if not self.buckets or self.buckets[-1].index < index:
            self.buckets.append(_Bucket(index))
        # a clock that stepped back lands in the newest bucket
        bucket = self.buckets[-1]
        _fold(bucket.counts, bucket.latencies, counts, latencies)
        _fold_hists(bucket.hists, hists)

    def totals(self, now: float) -> tuple[dict[str, int], dict[str, list[float]],
                                          dict[str, list[int]]]:
        self._expire(int(now // self.bucket_secs))
        counts: dict[str, int] = {}
        latencies: dict[str, list[float]] = {}
        by_name: dict[str, list[list[int]]] = {}
        for bucket in self.buckets:
            _fold(counts, latencies, bucket.counts, bucket.latencies)
            for name, hist in bucket.hists.items():
                by_name.setdefault(name, []).append(hist)
        return counts, latencies, {n: histogram.merged(h) for n, h in by_name.items()}


def _report_percentiles(out: dict[str, Any], hists: Mapping[str, list[int]]) -> None:
    """The percentiles of each non-empty histogram into ``out`` (which holds the counts, its
    ``<name>_latency_samples`` among them), the 99th only from P99_MIN_SAMPLES samples."""
    for name, hist in hists.items():
        if any(hist):
            samples = int(out.get(name + SAMPLES) or 0)
            out[name + SAMPLES] = samples
            values = histogram.percentiles(hist, [q for _, q in PERCENTILES])
            for (label, _), value in zip(PERCENTILES, values):
                if label != "p99" or samples >= P99_MIN_SAMPLES:
                    out[f"{name}_latency_{label}_ms"] = value
            out[f"{name}{_HIST}"] = histogram.to_sparse(hist)


def _report(counts: Mapping[str, int], latencies: Mapping[str, list[float]],
            hists: Mapping[str, list[int]]) -> dict[str, Any]:
    out: dict[str, Any] = {name: 0 for name in COUNTS}
    out.update(counts)
    for name in LATENCIES:
        total, n = latencies.get(name, (0.0, 0))
        out[f"{name}_latency_ms"] = total / n if n else 0.0
    for name, (total, n) in latencies.items():
        if name not in LATENCIES:
            out[f"{name}_latency_ms"] = total / n if n else 0.0
    _report_percentiles(out, hists)
    return out


class WindowedStats:
    """Executor statistics per window (``"600"``, ``"10800"``, ``"86400"``, ``":all-time"``).

    ``add(counts, latencies, now)``: ``counts`` maps a stat name (see :data:`COUNTS`) to how
    many happened since the previous ``add``; ``latencies`` maps a latency name (see
    :data:`LATENCIES`) to ``(total_ms, samples)`` since the previous ``add``; ``histograms``
    maps a latency name to its sparse histogram (bucket index -> samples) since the previous
    ``add``. ``now`` is seconds on any clock that does not go backwards (``time.time()`` for
    heartbeats).
    """

    def __init__(self, windows: Iterable[str] = WINDOWS, buckets: int = BUCKETS) -> None:
        self._windows = {name: _Window(int(name), buckets) for name in windows}
        self._all_counts: dict[str, int] = {}
        self._all_latencies: dict[str, list[float]] = {}
        self._all_hists: dict[str, list[int]] = {}
        self._lock = threading.Lock()

    def add(self, counts: Mapping[str, int], latencies: Mapping[str, _Latency] | None = None,
            now: float = 0.0, histograms: Mapping[str, Mapping[int, int]] | None = None) -> None:
        latencies = latencies or {}
        hists = histograms or {}
        with self._lock:
            for window in self._windows.values():
                window.add(counts, latencies, now, hists)
            _fold(self._all_counts, self._all_latencies, counts, latencies)
            _fold_hists(self._all_hists, hists)

    def snapshot(self, now: float) -> dict[str, dict[str, Any]]:
        """``{window: {"emitted": n, ..., "execute_latency_ms": x, ...}}``: a plain dict of
        JSON-ready numbers, fit for ``/workerbeats``."""
        with self._lock:
            out = {name: _report(*w.totals(now)) for name, w in self._windows.items()}
            out[ALL_TIME] = _report(self._all_counts, self._all_latencies, self._all_hists)
        return out


def aggregate(snapshots: Iterable[Mapping[str, Mapping[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Combine snapshots of several executors (e.g. one component's) window by window: counts
    add up; each mean latency is weighted by its count (execute and process latency by
    ``executed``, complete latency by ``acked``); histograms add up and give the percentiles."""
    sums: dict[str, dict[str, float]] = {}
    weights: dict[str, dict[str, float]] = {}
    hists: dict[str, dict[str, list[int]]] = {}
    for snap in snapshots:
        for window, stats in snap.items():
            s = sums.setdefault(window, {})
            w = weights.setdefault(window, {})
            h = hists.setdefault(window, {})
            for key, value in stats.items():
                if key.endswith(_HIST):
                    name = key[:-len(_HIST)]
                    if name not in h:
                        h[name] = histogram.new()
                    histogram.add_sparse(h[name], value)
                elif key.endswith(("_p50_ms", "_p99_ms")):
                    continue            # recomputed from the summed histograms
                elif key.endswith("_latency_ms"):
                    weight = stats.get(_WEIGHT.get(key[:-len("_latency_ms")], ""), 1) or 0
                    s[key] = s.get(key, 0.0) + value * weight
                    w[key] = w.get(key, 0) + weight
                else:
                    s[key] = s.get(key, 0) + value
    out: dict[str, dict[str, Any]] = {}
    for window, s in sums.items():
        out[window] = {k: (v / weights[window][k] if weights[window].get(k) else 0.0)
                       if k.endswith("_latency_ms") else v for k, v in s.items()}
        _report_percentiles(out[window], hists.get(window, {}))
    return out
