"""The latency benchmark topology (submitted by ``python -m bench.latency``).

The word count of ``dwc.py`` with a timestamp on every tuple: the spout emits
``(sentence, stamp)`` with ``stamp = time.monotonic()`` taken at the emit, split passes the
stamp on with every word, and count keeps ``now - stamp`` for a random sample of the words
it receives. ``time.monotonic()`` is CLOCK_MONOTONIC on Linux, one clock for every process
of the machine, so a stamp taken in one worker process is read in another.

Conf: ``bench.corpus`` (the sentences, ``corpus.py``: ``varied``, the default, or ``fixed``),
``bench.tracked`` (spout tuples carry ids: acking on), ``bench.control`` (a JSON file
``{"rate": sentences/s for all spout tasks together, 0 = unpaced, "p": the share of words
count keeps}`` that spout and count re-read when it changes), ``bench.samples`` (a
directory: each count task appends its samples to ``lat-<task>.bin`` every
``FLUSH_SECS`` while words arrive, as pairs of doubles ``(arrival, latency seconds)``).
"""
from __future__ import annotations

import json
import os
import random
import time
from array import array
from typing import Any

from corpus import sentences

from squall import Bolt, Spout, TopologyBuilder

#: how often spout and count look at the control file, and count writes its samples
FLUSH_SECS = 0.25
#: count reads the clock once every this many words (and at every sampled one)
CHECK_EVERY = 1024


def read_control(path: str, seen: int) -> tuple[int, dict[str, float] | None]:
    """(the control file's mtime, its content if the mtime is not ``seen``, else None)."""
    try:
        mtime = os.stat(path).st_mtime_ns
        if mtime == seen:
            return seen, None
        with open(path) as f:
            return mtime, json.load(f)
    except (OSError, ValueError):       # not written yet, or replaced under us
        return seen, None


class Stamped(Spout):
    """Emits the corpus's sentences in turn (each task from an offset of its own) stamped
    with the emit time, at the control file's rate (this task's share of it) spread evenly:
    each call emits one sentence when one is due, none when the sentences due by now were
    all emitted."""

    outputs = ["sentence", "stamp"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.tracked = bool(conf.get("bench.tracked"))
        self.control = str(conf["bench.control"])
        self.share = 1 / len(context.component_tasks(context.component_id))
        self.corpus = sentences(str(conf.get("bench.corpus") or "varied"))
        self.next_sentence = context.task_index * 37 % len(self.corpus)
        self.mtime = 0
        self.rate = 0.0          # this task's sentences/s; 0: unpaced
        self.origin = time.monotonic()
        self.sent = 0            # sentences since origin
        self.next_check = 0.0
        self.i = 0

    def next_tuple(self) -> None:
        now = time.monotonic()
        if now >= self.next_check:
            self.next_check = now + FLUSH_SECS
            self.mtime, ctl = read_control(self.control, self.mtime)
            if ctl is not None:
                self.rate = float(ctl["rate"]) * self.share
                self.origin, self.sent = now, 0
        if self.rate and self.sent >= (now - self.origin) * self.rate:
            return              # nothing due yet
        self.sent += 1
        self.i += 1
        sentence = self.corpus[self.next_sentence]
        self.next_sentence = (self.next_sentence + 1) % len(self.corpus)
        if self.tracked:
            self.emit((sentence, time.monotonic()), tup_id=self.i)
        else:
            self.emit((sentence, time.monotonic()))


class Split(Bolt):
    outputs = ["word", "stamp"]

    def process(self, tup: Any) -> None:
        emit = self.emit
        sentence, stamp = tup.values
        for w in sentence.split():
            emit((w, stamp))


class Count(Bolt):
    """Counts words; keeps ``(arrival, arrival - stamp)`` for each word with probability
    ``p`` and appends what it kept to its file every ``FLUSH_SECS`` (the harness reads
    what arrived before a moment once a later sample is in the file)."""

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.counts: dict[str, int] = {}
        self.control = str(conf["bench.control"])
        self.path = os.path.join(str(conf["bench.samples"]), f"lat-{context.task_id}.bin")
        self.mtime = 0
        self.p = 0.0
        self.kept = array("d")
        self.left = CHECK_EVERY
        self.next_flush = 0.0
        self.random = random.Random(context.task_id).random

    def process(self, tup: Any) -> None:
        w, stamp = tup.values
        self.counts[w] = self.counts.get(w, 0) + 1
        self.left -= 1
        if self.p and self.random() < self.p:
            now = time.monotonic()
            self.kept.append(now)
            self.kept.append(now - stamp)
        elif self.left > 0:
            return
        else:
            now = time.monotonic()
        if self.left <= 0:
            self.left = CHECK_EVERY
        if now >= self.next_flush:
            self.next_flush = now + FLUSH_SECS
            self.flush()
            self.mtime, ctl = read_control(self.control, self.mtime)
            if ctl is not None:
                self.p = float(ctl["p"])

    def flush(self) -> None:
        if self.kept:
            with open(self.path, "ab") as f:
                self.kept.tofile(f)
            self.kept = array("d")


def build() -> Any:
    b = TopologyBuilder()
    b.set_spout("sentences", Stamped, parallelism=2)
    b.set_bolt("split", Split, parallelism=2).shuffle_grouping("sentences")
    b.set_bolt("count", Count, parallelism=2).fields_grouping("split", ["word"])
    return b.create_topology()


topology = build()
