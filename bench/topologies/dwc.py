"""The distributed word-count benchmark topology (submitted by ``python -m bench.distributed``).

``topology`` is the per-tuple form, ``batch_topology`` the batch form (``process_batch`` bolts,
the count a ``lazy_batch`` bolt, the spout emitting 100 sentences per call when untracked).
Conf: ``bench.tracked`` (spout tuples carry ids: acking on), ``bench.marker`` (a file the
first spout task writes the time of its first emit to).
"""
from __future__ import annotations

import os
import time
from collections import Counter

from squall import Bolt, Spout, TopologyBuilder

SENTENCE = ("the quick brown fox jumps over the lazy dog again",)


class Sentences(Spout):
    outputs = ["sentence"]
    many = False        # untracked: emit 100 sentences per call with emit_many

    def initialize(self, conf, context):
        self.tracked = bool(conf.get("bench.tracked"))
        self.marker = conf.get("bench.marker") if context.task_index == 0 else None
        self.i = 0

    def next_tuple(self):
        if self.marker:
            with open(self.marker + ".tmp", "w") as f:
                f.write(repr(time.time()))
            os.replace(self.marker + ".tmp", self.marker)
            self.marker = None
        self.i += 1
        if self.tracked:
            self.emit(SENTENCE, tup_id=self.i)
        elif self.many:     # batch form, untracked: 100 sentences per call
            self.emit_many([SENTENCE] * 100)
        else:
            self.emit(SENTENCE)


class SentencesBatch(Sentences):
    many = True


class Split(Bolt):
    outputs = ["word"]

    def process(self, tup):
        emit = self.emit
        for w in tup.values[0].split():
            emit((w,))


class Count(Bolt):
    def initialize(self, conf, context):
        self.counts = {}

    def process(self, tup):
        w = tup.values[0]
        self.counts[w] = self.counts.get(w, 0) + 1


class SplitBatch(Bolt):
    outputs = ["word"]

    def process_batch(self, tuples):
        emit_many = self.emit_many
        for tup in tuples:
            emit_many([(w,) for w in tup.values[0].split()], anchors=(tup,))


class CountBatch(Bolt):
    lazy_batch = True           # read the words without a Tuple each

    def initialize(self, conf, context):
        self.counts = Counter()

    def process_batch(self, tuples):
        self.counts.update(tuples.column("word"))


def build(batch=False):
    b = TopologyBuilder()
    b.set_spout("sentences", SentencesBatch if batch else Sentences, parallelism=2)
    b.set_bolt("split", SplitBatch if batch else Split, parallelism=2).shuffle_grouping(
        "sentences")
    b.set_bolt("count", CountBatch if batch else Count, parallelism=2).fields_grouping(
        "split", ["word"])
    return b.create_topology()


topology = build()
batch_topology = build(batch=True)
