"""A Trident DRPC function for the secure-cluster tests (tests/integration/cluster): ``words``
answers the number of words of its arguments through the cluster's DRPC servers
(``drpc.servers``). Its ``Split`` writes the keys of the conf it was prepared with to
``<test.output.dir>/conf-<pid>-<id>.json``, so a test can check what a topology's code sees."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from squall.trident import Count, Function, TridentTopology


class Split(Function):
    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        out = Path(conf["test.output.dir"])
        seen = {k: repr(v) for k, v in conf.items()}
        (out / f"conf-{os.getpid()}-{id(self)}.json").write_text(json.dumps(seen))

    def execute(self, tup: Any, collector: Any) -> None:
        for word in tup[0].split():
            collector.emit([word])


def build() -> Any:
    t = TridentTopology()
    (t.new_drpc_stream("words")
     .each(["args"], Split(), ["word"])
     .aggregate(["word"], Count(), ["count"]))
    return t.build()


topology = build()
