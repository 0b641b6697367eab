"""User operations of Trident streams (Storm's ``Function``, ``Filter``, ``MapFunction``,
``FlatMapFunction``, ``Consumer``) and the builtin ``FilterNull``.

Operations are given to stream methods as instances and travel to the workers as their class
(``module:qualname``, so define them at module level) plus their JSON-able attributes: an
operation's ``__init__`` runs where the topology is built, and in the worker the instance is
rebuilt from those attributes without calling ``__init__``. ``prepare(conf, context)`` is
called once per task in the worker before the first batch; ``cleanup()`` when it stops.
Methods run on the worker's loop thread. An exception raised by an operation fails the batch,
which is replayed with the same txid.
"""
from __future__ import annotations

from typing import Any

from squall.trident.tuple import TridentCollector, TridentTuple


class Operation:
    """Base of every Trident operation: the optional per-task lifecycle."""

    #: input fields the operation reads at least (``tup.values[0]`` ...): fewer given is a
    #: TopologyError when the topology is built, not an error in every batch
    min_input_fields = 0

    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        """Called once per task in the worker, before the first batch."""

    def cleanup(self) -> None:
        """Called once when the task stops."""


class Function(Operation):
    """``each(in_fields, function, out_fields)``: emit zero or more rows of ``out_fields`` per
    input; each is appended to the input row."""

    def execute(self, tup: TridentTuple, collector: TridentCollector) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define execute(tup, collector)")


class Filter(Operation):
    """``each(in_fields, filter)`` or ``filter(filter)``: keep the rows ``is_keep`` accepts."""

    def is_keep(self, tup: TridentTuple) -> bool:
        raise NotImplementedError(f"{type(self).__name__} must define is_keep(tup)")


class MapFunction(Operation):
    """``map(function[, out_fields])``: one output row (a sequence of values) per input."""

    def execute(self, tup: TridentTuple) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define execute(tup)")


class FlatMapFunction(Operation):
    """``flat_map(function[, out_fields])``: an iterable of output rows per input."""

    def execute(self, tup: TridentTuple) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define execute(tup)")


class Consumer(Operation):
    """``peek(consumer)``: sees every row; the stream passes on unchanged."""

    def accept(self, tup: TridentTuple) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define accept(tup)")


class FilterNull(Filter):
    """Drops rows where any input field is ``None``."""

    def is_keep(self, tup: TridentTuple) -> bool:
        return all(v is not None for v in tup.values)
