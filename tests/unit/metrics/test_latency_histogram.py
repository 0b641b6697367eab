"""Latency percentiles: log-bucket histograms, folded into windows and added across executors."""
from __future__ import annotations

import random

import pytest

from squall.metrics import histogram
from squall.metrics.stats import WindowedStats, aggregate


def _sparse(samples: list[float]) -> dict[int, int]:
    h: dict[int, int] = {}
    for ms in samples:
        i = histogram.index(ms)
        h[i] = h.get(i, 0) + 1
    return h


def _hist(samples: list[float]) -> list[int]:
    h = histogram.new()
    histogram.add_sparse(h, _sparse(samples))
    return h


@pytest.mark.parametrize("q", [0.5, 0.9, 0.99])
def test_percentiles_are_within_the_buckets_precision(q):
    rng = random.Random(7)
    samples = sorted(rng.lognormvariate(0.0, 1.5) for _ in range(20000))
    exact = samples[int(q * len(samples)) - 1]
    [got] = histogram.percentiles(_hist(samples), [q])
    assert got == pytest.approx(exact, rel=0.13)


def test_extremes_land_in_the_first_and_last_bucket():
    assert histogram.index(0.0) == 0 and histogram.index(-1.0) == 0
    assert histogram.index(1e-9) == 0
    assert histogram.index(1e12) == histogram.SIZE - 1
    assert histogram.percentiles(histogram.new(), [0.5, 0.99]) == [0.0, 0.0]
    assert histogram.percentiles(histogram.merged([]), [0.5]) == [0.0]


def test_windows_report_percentiles_and_aggregate_adds_histograms_up():
    fast, slow = WindowedStats(), WindowedStats()
    fast.add({"executed": 99}, {"execute": (99.0, 99)}, now=100.0,
             histograms={"execute": _sparse([1.0] * 99)})
    slow.add({"executed": 1}, {"execute": (100.0, 1)}, now=100.0,
             histograms={"execute": _sparse([100.0])})
    snap = slow.snapshot(100.0)
    assert snap["600"]["execute_latency_p99_ms"] == pytest.approx(100.0, rel=0.13)
    assert "complete_latency_p99_ms" not in snap["600"]        # never fed a histogram
    both = aggregate([fast.snapshot(100.0), slow.snapshot(100.0)])
    for window in ("600", ":all-time"):
        assert both[window]["execute_latency_p50_ms"] == pytest.approx(1.0, rel=0.13)
        assert both[window]["execute_latency_p99_ms"] == pytest.approx(1.0, rel=0.13)
        assert both[window]["executed"] == 100
    # a window forgets what is older than itself
    assert "execute_latency_p99_ms" not in slow.snapshot(100.0 + 700)["600"]
