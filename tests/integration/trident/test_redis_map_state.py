"""RedisMapState over a real Redis: exact Trident word counts with a failed batch replayed,
Storm's stored layouts, and counts read back through DRPC."""
from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from squall import LocalCluster, LocalDRPC, StateError
from squall.testing.waiting import wait_until
from squall.trident import (
    Count, FixedBatchSpout, Function, MapGet, RedisMapState, Sum, TridentTopology,
)

SENTENCES = [["the cow jumped over the moon"], ["the man went to the store"],
             ["boom goes the dynamite"], ["to be or not to be"]]
ARMED: set[str] = set()


class Split(Function):
    """Raises on "boom" once per armed tag (the batch fails and is replayed)."""

    tag = ""

    def execute(self, tup: Any, collector: Any) -> None:
        for w in tup["sentence"].split():
            if w == "boom" and self.tag in ARMED:
                ARMED.discard(self.tag)
                raise RuntimeError("injected failure")
            collector.emit([w])


class Words(Function):
    def execute(self, tup: Any, collector: Any) -> None:
        for w in tup["args"].split():
            collector.emit([w])


@pytest.mark.parametrize("kind", ["transactional", "opaque"])
def test_redis_word_count_is_exact_across_a_replay(kind: str, redis_conf: dict[str, Any]
                                                   ) -> None:
    import redis
    client = redis.Redis(host=redis_conf["host"], port=redis_conf["port"], db=redis_conf["db"])
    prefix = redis_conf["key_prefix"]
    split = Split()
    split.tag = prefix
    ARMED.add(prefix)
    state = getattr(RedisMapState, kind)(host=redis_conf["host"], port=redis_conf["port"],
                                         db=redis_conf["db"], key_prefix=prefix)
    expected = Counter(w for (s,) in SENTENCES for w in s.split())
    conf = {"topology.trident.batch.emit.interval.millis": 5, "topology.max.spout.pending": 2}
    with LocalCluster() as cluster, LocalDRPC({"drpc.request.timeout.secs": 60}) as drpc:
        t = TridentTopology()
        counts = (t.new_stream("sentences", FixedBatchSpout(["sentence"], 1, SENTENCES))
                  .each(["sentence"], split, ["word"])
                  .shuffle().parallelism_hint(2)
                  .group_by(["word"])
                  .persistent_aggregate(state, Count(), ["count"]).parallelism_hint(2))
        (t.new_drpc_stream("words", drpc).each(["args"], Words(), ["word"])
         .group_by(["word"]).state_query(counts, ["word"], MapGet(), ["count"])
         .aggregate(["count"], Sum(), ["sum"]))
        cluster.submit_topology(f"redis-{kind}", conf, t.build())

        def stored() -> dict[str, Any]:
            keys = client.keys(prefix + "*")
            return {json.loads(k[len(prefix):])[0]: json.loads(v)
                    for k, v in zip(keys, client.mget(keys))}
        value = 1 if kind == "transactional" else 2      # [txid, v] or [txid, prev, v]
        wait_until(lambda: {w: s[value] for w, s in stored().items()} == expected,
                   timeout=60, message="exact counts in Redis")
        assert prefix not in ARMED                      # the failure did happen
        layout = stored()
        # "boom" is only in txid 3; "the" last changed in txid 3 (4 before it)
        assert layout["boom"] == ([3, 1] if kind == "transactional" else [3, None, 1])
        assert layout["the"] == ([3, 5] if kind == "transactional" else [3, 4, 5])
        assert json.loads(drpc.execute("words", "the to nosuch")) == [[8]]


def test_an_unreachable_redis_fails_batches_with_a_state_error() -> None:
    factory = RedisMapState.transactional(host="127.0.0.1", port=1, key_prefix="x:")
    state = factory.make_state()
    with pytest.raises(StateError, match="redis map state"):
        state.multi_get([("a",)])
