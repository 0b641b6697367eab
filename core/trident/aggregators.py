"""Aggregators (Storm's three kinds) and the builtin ``Count``, ``Sum``, ``Min``, ``Max``.

- :class:`CombinerAggregator`: ``init(tup)`` maps a row to a value, ``combine(a, b)`` merges
  two, ``zero()`` is the value of nothing. Combiners can be applied to a stored value, so they
  are what ``persistent_aggregate`` usually takes.
- :class:`ReducerAggregator`: ``init()`` starts, ``reduce(curr, tup)`` folds one row in.
- :class:`Aggregator`: ``init(batch_id, collector)`` starts a state per batch (per group),
  ``aggregate(state, tup, collector)`` folds one row (mutate the state, or return a new one),
  ``complete(state, collector)`` emits the results.

An aggregator emits one row per group (per batch for an ungrouped ``aggregate``): the group
fields, then its output fields. Operations of one batch run in one call on the worker's loop
thread; an exception fails the batch.
"""
from __future__ import annotations

from typing import Any

from squall.trident.operations import Operation
from squall.trident.tuple import TridentCollector, TridentTuple


class CombinerAggregator(Operation):
    def init(self, tup: TridentTuple) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define init(tup)")

    def combine(self, a: Any, b: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define combine(a, b)")

    def zero(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define zero()")


class ReducerAggregator(Operation):
    def init(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define init()")

    def reduce(self, curr: Any, tup: TridentTuple) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define reduce(curr, tup)")


class Aggregator(Operation):
    def init(self, batch_id: Any, collector: TridentCollector) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define init(batch_id, "
                                  "collector)")

    def aggregate(self, state: Any, tup: TridentTuple, collector: TridentCollector) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define aggregate(state, tup, "
                                  "collector)")

    def complete(self, state: Any, collector: TridentCollector) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define complete(state, "
                                  "collector)")


class Count(CombinerAggregator):
    """How many rows."""

    def init(self, tup: TridentTuple) -> int:
        return 1

    def combine(self, a: Any, b: Any) -> Any:
        return a + b

    def zero(self) -> int:
        return 0


class Sum(CombinerAggregator):
    """The sum of the first input field (``None`` counts as 0, as a missing count does)."""

    min_input_fields = 1

    def init(self, tup: TridentTuple) -> Any:
        v = tup.values[0]
        return 0 if v is None else v

    def combine(self, a: Any, b: Any) -> Any:
        return a + b

    def zero(self) -> int:
        return 0


class Min(CombinerAggregator):
    """The least value of the first input field (``None`` when there is none)."""

    min_input_fields = 1

    def init(self, tup: TridentTuple) -> Any:
        return tup.values[0]

    def combine(self, a: Any, b: Any) -> Any:
        if a is None:
            return b
        if b is None:
            return a
        return b if b < a else a

    def zero(self) -> Any:
        return None


class Max(Min):
    """The greatest value of the first input field (``None`` when there is none)."""

    def combine(self, a: Any, b: Any) -> Any:
        if a is None:
            return b
        if b is None:
            return a
        return b if b > a else a
