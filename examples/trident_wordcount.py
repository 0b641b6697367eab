"""Trident word count with a DRPC query: exact counts in a transactional map state.

    python examples/trident_wordcount.py                 (LocalCluster + LocalDRPC queries)
    squall local examples/trident_wordcount.py:topology --duration 5
                          (batches only: with no drpc.servers its DRPC stream logs that it
                           serves no requests; the line above runs queries)
    squall submit examples/trident_wordcount.py:topology --name trident-wordcount \
        -c 'drpc.servers=["drpc-host"]'                  (with `squall drpc` running there)
    curl http://drpc-host:3774/drpc/words/the%20cow      (or DRPCClient(conf).execute)

Sentences come in batches of three from a FixedBatchSpout (a txid always gets the same
batch); the words are counted per batch and folded into the state when the batch commits,
strictly in txid order, so a replayed batch is never counted twice. The DRPC stream splits
its arguments into words and sums their counts.
"""
from __future__ import annotations

import time

from squall import LocalCluster, LocalDRPC
from squall.api.topology import Topology
from squall.trident import (
    Count, FilterNull, FixedBatchSpout, Function, MapGet, MemoryMapState, Sum,
    TridentTopology,
)

SENTENCES = [
    ["the cow jumped over the moon"],
    ["the man went to the store and bought some candy"],
    ["four score and seven years ago"],
    ["how many apples can you eat"],
    ["to be or not to be the person"],
]


class Split(Function):
    def execute(self, tup, collector):
        for word in tup[0].split():
            collector.emit([word])


def topology(drpc: LocalDRPC | None = None, cycle: bool = True) -> Topology:
    """The word count and the ``words`` DRPC function (the sum of the counts of the words
    given), served by ``drpc`` or else by the cluster's DRPC servers (``drpc.servers``).
    On a cluster, the memory state lives in each worker: keep one worker (or use
    ``RedisMapState``)."""
    t = TridentTopology()
    spout = FixedBatchSpout(["sentence"], 3, SENTENCES, cycle=cycle)
    counts = (t.new_stream("sentences", spout)
              .each(["sentence"], Split(), ["word"])
              .group_by(["word"])
              .persistent_aggregate(MemoryMapState("trident-wordcount"), Count(), ["count"]))
    (t.new_drpc_stream("words", drpc)
     .each(["args"], Split(), ["word"])
     .group_by(["word"])
     .state_query(counts, ["word"], MapGet(), ["count"])
     .each(["count"], FilterNull())
     .aggregate(["count"], Sum(), ["sum"]))
    return t.build()


def main() -> None:
    conf = {"topology.trident.batch.emit.interval.millis": 100}
    with LocalCluster() as cluster, LocalDRPC() as drpc:
        cluster.submit_topology("trident-wordcount", conf, topology(drpc))
        for _ in range(5):
            time.sleep(1)
            print("count of 'the cow to':", drpc.execute("words", "the cow to"))


if __name__ == "__main__":
    main()
