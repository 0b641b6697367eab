"""Word count with exactly-once state: the counts live in a StatefulBolt's checkpointed state,
so they survive ``kill -9`` of the counting worker, and a sentence replayed after a failure is
counted once.

    squall local examples/stateful_wordcount.py:topology --duration 10
    squall submit examples/stateful_wordcount.py:topology --name stateful-wordcount \\
        -c topology.state.provider=redis \\
        -c "topology.state.provider.config={host: 127.0.0.1, port: 6379}"

The ``memory`` provider (the default) keeps state in the worker's process: right for local
mode. With ``redis``, kill the worker running ``count`` (``kill -9``): the supervisor starts it
again, every stateful task goes back to the last committed checkpoint, the sentences whose
checkpoint had not committed are replayed, and the counts come out exact. (The spout keeps its
position in memory, as a spout reading Kafka keeps it in Kafka; a restarted spout here starts
its sequence again.)
"""
from __future__ import annotations

from squall import Bolt, Spout, StatefulBolt, TopologyBuilder

LINES = [
    "the cow jumped over the moon",
    "an apple a day keeps the doctor away",
    "four score and seven years ago",
    "snow white and the seven dwarfs",
]


class SentenceSpout(Spout):
    """Emits numbered lines (up to ``wordcount.sentences``; none: forever) and replays a line
    when its tuple tree fails."""
    outputs = ["sentence"]

    def initialize(self, conf, context):
        self.limit = conf.get("wordcount.sentences")
        self.next_id = 0
        self.replay = []

    def next_tuple(self):
        if self.replay:
            i = self.replay.pop()
        elif self.limit is None or self.next_id < self.limit:
            i = self.next_id
            self.next_id += 1
        else:
            return
        self.emit([LINES[i % len(LINES)]], tup_id=i)

    def fail(self, tup_id):
        self.replay.append(tup_id)


class SplitSentence(Bolt):
    outputs = ["word"]

    def process(self, tup):
        for word in tup.values[0].split():
            self.emit([word])


class WordCount(StatefulBolt):
    """Counts in the checkpointed state; emits each word's running count."""
    outputs = ["word", "count"]

    def init_state(self, state):
        self.counts = state          # the last committed counts, after a restart or rollback

    def process(self, tup):
        word = tup.values[0]
        n = self.counts.get(word, 0) + 1
        self.counts.put(word, n)
        self.emit([word, n])


def build(spout=SentenceSpout, parallelism=2):
    b = TopologyBuilder()
    b.set_spout("sentences", spout)
    b.set_bolt("split", SplitSentence, parallelism=parallelism).shuffle_grouping("sentences")
    b.set_bolt("count", WordCount, parallelism=parallelism).fields_grouping("split", ["word"])
    return b.create_topology()


topology = build()
