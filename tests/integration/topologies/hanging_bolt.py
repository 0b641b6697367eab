"""A spout of ``test.ids`` acked ids (replayed when they fail) and a bolt, on the worker's
loop, whose ``process`` blocks for ever once the file ``<test.output.dir>/hang`` exists: it
removes the file first, so it hangs once and the restarted worker runs on. Acked ids go to
``acks-<task>-<pid>.txt`` (:func:`read_acks`), the hang is marked by ``hung-<pid>``."""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from squall import Bolt, Spout, TopologyBuilder


class Ids(Spout):
    outputs = ["i"]

    def initialize(self, conf, context):
        self.total = int(conf.get("test.ids", 200))
        self.every = 1.0 / float(conf.get("test.emit.per.sec", 50))
        self.n = 0
        self.next_at = 0.0
        self.replay = []
        out = Path(conf["test.output.dir"])
        self.acks = open(out / f"acks-{context.task_id}-{os.getpid()}.txt", "a", buffering=1)

    def next_tuple(self):
        now = time.monotonic()
        if now < self.next_at:
            return
        if self.replay:
            i = self.replay.pop()
        elif self.n < self.total:
            self.n += 1
            i = self.n
        else:
            return
        self.next_at = now + self.every
        self.emit([i], tup_id=i)

    def ack(self, tup_id):
        self.acks.write(f"{tup_id}\n")

    def fail(self, tup_id):
        self.replay.append(tup_id)


class Hang(Bolt):
    outputs = ["i"]

    def initialize(self, conf, context):
        self.flag = Path(conf["test.output.dir"]) / "hang"

    def process(self, tup):
        if self.flag.exists():
            self.flag.unlink()
            (self.flag.parent / f"hung-{os.getpid()}").write_text("")
            threading.Event().wait()        # for ever: the worker must be restarted
        self.emit([tup.values[0]])


def read_acks(out_dir: Path) -> set[int]:
    """Every id acked so far, by any worker."""
    return {int(line) for p in out_dir.glob("acks-*.txt")
            for line in p.read_text().split() if line.strip()}


def build():
    b = TopologyBuilder()
    b.set_spout("ids", Ids)
    b.set_bolt("hang", Hang).shuffle_grouping("ids")
    return b.create_topology()


topology = build()
