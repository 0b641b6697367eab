"""squall's metrics: user metrics (:mod:`.api`), the per-task registry (:mod:`.registry`),
rolling executor stats (:mod:`.stats`), built-in consumers (:mod:`.consumers`) and the bolt that
runs a consumer in a topology (:mod:`.consumer_bolt`).

User metrics are re-exported here: ``from squall.metrics import CountMetric, MultiCountMetric``.
"""
from __future__ import annotations

from squall.metrics.api import (
    AssignableMetric,
    CountMetric,
    MeanReducer,
    Metric,
    MultiCountMetric,
    MultiReducedMetric,
    ReducedMetric,
    Reducer,
)

__all__ = [
    "AssignableMetric", "CountMetric", "MeanReducer", "Metric", "MultiCountMetric",
    "MultiReducedMetric", "ReducedMetric", "Reducer",
]
