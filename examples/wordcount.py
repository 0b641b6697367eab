"""Word count, in the per-tuple form and the batch form.

    squall local examples/wordcount.py:topology --duration 5
    squall local examples/wordcount.py:batch_topology --duration 5
    squall submit examples/wordcount.py:topology --name wordcount     (on a cluster)
"""
from __future__ import annotations

import collections
import itertools

from squall import Bolt, Spout, TopologyBuilder

LINES = [
    "four score and seven years ago our fathers brought forth on this continent",
    "a new nation conceived in liberty and dedicated to the proposition",
    "that all men are created equal now we are engaged in a great civil war",
]


class SentenceSpout(Spout):
    """Emits the lines in a loop; replays a line when its tuple tree fails."""
    outputs = ["sentence"]

    def initialize(self, conf, context):
        self.limit = conf.get("wordcount.sentences")        # None: run forever
        self.ids = itertools.count()
        self.pending = {}

    def next_tuple(self):
        i = next(self.ids)
        if self.limit is not None and i >= self.limit:
            return
        line = LINES[i % len(LINES)]
        self.pending[i] = line
        self.emit([line], tup_id=i)

    def ack(self, tup_id):
        self.pending.pop(tup_id, None)

    def fail(self, tup_id):
        self.emit([self.pending[tup_id]], tup_id=tup_id)


class SplitSentence(Bolt):
    outputs = ["word"]

    def process(self, tup):
        for word in tup.values[0].split():
            self.emit([word])


class WordCount(Bolt):
    outputs = ["word", "count"]

    def initialize(self, conf, context):
        self.counts = collections.Counter()

    def process(self, tup):
        word = tup.values[0]
        self.counts[word] += 1
        self.emit([word, self.counts[word]])


class SplitSentenceBatch(Bolt):
    """The batch form: one call per inbound batch; anchors are explicit."""
    outputs = ["word"]

    def process_batch(self, tuples):
        for tup in tuples:
            self.emit_many([(word,) for word in tup.values[0].split()], anchors=[tup])


class WordCountBatch(Bolt):
    """lazy_batch: the batch arrives as a TupleBatch; reading a column builds no Tuples."""
    outputs = ["word", "count"]
    lazy_batch = True

    def initialize(self, conf, context):
        self.counts = collections.Counter()

    def process_batch(self, tuples):
        words = tuples.column("word")
        counts = self.counts
        counts.update(words)
        # one (word, count) per distinct word of the batch: its count after this batch
        self.emit_many([(w, counts[w]) for w in dict.fromkeys(words)])


def build(split=SplitSentence, count=WordCount, parallelism=2):
    b = TopologyBuilder()
    b.set_spout("sentences", SentenceSpout)
    b.set_bolt("split", split, parallelism=parallelism).shuffle_grouping("sentences")
    b.set_bolt("count", count, parallelism=parallelism).fields_grouping("split", ["word"])
    return b.create_topology()


topology = build()
batch_topology = build(SplitSentenceBatch, WordCountBatch)
