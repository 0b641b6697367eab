"""Reading and writing states from streams: ``state_query`` takes a :class:`QueryFunction`
(``MapGet`` reads a map state by key), ``partition_persist`` a :class:`StateUpdater`."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from squall.trident.operations import Operation
from squall.trident.tuple import TridentCollector, TridentTuple


class QueryFunction(Operation):
    """``batch_retrieve(state, tuples)`` returns one result per input row (one call per batch
    and task); ``execute(tup, result, collector)`` emits the output fields for one row."""

    def batch_retrieve(self, state: Any, tuples: Sequence[TridentTuple]) -> list[Any]:
        raise NotImplementedError(f"{type(self).__name__} must define batch_retrieve")

    def execute(self, tup: TridentTuple, result: Any, collector: TridentCollector) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define execute")


class MapGet(QueryFunction):
    """The map state's current value for the key made of the input fields (``None`` if
    missing)."""

    def batch_retrieve(self, state: Any, tuples: Sequence[TridentTuple]) -> list[Any]:
        return list(state.multi_get([tuple(t.values) for t in tuples]))

    def execute(self, tup: TridentTuple, result: Any, collector: TridentCollector) -> None:
        collector.emit([result])


class StateUpdater(Operation):
    """``partition_persist``: ``update_state(state, tuples, collector)`` once per batch and
    task, inside the state's commit (strictly in txid order). What it emits forms the
    state's ``new_values_stream()``."""

    def update_state(self, state: Any, tuples: Sequence[TridentTuple],
                     collector: TridentCollector) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define update_state")
