"""A stateful word count for cluster tests (submitted as a code package): exact counts in a
StatefulBolt's state across ``kill -9`` of workers.

Conf keys: ``test.output.dir`` (a directory every worker can write), ``test.sentences`` (how many
sentences in total), ``test.emit.per.sec`` (the spout's rate; 0: as fast as allowed),
``test.hold.from`` (ids from this one on wait until a test calls :func:`release`; 0 or unset:
none wait).

- The spout emits ``[sentence, i]`` for ids ``i < test.sentences`` with ``i`` as the tuple id,
  appends each acked id to ``acks-<task>.txt``, replays failed ids, and on (re)start skips the
  ids its ack file lists.
- The split bolt fails each sentence id ``i % 9 == 4`` once, before it emits anything (a marker
  file per id records the first time, across restarts), else emits ``[word]`` per word.
- The count bolt (a StatefulBolt) counts words in its state and writes its worker's pid to
  ``count-<task>.pid`` when it starts.
"""
from __future__ import annotations

import collections
import os
import time
from pathlib import Path

from squall import Bolt, Spout, StatefulBolt, TopologyBuilder

SENTENCES = [
    "the cow jumped over the moon",
    "an apple a day keeps the doctor away",
    "four score and seven years ago",
    "snow white and the seven dwarfs",
]


def expected_counts(total: int) -> dict[str, int]:
    counts: collections.Counter[str] = collections.Counter()
    for i in range(total):
        counts.update(SENTENCES[i % len(SENTENCES)].split())
    return dict(counts)


def read_acks(directory: Path) -> list[int]:
    out = []
    for path in directory.glob("acks-*.txt"):
        out.extend(int(line) for line in path.read_text().split())
    return out


def release(directory: Path) -> None:
    """Let the spout go on past ``test.hold.from``."""
    (directory / "go").write_text("go")


def count_pids(directory: Path) -> dict[int, int]:
    """Count task -> the pid of the worker it last started in."""
    return {int(p.stem.split("-")[1]): int(p.read_text()) for p in directory.glob("count-*.pid")
            if p.read_text().strip()}


class DurableSentences(Spout):
    outputs = ["sentence", "sid"]

    def initialize(self, conf, context):
        self.dir = Path(conf["test.output.dir"])
        rate = float(conf.get("test.emit.per.sec") or 0)
        self.gap = 1.0 / rate if rate else 0.0
        self.next_at = 0.0
        self.hold_from = int(conf.get("test.hold.from") or 0)
        self.released = not self.hold_from
        self.ack_file = self.dir / f"acks-{context.task_id}.txt"
        done = set()
        if self.ack_file.exists():
            done = {int(x) for x in self.ack_file.read_text().split()}
        self.todo = collections.deque(i for i in range(int(conf["test.sentences"]))
                                      if i not in done)

    def next_tuple(self):
        if not self.todo:
            return
        if not self.released and self.todo[0] >= self.hold_from:
            if not (self.dir / "go").exists():
                return
            self.released = True
        now = time.monotonic()
        if now < self.next_at:
            return
        self.next_at = now + self.gap
        i = self.todo.popleft()
        self.emit([SENTENCES[i % len(SENTENCES)], i], tup_id=i)

    def ack(self, tup_id):
        with open(self.ack_file, "a") as f:
            f.write(f"{tup_id}\n")

    def fail(self, tup_id):
        self.todo.append(tup_id)


class SplitFailingOnce(Bolt):
    outputs = ["word"]

    def initialize(self, conf, context):
        self.dir = Path(conf["test.output.dir"])

    def process(self, tup):
        sentence, sid = tup.values
        if sid % 9 == 4:
            try:
                os.close(os.open(self.dir / f"failed-{sid}", os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                pass
            else:
                raise RuntimeError(f"sentence {sid} fails once")
        for word in sentence.split():
            self.emit([word])


class StatefulCount(StatefulBolt):
    outputs = ["word", "count"]

    def initialize(self, conf, context):
        path = Path(conf["test.output.dir"]) / f"count-{context.task_id}.pid"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(str(os.getpid()))
        tmp.replace(path)

    def init_state(self, state):
        self.counts = state

    def process(self, tup):
        word = tup.values[0]
        n = self.counts.get(word, 0) + 1
        self.counts.put(word, n)
        self.emit([word, n])


def build() -> object:
    b = TopologyBuilder()
    b.set_spout("sentences", DurableSentences)
    b.set_bolt("split", SplitFailingOnce, parallelism=2).shuffle_grouping("sentences")
    b.set_bolt("count", StatefulCount, parallelism=2).fields_grouping("split", ["word"])
    return b.create_topology()


topology = build()
