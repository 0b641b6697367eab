"""A word count that leaves evidence on disk, for cluster tests (submitted as a code package).

Conf keys: ``test.output.dir`` (a directory every worker can write), ``test.sentences`` (how many
sentence tuples in total), ``test.emit.per.sec`` (spout rate per task; 0 = as fast as allowed),
``test.hold.from`` (ids from this one on wait until a test calls :func:`release`, so the stream
cannot end before the fault the test brings about; 0 or unset: none wait).

- Each spout task emits ``[sentence, i]`` for the sentence ids ``i`` with ``i % n == k`` (n spout
  tasks, k its index), with ``i`` as the tuple id; appends every acked id to ``acks-<task>.txt``
  and replays failed ids (before new ones); ``activate`` / ``deactivate`` write ``active`` /
  ``inactive`` to ``spout-<task>.state`` (and the name of the thread ``activate`` ran on to
  ``spout-<task>.thread``). Every instance also appends ``<time> <pid> <event> [id]`` lines to
  ``events-<task>.log`` (events ``init``, ``activate``, ``deactivate``, ``emit``, ``close``), so
  a test can see when spouts emitted relative to (de)activation, per instance. On (re)start a
  spout skips the ids its ack file already lists, so a restarted worker carries on where the old
  one stopped.
- The split bolt emits ``[word, sentence id, position of the word]``.
- Each count task keeps its counts durable in ``counts-<task>.log``, a journal of
  ``<sentence id> <position> <word> <the word's count after it>`` lines: a batch's new lines are
  written and fsync'd before ``process_batch`` returns (so before its tuples are acked), and a
  task reloads its counts from the journal when it starts (on whatever worker it runs after a
  rebalance or restart). A word whose (sentence id, position) the task already counted is acked
  without counting it again: a replayed sentence is counted once.
"""
from __future__ import annotations

import collections
import os
import threading
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


def release(directory: Path) -> None:
    """Let the spouts go on past ``test.hold.from``."""
    (directory / "go").write_text("go")


def spout_states(directory: Path) -> list[str]:
    return sorted(p.read_text() for p in directory.glob("spout-*.state"))


def _journal_lines(path: Path) -> list[list[str]]:
    text = path.read_text()
    return [line.split() for line in text[:text.rfind("\n") + 1].splitlines()]


def counted_words(directory: Path) -> collections.Counter[tuple[int, int, str]]:
    """How many times each (sentence id, position, word) was counted, over every count task's
    journal (a count above 1 is a word counted twice)."""
    out: collections.Counter[tuple[int, int, str]] = collections.Counter()
    for path in directory.glob("counts-*.log"):
        out.update((int(sid), int(pos), word) for sid, pos, word, _n in _journal_lines(path))
    return out


def read_counts(directory: Path) -> dict[str, int]:
    """Word -> count as the count tasks hold it: each task's latest count of each word (from
    its durable journal), summed over the tasks."""
    total: collections.Counter[str] = collections.Counter()
    for path in directory.glob("counts-*.log"):
        latest = {word: int(n) for _sid, _pos, word, n in _journal_lines(path)}
        total.update(latest)
    return dict(total)


def expected_words(total: int) -> set[tuple[int, int, str]]:
    """Every (sentence id, position, word) the topology must count once."""
    return {(i, pos, word) for i in range(total)
            for pos, word in enumerate(SENTENCES[i % len(SENTENCES)].split())}


class SpoutEvent(collections.namedtuple("SpoutEvent", "time pid task event arg")):
    """One line of a spout task's ``events-<task>.log``."""


def read_spout_events(directory: Path) -> list[SpoutEvent]:
    """Every spout event of every instance, in time order."""
    out = []
    for path in directory.glob("events-*.log"):
        task = int(path.stem.split("-")[1])
        for parts in _journal_lines(path):
            out.append(SpoutEvent(float(parts[0]), int(parts[1]), task, parts[2],
                                  int(parts[3]) if len(parts) > 3 else None))
    out.sort(key=lambda e: e.time)
    return out


