"""Rolling top words: a tick-driven sliding window of counts, ranked per window.

On every tick (``topology.tick.tuple.freq.secs``) each counter emits the counts of the last
``rolling.window.secs`` seconds (a ring of slots advanced by tick tuples), and a count of 0 for
a word that has left the window; intermediate rankers keep a top-N (``rolling.top.n``) of their
share of the words and a global ranker merges their latest rankings.

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
        window = float(conf.get("rolling.window.secs", 9))
        emit_every = float(conf.get("topology.tick.tuple.freq.secs") or 3)   # may be fractional
        self.window = SlidingWindow(max(1, round(window / emit_every)))
        self.last = set()            # words emitted on the previous tick

    def process(self, tup):
        self.window.incr(tup.values[0])

    def process_tick(self, tup):
        totals = self.window.totals()
        for word in sorted(self.last - totals.keys()):
            self.emit([word, 0])     # left the window: rankers drop it
        for word, count in totals.items():
            self.emit([word, count])
        self.last = set(totals)
        self.window.advance()


class Ranker(Bolt):
    """Keeps the top N (word, count) pairs; emits its ranking on every tick.

    Fed by counters it keeps each word's latest count (dropping words whose count fell to 0);
    fed by other rankers it keeps each one's latest ranking (a word is ranked by one of them
    only, as they are fields-grouped by word) and merges them."""
    outputs = ["rankings"]

    def initialize(self, conf, context):
        self.top_n = int(conf.get("rolling.top.n", 5))
        self.counts = {}             # word -> latest count, from counters
        self.rankings = {}           # task -> latest ranking, from rankers

    def process(self, tup):
        if "rankings" in tup.fields:
            self.rankings[tup.task] = tup.values[0]
        else:
            word, count = tup.values
            if count:
                self.counts[word] = count
            else:
                self.counts.pop(word, None)

    def process_tick(self, tup):
        merged = dict(self.counts)
        for ranking in self.rankings.values():
            merged.update((word, count) for word, count in ranking)
        ranked = sorted(merged.items(), key=lambda kv: (-kv[1], kv[0]))[:self.top_n]
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
