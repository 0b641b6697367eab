"""A word count that leaves evidence on disk, for cluster tests (submitted as a code package).

Conf keys: ``test.output.dir`` (a directory every worker can write), ``test.sentences`` (how many
sentence tuples in total), ``test.emit.per.sec`` (spout rate per task; 0 = as fast as allowed).

- Each spout task emits the sentence ids ``i`` with ``i % n == k`` (n spout tasks, k its index),
  appends every acked id to ``acks-<task>.txt`` and replays failed ids; ``activate`` /
  ``deactivate`` write ``active`` / ``inactive`` to ``spout-<task>.state``. On (re)start it skips
  the ids its file already lists, so a restarted worker carries on where the old one stopped.
- Each count task writes its counts to ``counts-<task>.json`` (at most twice a second, on every
  tick and at cleanup).
"""
from __future__ import annotations

import collections
import json
import os
import time
from pathlib import Path

from squall import Bolt, Spout, TopologyBuilder

SENTENCES = [
    "the cow jumped over the moon",
    "an apple a day keeps the doctor away",
    "four score and seven years ago",
    "snow white and the seven dwarfs",
    "i am at two with nature",
]


def expected_counts(total: int) -> dict[str, int]:
    counts: collections.Counter[str] = collections.Counter()
    for i in range(total):
        counts.update(SENTENCES[i % len(SENTENCES)].split())
    return dict(counts)


def read_acks(directory: Path) -> list[int]:
    """Every acked id recorded in ``directory`` (duplicates kept)."""
    out = []
    for path in directory.glob("acks-*.txt"):
        out.extend(int(line) for line in path.read_text().split())
    return out


def spout_states(directory: Path) -> list[str]:
    return sorted(p.read_text() for p in directory.glob("spout-*.state"))


def read_counts(directory: Path) -> dict[str, int]:
    total: collections.Counter[str] = collections.Counter()
    for path in directory.glob("counts-*.json"):
        try:
            total.update(json.loads(path.read_text()))
        except ValueError:
            continue   # being replaced right now
    return dict(total)


class RecordingSpout(Spout):
    outputs = ["sentence"]

    def initialize(self, conf, context):
        self.dir = Path(conf["test.output.dir"])
        total = int(conf["test.sentences"])
        rate = float(conf.get("test.emit.per.sec") or 0)
        self.interval = 1.0 / rate if rate else 0.0
        self.next_at = 0.0
        tasks = context.component_tasks(context.component_id)
        k, n = tasks.index(context.task_id), len(tasks)
        self.ack_file = self.dir / f"acks-{context.task_id}.txt"
        done = set()
        if self.ack_file.exists():
            done = {int(x) for x in self.ack_file.read_text().split()}
        self.todo = collections.deque(i for i in range(k, total, n) if i not in done)

    def activate(self):
        (self.dir / f"spout-{self.context.task_id}.state").write_text("active")

    def deactivate(self):
        (self.dir / f"spout-{self.context.task_id}.state").write_text("inactive")

    def next_tuple(self):
        if not self.todo:
            return
        now = time.monotonic()
        if now < self.next_at:
            return
        self.next_at = now + self.interval
        i = self.todo.popleft()
        self.emit([SENTENCES[i % len(SENTENCES)]], tup_id=i)

    def ack(self, tup_id):
        with open(self.ack_file, "a") as f:
            f.write(f"{tup_id}\n")

    def fail(self, tup_id):
        self.todo.append(tup_id)


class SplitBolt(Bolt):
    outputs = ["word"]

    def process(self, tup):
        for word in tup.values[0].split():
            self.emit([word])


class CountBolt(Bolt):
    outputs = ["word", "count"]

    def initialize(self, conf, context):
        self.counts = collections.Counter()
        self.path = Path(conf["test.output.dir"]) / f"counts-{context.task_id}.json"
        self.flushed = 0.0

    def process(self, tup):
        word = tup.values[0]
        self.counts[word] += 1
        self.emit([word, self.counts[word]])
        if time.monotonic() - self.flushed > 0.5:
            self.flush()

    def process_tick(self, tup):
        self.flush()

    def cleanup(self):
        self.flush()

    def flush(self):
        self.flushed = time.monotonic()
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(self.counts))
        os.replace(tmp, self.path)


def build(spouts: int = 2, splits: int = 2, counts: int = 2):
    b = TopologyBuilder()
    b.set_spout("sentences", RecordingSpout, parallelism=spouts)
    b.set_bolt("split", SplitBolt, parallelism=splits).shuffle_grouping("sentences")
    b.set_bolt("count", CountBolt, parallelism=counts,
               config={"topology.tick.tuple.freq.secs": 1}).fields_grouping("split", ["word"])
    return b.create_topology()


topology = build()
