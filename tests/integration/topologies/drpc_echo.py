"""A DRPC topology for the real-cluster tests (tests/integration/cluster): ``echo`` answers
``[[args]]``, after ``N`` seconds for args ``sleep:N`` (on the worker's loop: the batches after
it wait), from the cluster's DRPC servers (``drpc.servers``)."""
from __future__ import annotations

import time
from typing import Any

from squall.trident import Function, TridentTopology


class Echo(Function):
    def execute(self, tup: Any, collector: Any) -> None:
        args = tup["args"]
        if args.startswith("sleep:"):
            time.sleep(float(args.split(":", 1)[1]))
        collector.emit([args])


def topology() -> Any:
    t = TridentTopology()
    t.new_drpc_stream("echo").each(["args"], Echo(), ["out"]).project(["out"])
    return t.build()
