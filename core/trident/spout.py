"""Batch spouts: the sources of Trident streams.

A :class:`BatchSpout` (Storm's ``IBatchSpout``) emits a whole batch per call of
``emit_batch(txid, collector)``, in one task. It is *transactional* when a txid always gets
the same rows (then a transactional state gives exact counts across replays), like
:class:`FixedBatchSpout`. ``ack(txid)`` is called once the batch has committed.
The spout instance travels like an operation (its class plus its JSON-able attributes) and
``open`` is called in the worker; its methods run on the worker's loop thread.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from squall.trident.tuple import TridentCollector


class BatchSpout:
    #: field names of the rows this spout emits
    outputs: ClassVar[Sequence[str]] = ()

    def open(self, conf: dict[str, Any], context: Any) -> None:
        """Called once in the worker before the first batch."""

    def emit_batch(self, txid: int, collector: TridentCollector) -> None:
        """Emit the rows of batch ``txid`` (``collector.emit(values)``). Called again with
        the same txid when the batch is replayed."""
        raise NotImplementedError(f"{type(self).__name__} must define emit_batch(txid, "
                                  "collector)")

    def ack(self, txid: int) -> None:
        """Batch ``txid`` has committed: what it held may be forgotten."""

    def close(self) -> None:
        """Called once when the task stops."""

    def output_fields(self) -> list[str]:
        return list(self.outputs)


class FixedBatchSpout(BatchSpout):
    """Cuts ``values`` into consecutive batches of ``batch_size`` rows: txid 1 gets the first,
    txid 2 the next, ... (with ``cycle`` it starts over after the last; without, later txids
    are empty). Transactional: a txid always gets the same rows."""

    def __init__(self, fields: Sequence[str], batch_size: int, values: Sequence[Sequence[Any]],
                 cycle: bool = False) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValueError(f"FixedBatchSpout: batch_size must be an int >= 1, got "
                             f"{batch_size!r}")
        if isinstance(values, (str, bytes)) or not all(
                isinstance(v, Sequence) and not isinstance(v, (str, bytes)) for v in values):
            raise ValueError(f"FixedBatchSpout: values must be a list of rows (each a list of "
                             f"{len(fields)} values), got {values!r:.80}")
        self.fields = [str(f) for f in fields]
        self.batch_size = batch_size
        self.values = [list(v) for v in values]
        self.cycle = bool(cycle)
        for v in self.values:
            if len(v) != len(self.fields):
                raise ValueError(f"FixedBatchSpout: row {v!r} does not have the "
                                 f"{len(self.fields)} fields {self.fields}")

    def output_fields(self) -> list[str]:
        return list(self.fields)

    def batch_for(self, txid: int) -> list[list[Any]]:
        """The rows of batch ``txid`` (txids start at 1)."""
        n = -(-len(self.values) // self.batch_size)
        index = txid - 1
        if n == 0 or index < 0:
            return []
        if self.cycle:
            index %= n
        if index >= n:
            return []
        return self.values[index * self.batch_size:(index + 1) * self.batch_size]

    def emit_batch(self, txid: int, collector: TridentCollector) -> None:
        for v in self.batch_for(txid):
            collector.emit(v)
