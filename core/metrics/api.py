"""User metrics: counters and reduced values a component registers on its context.

>>> from squall.metrics.api import CountMetric, MeanReducer, ReducedMetric
>>> words = CountMetric()
>>> words.incr(); words.incr(2)
>>> words.get_value_and_reset(), words.get_value_and_reset()
(3, 0)
>>> size = ReducedMetric(MeanReducer())
>>> size.update(2); size.update(4)
>>> size.get_value_and_reset()
3.0

A component registers one with ``self.context.register_metric("words", CountMetric(), 60)`` in
``initialize`` and updates it from its own methods. Metrics are plain objects without locks:
every update and every ``get_value_and_reset`` happens on the task's executor thread (the
executor collects them once per bucket and sends the values to the metrics consumers). A value
of ``None`` means "nothing to report" and is not sent.
"""
from __future__ import annotations

from typing import Any, Protocol

__all__ = [
    "AssignableMetric", "CountMetric", "MeanReducer", "Metric", "MultiCountMetric",
    "MultiReducedMetric", "ReducedMetric", "Reducer",
]


class Metric(Protocol):
    """Anything with ``get_value_and_reset()`` can be registered as a metric."""

    def get_value_and_reset(self) -> Any: ...


class CountMetric:
    """A counter: ``incr(n=1)``; reports the count since the last report, then restarts at 0."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0

    def incr(self, n: int = 1) -> None:
        self.value += n

    def get_value_and_reset(self) -> int:
        value, self.value = self.value, 0
        return value


class Reducer(Protocol):
    """Folds values into an accumulator: ``init() -> acc``, ``reduce(acc, value) -> acc``,
    ``extract(acc) -> reported value``."""

    def init(self) -> Any: ...

    def reduce(self, acc: Any, value: Any) -> Any: ...

    def extract(self, acc: Any) -> Any: ...


class MeanReducer:
    """Mean of the numbers seen in a bucket (``None``, i.e. nothing reported, when there were none)."""

    def init(self) -> list[float]:
        return [0.0, 0]

    def reduce(self, acc: list[float], value: float) -> list[float]:
        acc[0] += value
        acc[1] += 1
        return acc

    def extract(self, acc: list[float]) -> float | None:
        return acc[0] / acc[1] if acc[1] else None


class ReducedMetric:
    """``update(value)`` folds values with a :class:`Reducer`; reports the reduced value."""

    __slots__ = ("_acc", "reducer")

    def __init__(self, reducer: Reducer) -> None:
        self.reducer = reducer
        self._acc = reducer.init()

    def update(self, value: Any) -> None:
        self._acc = self.reducer.reduce(self._acc, value)

    def get_value_and_reset(self) -> Any:
        value = self.reducer.extract(self._acc)
        self._acc = self.reducer.init()
        return value


class MultiCountMetric:
    """Named counters: ``scope("word").incr()``; reports ``{name: count}`` and resets them all.

    A counter returned by ``scope`` stays valid across reports (keep it to skip the lookup).
    """

    __slots__ = ("_scopes",)

    def __init__(self) -> None:
        self._scopes: dict[str, CountMetric] = {}

    def scope(self, name: str) -> CountMetric:
        metric = self._scopes.get(name)
        if metric is None:
            metric = self._scopes[name] = CountMetric()
        return metric

    def get_value_and_reset(self) -> dict[str, int]:
        return {name: m.get_value_and_reset() for name, m in self._scopes.items()}


class MultiReducedMetric:
    """Named :class:`ReducedMetric` sharing one reducer: ``scope("x").update(v)``; reports
    ``{name: value}`` for the scopes that have a value."""

    __slots__ = ("_scopes", "reducer")

    def __init__(self, reducer: Reducer) -> None:
        self.reducer = reducer
        self._scopes: dict[str, ReducedMetric] = {}

    def scope(self, name: str) -> ReducedMetric:
        metric = self._scopes.get(name)
        if metric is None:
            metric = self._scopes[name] = ReducedMetric(self.reducer)
        return metric

    def get_value_and_reset(self) -> dict[str, Any]:
        out = {}
        for name, metric in self._scopes.items():
            value = metric.get_value_and_reset()
            if value is not None:
                out[name] = value
        return out


class AssignableMetric:
    """Holds the last value set with ``set_value``; reports it every bucket (no reset)."""

    __slots__ = ("value",)

    def __init__(self, value: Any = None) -> None:
        self.value = value

    def set_value(self, value: Any) -> None:
        self.value = value

    def get_value_and_reset(self) -> Any:
        return self.value
