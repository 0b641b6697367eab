"""Partitioned batch spouts, Storm's two contracts in snake_case.

Both split their source into *partitions* (a Kafka topic's partitions, a Redis stream per
key): a coordinator, run by the master coordinator, says which partitions exist for each
batch (``get_partitions_for_batch``, JSON-able); the emitter, run by every task of the
spout's bolt on the partitions it owns, emits each partition's part of a batch and returns
that part's *metadata* (JSON-able: where it started and ended), which squall keeps in the
cluster state store (ZooKeeper on a cluster) so batches survive restarts.

A txid's partitions are asked for once and kept with it until it commits: every try of it,
also after a restart, has the same. The tasks share the partitions by that answer, so a
batch whose answer differs from that of the batches in flight starts once they have
committed (a partition's new task then continues after them).

- :class:`TransactionalSpout` (Storm's ``IPartitionedTridentSpout``): a txid always gets the
  same rows. ``emit_partition_batch_new(txid, collector, partition, last_partition_meta)``
  emits a new batch after the previous txid's metadata and returns its own; a replay calls
  ``emit_partition_batch(txid, collector, partition, partition_meta)``, which must emit the
  same rows again. Pair it with a transactional state.
- :class:`OpaquePartitionedSpout` (Storm's ``IOpaquePartitionedTridentSpout``): every try of
  a txid calls ``emit_partition_batch(txid, collector, partition, last_partition_meta)`` with
  the metadata of the batch before it, and may emit other rows than before (the source
  may have lost some). Pair it with an opaque state: still exactly-once. Where
  ``last_partition_meta`` is ``None`` (the partition's first batch) the emitter starts from a
  position of its own; that position must not move past the first batch until the batch
  after it commits (``success``), since the first batch may be replayed until then.

Objects travel like every operation (class + JSON-able attributes). ``get_coordinator`` and
``get_emitter`` are called in the workers; their methods run on the worker's loop thread and
must not block for long.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, ClassVar

from squall.trident.tuple import TridentCollector


class PartitionCoordinator:
    """Runs in the master coordinator: the partitions of each batch."""

    def get_partitions_for_batch(self) -> Any:
        """Everything the emitters need to know the partitions (JSON-able), asked once per
        txid. Return an equal value while the partitions stay the same: a new value waits
        for the batches in flight to commit."""
        raise NotImplementedError(f"{type(self).__name__} must define "
                                  "get_partitions_for_batch()")

    def is_ready(self, txid: int) -> bool:
        """Whether batch ``txid`` may start now (``False``: asked again shortly)."""
        return True

    def close(self) -> None: ...


class PartitionEmitter:
    """Runs in each task of the spout's bolt, on the partitions it owns."""

    def get_ordered_partitions(self, all_partition_info: Any) -> list[Any]:
        """The partitions (JSON-able values), in a stable order; tasks share them round
        robin by that order."""
        return list(all_partition_info)

    def partition_id(self, partition: Any) -> str:
        """A stable name for a partition (its metadata is kept under it)."""
        return partition if isinstance(partition, str) else json.dumps(partition,
                                                                       sort_keys=True)

    def refresh_partitions(self, partitions: list[Any]) -> None:
        """The partitions this task now owns (called when they change)."""

    def success(self, txid: int) -> None:
        """Batch ``txid`` committed."""

    def close(self) -> None: ...


class TransactionalEmitter(PartitionEmitter):
    def emit_partition_batch_new(self, txid: int, collector: TridentCollector, partition: Any,
                                 last_partition_meta: Any) -> Any:
        """Emit a new batch of ``partition`` after ``last_partition_meta`` (``None`` at the
        start); return this batch's metadata."""
        raise NotImplementedError(f"{type(self).__name__} must define "
                                  "emit_partition_batch_new")

    def emit_partition_batch(self, txid: int, collector: TridentCollector, partition: Any,
                             partition_meta: Any) -> None:
        """Emit again exactly the batch that ``partition_meta`` describes."""
        raise NotImplementedError(f"{type(self).__name__} must define emit_partition_batch")


class OpaqueEmitter(PartitionEmitter):
    def emit_partition_batch(self, txid: int, collector: TridentCollector, partition: Any,
                             last_partition_meta: Any) -> Any:
        """Emit a batch of ``partition`` after ``last_partition_meta`` (the metadata of the
        batch before it, ``None`` at the start); return this batch's metadata."""
        raise NotImplementedError(f"{type(self).__name__} must define emit_partition_batch")


class _PartitionedSpout:
    #: field names of the rows this spout emits
    outputs: ClassVar[Sequence[str]] = ()
    kind: ClassVar[str] = ""

    def output_fields(self) -> list[str]:
        return list(self.outputs)

    def get_coordinator(self, conf: dict[str, Any], context: Any) -> PartitionCoordinator:
        raise NotImplementedError(f"{type(self).__name__} must define get_coordinator")


class TransactionalSpout(_PartitionedSpout):
    """Base of transactional partitioned spouts (see the module docstring)."""

    kind = "transactional"

    def get_emitter(self, conf: dict[str, Any], context: Any) -> TransactionalEmitter:
        raise NotImplementedError(f"{type(self).__name__} must define get_emitter")


class OpaquePartitionedSpout(_PartitionedSpout):
    """Base of opaque partitioned spouts (see the module docstring)."""

    kind = "opaque"

    def get_emitter(self, conf: dict[str, Any], context: Any) -> OpaqueEmitter:
        raise NotImplementedError(f"{type(self).__name__} must define get_emitter")


#: what ``new_stream`` accepts besides a BatchSpout
PartitionedSpout = _PartitionedSpout
