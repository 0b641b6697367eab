"""A partitioned spout's emitter task: the metadata it keeps per partition in the state store."""
from __future__ import annotations

import uuid
from typing import Any

from squall.trident import (
    OpaqueEmitter, OpaquePartitionedSpout, TransactionalEmitter, TransactionalSpout, plan,
)
from squall.trident.runtime.meta import MetaStore
from squall.trident.runtime.sources import PartitionedSource

#: each partition's rows: "<partition>:<i>"
ROWS = {p: [f"{p}:{i}" for i in range(12)] for p in ("p1", "p2")}


class RangeEmitter(TransactionalEmitter):
    """Batches of three rows; metadata: the [start, end) range."""

    def emit_partition_batch_new(self, txid: int, collector: Any, partition: Any,
                                 last_partition_meta: Any) -> Any:
        start = last_partition_meta["end"] if last_partition_meta else 0
        meta = {"start": start, "end": start + 3}
        self.emit_partition_batch(txid, collector, partition, meta)
        return meta

    def emit_partition_batch(self, txid: int, collector: Any, partition: Any,
                             partition_meta: Any) -> None:
        for row in ROWS[partition][partition_meta["start"]:partition_meta["end"]]:
            collector.emit([row])


class RangeSpout(TransactionalSpout):
    outputs = ["item"]

    def get_emitter(self, conf: dict[str, Any], context: Any) -> Any:
        return RangeEmitter()


class OpaqueRangeEmitter(OpaqueEmitter):
    """Three rows after the batch before; metadata: the [start, end) range."""

    def emit_partition_batch(self, txid: int, collector: Any, partition: Any,
                             last_partition_meta: Any) -> Any:
        start = last_partition_meta["end"] if last_partition_meta else 0
        for row in ROWS[partition][start:start + 3]:
            collector.emit([row])
        return {"start": start, "end": start + 3}


class OpaqueRangeSpout(OpaquePartitionedSpout):
    outputs = ["item"]

    def get_emitter(self, conf: dict[str, Any], context: Any) -> Any:
        return OpaqueRangeEmitter()


class Context:
    topology_name = "source-test"
    component_id = "spout-s"
    task_index = 0

    def component_tasks(self, component_id: str) -> list[int]:
        return [1]


def _conf(namespace: str) -> dict[str, Any]:
    return {"squall.state": "memory", "squall.state.memory.namespace": namespace}


def _source(namespace: str, spout: Any = None) -> PartitionedSource:
    source = PartitionedSource({"params": {"name": "s"},
                                "op": plan.to_json(spout or RangeSpout(), "spout")})
    source.open(_conf(namespace), Context())
    return source


def test_metadata_of_a_batch_that_cannot_commit_is_not_taken_for_the_one_before() -> None:
    namespace = uuid.uuid4().hex
    source = _source(namespace)
    rows, _ = source.rows_for(1, ["p1"])
    assert rows == [("p1:0",), ("p1:1",), ("p1:2",)]
    source.committed(1)
    # an earlier run left p1's metadata of a txid 2 that then ran without p1 (the
    # coordinator's record of txid 2 was lost): p1's rows 3 to 5 were never counted
    store = MetaStore(_conf(namespace), "/trident/source-test/spouts/s")
    store.put("p1", {**store.get("p1"), "2": {"start": 3, "end": 6}})
    rows, _ = source.rows_for(2, ["p2"])
    source.committed(2)
    assert store.get("p1") == {"1": {"start": 0, "end": 3}}
    rows, _ = source.rows_for(3, ["p1", "p2"])             # p1 is back: after its txid 1
    assert [r for r in rows if r[0].startswith("p1")] == [("p1:3",), ("p1:4",), ("p1:5",)]
    source.close()
    store.close()


def test_an_opaque_task_restarted_before_a_commit_continues_after_that_batch() -> None:
    namespace = uuid.uuid4().hex
    source = _source(namespace, OpaqueRangeSpout())
    source.rows_for(1, ["p1"])
    source.committed(1)
    rows, _ = source.rows_for(2, ["p1"])
    assert rows == [("p1:3",), ("p1:4",), ("p1:5",)]
    source.close()                          # its worker dies; txid 2's batch was complete
    restarted = _source(namespace, OpaqueRangeSpout())
    restarted.committed(2)                  # the commit reaches the restarted task
    rows, _ = restarted.rows_for(3, ["p1"])
    assert rows == [("p1:6",), ("p1:7",), ("p1:8",)]       # not rows 3 to 5 again
    restarted.close()


def test_an_opaque_replay_of_a_committed_txid_starts_after_the_batch_before_it() -> None:
    """The coordinator died between the commit of txid 2 and its record of it: txid 2 is
    replayed from where it started, also from the record an earlier version kept."""
    for record in (None, {"txid": 2, "meta": {"start": 3, "end": 6},
                          "prev": {"start": 0, "end": 3}}):
        namespace = uuid.uuid4().hex
        source = _source(namespace, OpaqueRangeSpout())
        if record is None:
            for txid in (1, 2):
                source.rows_for(txid, ["p1"])
                source.committed(txid)
        else:
            store = MetaStore(_conf(namespace), "/trident/source-test/spouts/s")
            store.put("p1", record)
            store.close()
        rows, _ = source.rows_for(2, ["p1"])
        assert rows == [("p1:3",), ("p1:4",), ("p1:5",)]
        source.committed(2)
        rows, _ = source.rows_for(3, ["p1"])
        assert rows == [("p1:6",), ("p1:7",), ("p1:8",)]
        source.close()
