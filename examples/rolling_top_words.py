"""Rolling top words: word counts over a sliding window, ranked.

Each counter is a :class:`squall.WindowedBolt` over a sliding window of processing time: on
every slide it emits the new count of each word that entered or left the window (0 for a
word that left; a window holding no word is not evaluated, so a counter whose input stops
keeps its last counts until its next word); intermediate rankers keep a top-N
(``rolling.top.n``) of their share of the words and a global ranker merges their latest
rankings, each reporting on every tick (``topology.tick.tuple.freq.secs``).

    squall local examples/rolling_top_words.py:topology --duration 10
"""
from __future__ import annotations

import collections
import random

from squall import Bolt, Duration, Spout, TopologyBuilder, WindowedBolt

WORDS = ("storm squall gale breeze tempest cyclone zephyr monsoon typhoon hurricane "
         "squall squall storm storm storm gale").split()


class RandomWords(Spout):
    outputs = ["word"]

    def initialize(self, conf, context):
        self.rng = random.Random(context.task_id)

    def next_tuple(self):
        self.emit([self.rng.choice(WORDS)])


class RollingCount(WindowedBolt):
    """Counts words over a sliding window of processing time (9 s sliding by 3 s; the build
    sets both through Storm's component keys). Each evaluation adds the window's new words
    and takes off the ones that left, then emits the count of every word that changed (0
    for a word no longer in the window, so rankers drop it)."""
    outputs = ["word", "count"]
    window = Duration(seconds=9)
    slide = Duration(seconds=3)

    def initialize(self, conf, context):
        self.counts = collections.Counter()

    def process_window(self, window):
        changed = set()
        for tup in window.expired:
            word = tup.values[0]
            self.counts[word] -= 1
            if not self.counts[word]:
                del self.counts[word]
            changed.add(word)
        for tup in window.new:
            self.counts[tup.values[0]] += 1
            changed.add(tup.values[0])
        for word in sorted(changed):
            self.emit([word, self.counts.get(word, 0)])


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


def build(window_ms=9000, slide_ms=3000, rank_secs=2):
    """Counters over a ``window_ms`` window sliding by ``slide_ms``; rankers report every
    ``rank_secs``."""
    window = {"topology.bolts.window.length.duration.ms": window_ms,
              "topology.bolts.sliding.interval.duration.ms": slide_ms}
    ticks = {"topology.tick.tuple.freq.secs": rank_secs}
    b = TopologyBuilder()
    b.set_spout("words", RandomWords, parallelism=2)
    b.set_bolt("counter", RollingCount, parallelism=3, config=window).fields_grouping(
        "words", ["word"])
    b.set_bolt("intermediate", Ranker, parallelism=2, config=ticks).fields_grouping(
        "counter", ["word"])
    b.set_bolt("total", Ranker, config=ticks).global_grouping("intermediate")
    b.set_bolt("report", Report).shuffle_grouping("total")
    return b.create_topology()


topology = build()
