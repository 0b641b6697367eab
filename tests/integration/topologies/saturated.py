"""A topology whose bolt cannot keep up, for fault tests (submitted as a code package).

Conf keys: ``test.output.dir`` (a directory every worker can write), ``test.sentences`` (how many
tuples in all), ``test.work.ms`` (the slow bolt's work per tuple).

The spout ``a_numbers`` emits the ids ``0 .. n-1`` as fast as backpressure lets it, each its
own tuple id, appends every acked id to ``acks-<task>.txt`` and replays failed ids; on (re)start
it skips the ids its ack file lists. The bolt ``b_slow`` spends ``test.work.ms`` on each tuple
(so its queue fills and backpressure holds the spout back) and acks it.
"""
from __future__ import annotations

import collections
import time
from pathlib import Path

from squall import Bolt, Spout, TopologyBuilder


def read_acks(directory: Path) -> set[int]:
    out: set[int] = set()
    for path in directory.glob("acks-*.txt"):
        out.update(int(line) for line in path.read_text().split())
    return out


class Numbers(Spout):
    outputs = ["n"]

    def initialize(self, conf, context):
        self.ack_file = Path(conf["test.output.dir"]) / f"acks-{context.task_id}.txt"
        done = set()
        if self.ack_file.exists():
            done = {int(x) for x in self.ack_file.read_text().split()}
        self.todo = collections.deque(i for i in range(int(conf["test.sentences"]))
                                      if i not in done)
        self.out = open(self.ack_file, "a", buffering=1)

    def next_tuple(self):
        if self.todo:
            i = self.todo.popleft()
            self.emit([i], tup_id=i)

    def ack(self, tup_id):
        self.out.write(f"{tup_id}\n")

    def fail(self, tup_id):
        self.todo.append(tup_id)


class Slow(Bolt):
    def initialize(self, conf, context):
        self.work = float(conf.get("test.work.ms") or 1) / 1000.0

    def process(self, tup):
        end = time.perf_counter() + self.work
        while time.perf_counter() < end:
            pass


def build():
    b = TopologyBuilder()
    b.set_spout("a_numbers", Numbers)
    b.set_bolt("b_slow", Slow).shuffle_grouping("a_numbers")
    return b.create_topology()


topology = build()
