"""Rolling top words: a tick-driven sliding window of counts, ranked per window.

Every ``rolling.emit.secs`` each counter emits the counts of the last ``rolling.window.secs``
seconds (a ring of slots advanced by tick tuples); intermediate rankers keep a top-N of their
share of the words and a global ranker merges them.

    squall local examples/rolling_top_words.py:topology --duration 10
"""
from __future__ import annotations

import collections
import random

from squall import Bolt, Spout, TopologyBuilder

WORDS = ("storm squall gale breeze tempest cyclone zephyr monsoon typhoon hurricane "
         "squall squall storm storm storm gale").split()


class RandomWords(Spout):
    outputs = ["word"]

    def initialize(self, conf, context):
        self.rng = random.Random(context.task_id)

    def next_tuple(self):
        self.emit([self.rng.choice(WORDS)])


class SlidingWindow:
    """Counts per object over ``slots`` slots; ``advance()`` drops the oldest slot."""

    def __init__(self, slots):
        self.slots = [collections.Counter() for _ in range(slots)]
        self.head = 0

    def incr(self, obj):
        self.slots[self.head][obj] += 1

    def totals(self):
        total = collections.Counter()
        for slot in self.slots:
            total.update(slot)
        return total

    def advance(self):
        self.head = (self.head + 1) % len(self.slots)
        self.slots[self.head].clear()


class RollingCount(Bolt):
    """Counts words in a sliding window; ticks advance the window and emit its counts."""
    outputs = ["word", "count"]

    def initialize(self, conf, context):
        window = int(conf.get("rolling.window.secs", 9))
        emit_every = int(conf.get("topology.tick.tuple.freq.secs") or 3)
        self.window = SlidingWindow(max(1, window // emit_every))

    def process(self, tup):
        self.window.incr(tup.values[0])

    def process_tick(self, tup):
        for word, count in self.window.totals().items():
            self.emit([word, count])
        self.window.advance()


class Ranker(Bolt):
    """Keeps the top N (word, count) pairs; emits its ranking on every tick."""
    outputs = ["rankings"]

    def initialize(self, conf, context):
        self.top_n = int(conf.get("rolling.top.n", 5))
        self.latest = {}

    def process(self, tup):
        if tup.stream == "default" and "rankings" in tup.fields:
            for word, count in tup.values[0]:
                self.latest[word] = count
        else:
            self.latest[tup.values[0]] = tup.values[1]

    def process_tick(self, tup):
        ranked = sorted(self.latest.items(), key=lambda kv: (-kv[1], kv[0]))[:self.top_n]
        self.emit([ranked])


class Report(Bolt):
    def process(self, tup):
        self.log("top words: " + ", ".join(f"{w}={c}" for w, c in tup.values[0]))


def build(emit_secs=2):
    ticks = {"topology.tick.tuple.freq.secs": emit_secs}
    b = TopologyBuilder()
    b.set_spout("words", RandomWords, parallelism=2)
    b.set_bolt("counter", RollingCount, parallelism=3, config=ticks).fields_grouping(
        "words", ["word"])
    b.set_bolt("intermediate", Ranker, parallelism=2, config=ticks).fields_grouping(
        "counter", ["word"])
    b.set_bolt("total", Ranker, config=ticks).global_grouping("intermediate")
    b.set_bolt("report", Report).shuffle_grouping("total")
    return b.create_topology()


topology = build()
