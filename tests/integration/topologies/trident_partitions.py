"""A transactional partitioned spout whose partitions change, for the real-cluster tests
(tests/integration/cluster/test_cluster_trident.py). Reads its Redis from the environment of
``squall submit`` (``SQUALL_TEST_REDIS_PORT``, ``SQUALL_TEST_REDIS_PREFIX``).

The partitions are the members of the Redis set ``<prefix>parts``; partition ``p`` is the list
``<prefix>part:<p>``, read three items a batch. Each emit is logged to the list ``<prefix>log``
as JSON ``[txid, partition, start, end, pid]``. While the key ``<prefix>hold`` exists (at most
a minute) every row waits, so a test can keep a batch in flight. The rows are counted per
partition in a transactional RedisMapState (keys ``<prefix>tx:``).
"""
from __future__ import annotations

import json
import os
import time
from typing import Any

from squall.trident import (
    Count, Function, RedisMapState, TransactionalEmitter, TransactionalSpout, TridentTopology,
)
from squall.trident.partitioned import PartitionCoordinator

BATCH = 3


def _client(port: int) -> Any:
    import redis
    return redis.Redis(host="127.0.0.1", port=port, decode_responses=True)


class ListCoordinator(PartitionCoordinator):
    def __init__(self, spout: ListSpout) -> None:
        self.key = spout.prefix + "parts"
        self.client = _client(spout.port)

    def get_partitions_for_batch(self) -> Any:
        return sorted(self.client.smembers(self.key))

    def close(self) -> None:
        self.client.close()


class ListEmitter(TransactionalEmitter):
    def __init__(self, spout: ListSpout) -> None:
        self.prefix = spout.prefix
        self.client = _client(spout.port)

    def emit_partition_batch_new(self, txid: int, collector: Any, partition: Any,
                                 last_partition_meta: Any) -> Any:
        start = last_partition_meta["end"] if last_partition_meta else 0
        end = min(start + BATCH, self.client.llen(f"{self.prefix}part:{partition}"))
        meta = {"start": start, "end": max(start, end)}
        self.emit_partition_batch(txid, collector, partition, meta)
        return meta

    def emit_partition_batch(self, txid: int, collector: Any, partition: Any,
                             partition_meta: Any) -> None:
        start, end = partition_meta["start"], partition_meta["end"]
        if end > start:
            for _ in self.client.lrange(f"{self.prefix}part:{partition}", start, end - 1):
                collector.emit([partition])
        self.client.rpush(f"{self.prefix}log",
                          json.dumps([txid, partition, start, end, os.getpid()]))

    def close(self) -> None:
        self.client.close()


class ListSpout(TransactionalSpout):
    outputs = ["part"]

    def __init__(self, prefix: str, port: int) -> None:
        self.prefix, self.port = prefix, port

    def get_coordinator(self, conf: dict[str, Any], context: Any) -> Any:
        return ListCoordinator(self)

    def get_emitter(self, conf: dict[str, Any], context: Any) -> Any:
        return ListEmitter(self)


class Hold(Function):
    """Passes its row on, waiting first while ``<prefix>hold`` exists (at most a minute)."""

    def __init__(self, prefix: str, port: int) -> None:
        self.prefix, self.port = prefix, port

    def execute(self, tup: Any, collector: Any) -> None:
        client = _client(self.port)
        deadline = time.monotonic() + 60
        while client.exists(f"{self.prefix}hold") and time.monotonic() < deadline:
            time.sleep(0.05)
        client.close()
        collector.emit([tup["part"]])


def topology() -> Any:
    port, prefix = int(os.environ["SQUALL_TEST_REDIS_PORT"]), os.environ["SQUALL_TEST_REDIS_PREFIX"]
    t = TridentTopology()
    (t.new_stream("parts", ListSpout(prefix, port))
     .each(["part"], Hold(prefix, port), ["held"])
     .group_by(["part"])
     .persistent_aggregate(RedisMapState.transactional(port=port, key_prefix=f"{prefix}tx:"),
                           Count(), ["count"]))
    return t.build()
