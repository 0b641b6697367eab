"""Storm's classic: words get '!!!' appended, twice.

    squall local examples/exclamation.py:topology --duration 3
"""
from __future__ import annotations

import random

from squall import Bolt, Spout, TopologyBuilder

WORDS = ["nathan", "mike", "jackson", "golda", "bertels"]


class TestWordSpout(Spout):
    outputs = ["word"]

    def initialize(self, conf, context):
        self.rng = random.Random(context.task_id)

    def next_tuple(self):
        self.emit([self.rng.choice(WORDS)])


class ExclamationBolt(Bolt):
    outputs = ["word"]

    def process(self, tup):
        self.emit([tup.values[0] + "!!!"])


def build():
    b = TopologyBuilder()
    b.set_spout("word", TestWordSpout, parallelism=2)
    b.set_bolt("exclaim1", ExclamationBolt, parallelism=3).shuffle_grouping("word")
    b.set_bolt("exclaim2", ExclamationBolt, parallelism=2).shuffle_grouping("exclaim1")
    return b.create_topology()


topology = build()
