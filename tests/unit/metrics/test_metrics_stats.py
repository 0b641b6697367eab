"""Rolling executor statistics."""
from __future__ import annotations

from squall.metrics.stats import ALL_TIME, BUCKETS, WindowedStats, aggregate

T0 = 1_000_000.0


def test_snapshot_reports_every_window_with_zeros_before_any_data():
    snap = WindowedStats().snapshot(T0)
    assert set(snap) == {"600", "10800", "86400", ALL_TIME}
    assert snap["600"] == {
        "emitted": 0, "transferred": 0, "acked": 0, "failed": 0, "executed": 0,
        "execute_latency_ms": 0.0, "process_latency_ms": 0.0, "complete_latency_ms": 0.0}


def test_counts_and_mean_latencies_add_up():
    s = WindowedStats()
    s.add({"emitted": 10, "executed": 4}, {"execute": (8.0, 4), "process": (2.0, 1)}, T0)
    s.add({"emitted": 5, "executed": 4}, {"execute": (24.0, 4)}, T0 + 1)
    for window in ("600", "10800", "86400", ALL_TIME):
        stats = s.snapshot(T0 + 2)[window]
        assert (stats["emitted"], stats["executed"]) == (15, 8)
        assert stats["execute_latency_ms"] == 4.0      # 32 ms over 8 samples
        assert stats["process_latency_ms"] == 2.0


def test_old_data_leaves_the_short_windows_only():
    s = WindowedStats()
    s.add({"acked": 3}, {"complete": (30.0, 3)}, T0)
    s.add({"acked": 1}, {"complete": (50.0, 1)}, T0 + 700)
    snap = s.snapshot(T0 + 700)
    assert snap["600"]["acked"] == 1 and snap["600"]["complete_latency_ms"] == 50.0
    assert snap["10800"]["acked"] == 4 and snap["10800"]["complete_latency_ms"] == 20.0
    later = s.snapshot(T0 + 700 + 86400)
    assert later["600"]["acked"] == 0 and later["86400"]["acked"] == 0
    assert later[ALL_TIME]["acked"] == 4


def test_window_covers_at_least_its_length_minus_one_bucket():
    s = WindowedStats()
    s.add({"failed": 1}, None, T0)
    bucket = 600 / BUCKETS
    assert s.snapshot(T0 + 600 - bucket)["600"]["failed"] == 1
    assert s.snapshot(T0 + 600 + bucket)["600"]["failed"] == 0


def test_memory_is_bounded_by_the_bucket_count():
    s = WindowedStats()
    for i in range(5000):
        s.add({"emitted": 1}, {"execute": (1.0, 1)}, T0 + i * 7)
    assert all(len(w.buckets) <= BUCKETS for w in s._windows.values())
    snap = s.snapshot(T0 + 4999 * 7)
    assert snap[ALL_TIME]["emitted"] == 5000
    assert 600 // 7 - 600 / BUCKETS / 7 <= snap["600"]["emitted"] <= 600 // 7 + 1


def test_clock_stepping_back_lands_in_the_newest_bucket():
    s = WindowedStats()
    s.add({"emitted": 1}, None, T0 + 100)
    s.add({"emitted": 1}, None, T0)
    assert s.snapshot(T0 + 100)["600"]["emitted"] == 2


def test_other_stat_names_are_kept():
    s = WindowedStats()
    s.add({"dropped": 2}, {"queue": (3.0, 1)}, T0)
    stats = s.snapshot(T0)["600"]
    assert stats["dropped"] == 2 and stats["queue_latency_ms"] == 3.0


def test_aggregate_weights_latencies_by_their_counts():
    a, b = WindowedStats(), WindowedStats()
    a.add({"executed": 1, "acked": 3}, {"execute": (10.0, 1), "complete": (3.0, 3)}, T0)
    b.add({"executed": 3, "acked": 1}, {"execute": (6.0, 3), "complete": (5.0, 1)}, T0)
    c = WindowedStats()    # an idle executor does not drag the mean down
    total = aggregate([a.snapshot(T0), b.snapshot(T0), c.snapshot(T0)])
    assert total["600"]["executed"] == 4 and total[ALL_TIME]["acked"] == 4
    assert total["600"]["execute_latency_ms"] == (10.0 + 6.0) / 4
    assert total["600"]["complete_latency_ms"] == (3.0 + 5.0) / 4
    assert total["600"]["process_latency_ms"] == 0.0