class RecordingSpout(Spout):
    outputs = ["sentence", "sid"]

    def initialize(self, conf, context):
        self.dir = Path(conf["test.output.dir"])
        total = int(conf["test.sentences"])
        rate = float(conf.get("test.emit.per.sec") or 0)
        self.interval = 1.0 / rate if rate else 0.0
        self.next_at = 0.0
        self.hold_from = int(conf.get("test.hold.from") or 0)
        self.released = not self.hold_from
        tasks = context.component_tasks(context.component_id)
        k, n = tasks.index(context.task_id), len(tasks)
        self.ack_file = self.dir / f"acks-{context.task_id}.txt"
        self.events = open(self.dir / f"events-{context.task_id}.log", "a", buffering=1)
        self.pid = os.getpid()
        done = set()
        if self.ack_file.exists():
            done = {int(x) for x in self.ack_file.read_text().split()}
        self.todo = collections.deque(i for i in range(k, total, n) if i not in done)
        self.event("init")

    def event(self, name: str, arg: int | None = None) -> None:
        tail = "" if arg is None else f" {arg}"
        self.events.write(f"{time.time():.6f} {self.pid} {name}{tail}\n")

    def activate(self):
        (self.dir / f"spout-{self.context.task_id}.state").write_text("active")
        # the thread the spout's callbacks run on (the worker's loop, or a thread of its own)
        (self.dir / f"spout-{self.context.task_id}.thread").write_text(
            threading.current_thread().name)
        self.event("activate")

    def deactivate(self):
        (self.dir / f"spout-{self.context.task_id}.state").write_text("inactive")
        self.event("deactivate")

    def close(self):
        self.event("close")
        self.events.close()

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
        self.next_at = now + self.interval
        i = self.todo.popleft()
        self.event("emit", i)
        self.emit([SENTENCES[i % len(SENTENCES)], i], tup_id=i)

    def ack(self, tup_id):
        with open(self.ack_file, "a") as f:
            f.write(f"{tup_id}\n")

    def fail(self, tup_id):
        self.todo.appendleft(tup_id)      # replayed first, not after every other id


class SplitBolt(Bolt):
    outputs = ["word", "sid", "pos"]

    def process(self, tup):
        sentence, sid = tup.values
        for pos, word in enumerate(sentence.split()):
            self.emit([word, sid, pos])


class CountBolt(Bolt):
    """Counts words durably: see the module docstring. Costs one write and one fsync per
    inbound batch that holds a word not counted before."""

    outputs = ["word", "count"]

    def initialize(self, conf, context):
        self.counts: collections.Counter[str] = collections.Counter()
        self.seen: set[tuple[int, int]] = set()
        path = Path(conf["test.output.dir"]) / f"counts-{context.task_id}.log"
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        with open(path, "rb") as f:
            data = f.read()
        complete = data.rfind(b"\n") + 1
        if complete < len(data):              # a line cut by a crash: its tuples were not acked
            os.truncate(self.fd, complete)
        for line in data[:complete].decode().splitlines():
            sid, pos, word, n = line.split()
            self.seen.add((int(sid), int(pos)))
            self.counts[word] = int(n)

    def process_batch(self, tuples):
        fresh: dict[tuple[int, int], str] = {}
        for tup in tuples:
            word, sid, pos = tup.values
            if (sid, pos) not in self.seen:
                fresh[(sid, pos)] = word
        if fresh:
            added: collections.Counter[str] = collections.Counter()
            lines = []
            for (s, p), w in fresh.items():
                added[w] += 1
                lines.append(f"{s} {p} {w} {self.counts[w] + added[w]}\n")
            data = "".join(lines).encode()
            while data:
                data = data[os.write(self.fd, data):]
            os.fsync(self.fd)
            # memory follows the journal only once the journal holds the words: if the write
            # raised, the batch fails and its replay is counted then
            self.seen.update(fresh)
            self.counts.update(added)
        for tup in tuples:
            word = tup.values[0]
            self.emit([word, self.counts[word]], anchors=[tup])

    def cleanup(self):
        os.close(self.fd)


def build(spouts: int = 2, splits: int = 2, counts: int = 2, count_tasks: int | None = None):
    b = TopologyBuilder()
    b.set_spout("sentences", RecordingSpout, parallelism=spouts)
    b.set_bolt("split", SplitBolt, parallelism=splits).shuffle_grouping("sentences")
    count = b.set_bolt("count", CountBolt, parallelism=counts)
    count.fields_grouping("split", ["word"])
    if count_tasks:
        count.set_num_tasks(count_tasks)
    return b.create_topology()


topology = build()
#: two count executors over four count tasks, so a rebalance can change the count executors
#: either way (1 to 4) and move count tasks between executors and workers
rebalance_topology = build(count_tasks=4)
