"""User metrics and the per-task registry."""
from __future__ import annotations

import pytest
import squall
from squall.errors import TopologyError
from squall.metrics.api import (
    AssignableMetric,
    CountMetric,
    MeanReducer,
    MultiCountMetric,
    MultiReducedMetric,
    ReducedMetric,
)
from squall.metrics.registry import MetricRegistry
from squall.spi.metrics import DataPoint


def test_count_metric_reports_and_resets():
    m = CountMetric()
    m.incr()
    m.incr(4)
    assert m.get_value_and_reset() == 5
    assert m.get_value_and_reset() == 0


def test_mean_reducer_reports_mean_or_nothing():
    m = ReducedMetric(MeanReducer())
    assert m.get_value_and_reset() is None
    for v in (1, 2, 6):
        m.update(v)
    assert m.get_value_and_reset() == 3.0
    assert m.get_value_and_reset() is None


def test_multi_count_metric_scopes_stay_valid_across_reports():
    m = MultiCountMetric()
    the = m.scope("the")
    the.incr()
    m.scope("cow").incr(2)
    m.scope("the").incr()
    assert m.get_value_and_reset() == {"the": 2, "cow": 2}
    the.incr()
    assert m.get_value_and_reset() == {"the": 1, "cow": 0}


def test_multi_reduced_metric_reports_scopes_with_values():
    m = MultiReducedMetric(MeanReducer())
    m.scope("a").update(2)
    m.scope("a").update(4)
    m.scope("b")
    assert m.get_value_and_reset() == {"a": 3.0}


def test_assignable_metric_keeps_its_value():
    m = AssignableMetric()
    assert m.get_value_and_reset() is None
    m.set_value(7)
    assert (m.get_value_and_reset(), m.get_value_and_reset()) == (7, 7)


def test_squall_exports_count_and_reduced_metric():
    assert squall.CountMetric is CountMetric
    assert squall.ReducedMetric is ReducedMetric


def test_registry_collects_per_bucket_and_skips_none():
    reg = MetricRegistry(default_bucket_secs=60)
    words = reg.register("words", CountMetric())
    mean = reg.register("mean", ReducedMetric(MeanReducer()), 10)
    reg.register("__emit-count", CountMetric(), builtin=True)
    words.incr(3)
    assert reg.bucket_sizes() == [10, 60]
    assert reg.collect(60) == [DataPoint("words", 3), DataPoint("__emit-count", 0)]
    assert reg.collect(10) == []          # the mean had no samples
    mean.update(1.5)
    assert reg.collect(10) == [DataPoint("mean", 1.5)]
    assert reg.collect(30) == []


@pytest.mark.parametrize("name, metric, secs, match", [
    ("", CountMetric(), None, "non-empty string"),
    ("__mine", CountMetric(), None, "reserved"),
    ("x", object(), None, "no get_value_and_reset"),
    ("x", CountMetric(), 0, "positive whole number"),
    ("x", CountMetric(), 1.5, "positive whole number"),
])
def test_registry_rejects_bad_registrations(name, metric, secs, match):
    with pytest.raises(TopologyError, match=match):
        MetricRegistry().register(name, metric, secs)


def test_registry_rejects_a_name_twice_even_with_another_bucket():
    reg = MetricRegistry()
    reg.register("x", CountMetric(), 5)
    with pytest.raises(TopologyError, match="registered twice"):
        reg.register("x", CountMetric(), 60)


def test_squall_metrics_reexports_the_user_metrics():
    from squall import metrics
    assert metrics.MultiCountMetric is MultiCountMetric
    assert metrics.AssignableMetric is AssignableMetric
