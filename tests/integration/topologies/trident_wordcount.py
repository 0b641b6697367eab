"""Trident word counts into Redis, for the real-cluster tests (tests/integration/cluster).

Both read their Redis from the environment of ``squall submit`` (``SQUALL_TEST_REDIS_PORT``,
``SQUALL_TEST_REDIS_PREFIX``) and serve a DRPC function (the sum of the counts of the words
given) through the cluster's DRPC servers (``drpc.servers``):

- ``transactional_topology``: a FixedBatchSpout of ``sentences(SQUALL_TEST_SENTENCES)`` into a
  transactional RedisMapState (keys ``<prefix>tx:``), DRPC ``count-tx``;
- ``opaque_topology``: a RedisStreamSpout over ``<prefix>stream0`` and ``<prefix>stream1``
  into an opaque RedisMapState (keys ``<prefix>op:``), DRPC ``count-opaque``.
"""
from __future__ import annotations

import os
from typing import Any

from squall.trident import (
    Count, FilterNull, FixedBatchSpout, Function, MapGet, RedisMapState, RedisStreamSpout, Sum,
    TridentTopology,
)

WORDS = ["apple", "banana", "cherry", "date", "elder", "fig", "grape"]


def sentences(n: int) -> list[str]:
    """``n`` sentences of 1 to 4 words, the same every time."""
    return [" ".join(WORDS[(i * 3 + k) % len(WORDS)] for k in range(1 + i % 4))
            for i in range(n)]


class Split(Function):
    def execute(self, tup: Any, collector: Any) -> None:
        for w in tup[0].split():
            collector.emit([w])


def _redis() -> tuple[dict[str, Any], str]:
    return ({"host": "127.0.0.1", "port": int(os.environ["SQUALL_TEST_REDIS_PORT"])},
            os.environ["SQUALL_TEST_REDIS_PREFIX"])


def _build(stream_name: str, spout: Any, state: Any, function: str) -> Any:
    t = TridentTopology()
    counts = (t.new_stream(stream_name, spout)
              .each([spout.output_fields()[0]], Split(), ["word"])
              .group_by(["word"])
              .persistent_aggregate(state, Count(), ["count"]).parallelism_hint(2))
    (t.new_drpc_stream(function)
     .each(["args"], Split(), ["word"])
     .group_by(["word"])
     .state_query(counts, ["word"], MapGet(), ["count"])
     .each(["count"], FilterNull())
     .aggregate(["count"], Sum(), ["sum"]))
    return t.build()


def transactional_topology() -> Any:
    redis, prefix = _redis()
    n = int(os.environ.get("SQUALL_TEST_SENTENCES", "200"))
    spout = FixedBatchSpout(["sentence"], 4, [[s] for s in sentences(n)])
    state = RedisMapState.transactional(**redis, key_prefix=f"{prefix}tx:")
    return _build("sentences-tx", spout, state, "count-tx")


def opaque_topology() -> Any:
    redis, prefix = _redis()
    spout = RedisStreamSpout([f"{prefix}stream0", f"{prefix}stream1"], ["sentence"],
                             batch_size=3, **redis)
    state = RedisMapState.opaque(**redis, key_prefix=f"{prefix}op:")
    return _build("sentences-op", spout, state, "count-opaque")
