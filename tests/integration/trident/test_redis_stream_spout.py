"""RedisStreamSpout over a real Redis: an opaque spout in two tasks, two streams, a failed
batch replayed, exact counts in an opaque RedisMapState, progress recorded in the group; a
Redis that stops answering fails the batch within the spout's timeout."""
from __future__ import annotations

import json
import socket
import time
from collections import Counter
from typing import Any

import pytest

from squall import LocalCluster, StateError
from squall.testing.waiting import wait_until
from squall.trident import (
    Count, Function, RedisMapState, RedisStreamSpout, TridentTopology,
)
from squall.trident.tuple import TridentCollector

LINES = ["the cow jumped over the moon", "the man went to the store", "boom goes the dynamite",
         "to be or not to be", "four score and seven years ago", "a b c the"]
ARMED: set[str] = set()


class Split(Function):
    tag = ""

    def execute(self, tup: Any, collector: Any) -> None:
        for w in tup["line"].split():
            if w == "boom" and self.tag in ARMED:
                ARMED.discard(self.tag)
                raise RuntimeError("injected failure")
            collector.emit([w])


def test_opaque_stream_spout_counts_exactly(redis_conf: dict[str, Any]) -> None:
    import redis
    client = redis.Redis(host=redis_conf["host"], port=redis_conf["port"], db=redis_conf["db"],
                         decode_responses=True)
    prefix = redis_conf["key_prefix"]
    streams = [f"{prefix}s0", f"{prefix}s1"]
    for i, line in enumerate(LINES):
        client.xadd(streams[i % 2], {"line": line, "n": str(i)})
    split = Split()
    split.tag = prefix
    ARMED.add(prefix)
    spout = RedisStreamSpout(streams, ["line"], host=redis_conf["host"],
                             port=redis_conf["port"], db=redis_conf["db"], batch_size=2,
                             group="counters")
    state = RedisMapState.opaque(host=redis_conf["host"], port=redis_conf["port"],
                                 db=redis_conf["db"], key_prefix=f"{prefix}count:")
    t = TridentTopology()
    (t.new_stream("lines", spout).parallelism_hint(2)
     .each(["line"], split, ["word"])
     .group_by(["word"]).persistent_aggregate(state, Count(), ["count"]))

    stored = state.make_state()

    def counts() -> dict[str, int]:
        words = [json.loads(k[len(prefix) + 6:])[0] for k in client.keys(f"{prefix}count:*")]
        return dict(zip(words, stored.multi_get([(w,) for w in words])))
    with LocalCluster() as cluster:
        cluster.submit_topology("redis-stream", {
            "topology.trident.batch.emit.interval.millis": 5,
            "topology.max.spout.pending": 2}, t.build())
        expected = Counter(w for line in LINES for w in line.split())
        wait_until(lambda: counts() == expected, timeout=60, message="exact counts")
        assert prefix not in ARMED
        # entries added while it runs are counted too
        last = client.xadd(streams[1], {"line": "the end"})
        expected.update(["the", "end"])
        wait_until(lambda: counts() == expected, timeout=60, message="counts of a new entry")
        # the consumer group records what has committed
        wait_until(lambda: {g["name"]: g["last-delivered-id"]
                            for g in client.xinfo_groups(streams[1])}["counters"] == last,
                   timeout=30)


def test_a_redis_that_stops_answering_fails_the_batch_within_the_timeout() -> None:
    # the kernel accepts the connection and nothing replies (a paused Redis): the batch
    # fails (and is replayed) instead of holding the worker's loop
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        spout = RedisStreamSpout("s", ["line"], port=silent.getsockname()[1], timeout=0.5)
        emitter = spout.get_emitter({}, None)
        try:
            began = time.monotonic()
            with pytest.raises(StateError, match=r"RedisStreamSpout 's': .*[Tt]imeout"):
                emitter.emit_partition_batch(1, TridentCollector(), "s", None)
            assert time.monotonic() - began < 5
        finally:
            emitter.close()
    with pytest.raises(ValueError, match="RedisStreamSpout: timeout must be a number of "
                                         "seconds above 0"):
        RedisStreamSpout("s", ["line"], timeout=0)
