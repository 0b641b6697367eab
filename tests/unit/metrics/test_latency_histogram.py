"""Latency percentiles: log-bucket histograms, folded into windows and added across executors."""
from __future__ import annotations

import random

import pytest

from squall.metrics import histogram
from squall.metrics.stats import P99_MIN_SAMPLES, WindowedStats, aggregate


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
    fast.add({"executed": 99, "execute_latency_samples": 99}, {"execute": (99.0, 99)},
             now=100.0, histograms={"execute": _sparse([1.0] * 99)})
    slow.add({"executed": 100, "execute_latency_samples": 100}, {"execute": (1e4, 100)},
             now=100.0, histograms={"execute": _sparse([100.0] * 100)})
    snap = slow.snapshot(100.0)
    assert snap["600"]["execute_latency_p99_ms"] == pytest.approx(100.0, rel=0.13)
    assert "complete_latency_p99_ms" not in snap["600"]        # never fed a histogram
    both = aggregate([fast.snapshot(100.0), slow.snapshot(100.0)])
    for window in ("600", ":all-time"):
        assert both[window]["execute_latency_p50_ms"] == pytest.approx(100.0, rel=0.13)
        assert both[window]["execute_latency_p99_ms"] == pytest.approx(100.0, rel=0.13)
        assert both[window]["executed"] == 199
        assert both[window]["execute_latency_samples"] == 199
    # a window forgets what is older than itself
    assert "execute_latency_p99_ms" not in slow.snapshot(100.0 + 700)["600"]


def test_a_p99_needs_enough_samples_and_the_count_comes_with_the_percentiles():
    """A bolt's pass is one sample however many tuples it weighs: 50 passes of 10 tuples
    (one of them slow) give a p50 and their count, but no p99 (it would be the slowest
    pass's mean, as if it were one in a hundred); 100 samples across executors give one."""
    one = WindowedStats()
    hist = _sparse([1.0] * 49)
    hist = {i: n * 10 for i, n in hist.items()}
    hist[histogram.index(50.0)] = 10
    one.add({"executed": 500, "execute_latency_samples": 50}, {"execute": (990.0, 500)},
            now=100.0, histograms={"execute": hist})
    snap = one.snapshot(100.0)
    for window in ("600", ":all-time"):
        assert snap[window]["execute_latency_samples"] == 50
        assert snap[window]["execute_latency_p50_ms"] == pytest.approx(1.0, rel=0.13)
        assert "execute_latency_p99_ms" not in snap[window]
    two = aggregate([snap, snap])
    assert two["600"]["execute_latency_samples"] == 2 * 50 >= P99_MIN_SAMPLES
    assert two["600"]["execute_latency_p99_ms"] == pytest.approx(50.0, rel=0.13)
