"""A streamparse 5 word count, written as a streamparse user writes one (``Topology`` with
``spec()`` attributes, ``Grouping``, ``par``, ``config``), for ``squall local`` / ``squall
submit`` tests. It leaves the evidence ``acked_wordcount``'s readers read: ``acks-<task>.txt``
and ``counts-<task>.log`` in ``test.output.dir``.

The spout is a ``ReliableSpout`` (it overrides ``emit``: the generic mapping), the bolts plain
``Bolt``s; ``test.split.fail.on: SID`` makes the split raise on that sentence once.
"""
from __future__ import annotations

import collections
import os

from streamparse import Bolt, Grouping, ReliableSpout, Topology

SENTENCES = [
    "the cow jumped over the moon",
    "an apple a day keeps the doctor away",
    "four score and seven years ago",
    "snow white and the seven dwarfs",
    "i am at two with nature",
]


class SentenceSpout(ReliableSpout):
    outputs = ["sentence", "sid"]
    max_fails = 1000

    def initialize(self, storm_conf, context):
        self.dir = storm_conf["test.output.dir"]
        total = int(storm_conf["test.sentences"])
        self.ack_file = os.path.join(self.dir, f"acks-{context['taskid']}.txt")
        self.todo = collections.deque(range(total))

    def next_tuple(self):
        if self.todo:
            i = self.todo.popleft()
            self.emit([SENTENCES[i % len(SENTENCES)], i], tup_id=i)

    def ack(self, tup_id):
        super().ack(tup_id)
        with open(self.ack_file, "a") as f:
            f.write(f"{tup_id}\n")


class SplitBolt(Bolt):
    outputs = ["word", "sid", "pos"]

    def initialize(self, storm_conf, context):
        self.dir = storm_conf["test.output.dir"]
        self.fail_on = storm_conf.get("test.split.fail.on")

    def process(self, tup):
        sentence, sid = tup.values
        if sid == self.fail_on:
            marker = os.path.join(self.dir, f"fail-{sid}.marker")
            if not os.path.exists(marker):
                open(marker, "w").close()
                raise ValueError(f"split refuses sentence {sid} once")
        for pos, word in enumerate(sentence.split()):
            self.emit([word, sid, pos])


class CountBolt(Bolt):
    outputs = ["word", "count"]

    def initialize(self, storm_conf, context):
        self.counts = collections.Counter()
        self.seen = set()
        path = os.path.join(storm_conf["test.output.dir"], f"counts-{context['taskid']}.log")
        self.journal = open(path, "a", buffering=1)

    def process(self, tup):
        word, sid, pos = tup.values
        if (sid, pos) not in self.seen:
            self.seen.add((sid, pos))
            self.counts[word] += 1
            self.journal.write(f"{sid} {pos} {word} {self.counts[word]}\n")
        self.emit([word, self.counts[word]])


class WordCount(Topology):
    config = {"topology.message.timeout.secs": 20}
    sentences = SentenceSpout.spec()
    split = SplitBolt.spec(inputs=[sentences], par=2)
    count = CountBolt.spec(inputs={split: Grouping.fields("word")}, par=2)


class ShellWordCount(Topology):
    """The same components as multi-lang subprocesses (``python -m streamparse.run``)."""
    config = {"topology.message.timeout.secs": 20, "squall.streamparse.mode": "shell"}
    sentences = SentenceSpout.spec()
    split = SplitBolt.spec(inputs=[sentences], par=2)
    count = CountBolt.spec(inputs={split: Grouping.fields("word")}, par=2)
