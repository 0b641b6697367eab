"""The topology ``python -m bench.trident`` measures DRPC round trips with: the DRPC function
``count`` splits its argument into words and counts each (``group_by`` word, ``aggregate``
``Count`` in two tasks), answering ``[[word, n], ...]``; served by the cluster's DRPC servers.
Nothing in it depends on where its tasks run, so it spreads over the workers."""
from __future__ import annotations

from typing import Any

from squall.trident import Count, Function, TridentTopology


class Split(Function):
    def execute(self, tup: Any, collector: Any) -> None:
        for w in tup[0].split():
            collector.emit([w])


def topology() -> Any:
    t = TridentTopology()
    (t.new_drpc_stream("count")
     .each(["args"], Split(), ["word"])
     .group_by(["word"])
     .aggregate(Count(), ["n"]).parallelism_hint(2))
    return t.build()
