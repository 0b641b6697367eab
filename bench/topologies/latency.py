"""The latency benchmark topology (submitted by ``python -m bench.latency``).

The word count of ``dwc.py`` with two timestamps on every tuple: the spout emits
``(sentence, due, emitted)``, split passes both on with every word, and count keeps
``now - due`` and ``now - emitted`` for a random sample of the words it receives. ``emitted``
is ``time.monotonic()`` when the spout emits the sentence; ``due`` is when the paced schedule
wanted it emitted (``origin + sent / rate``), the emit time when unpaced. A stall that holds
the spout's loop back delays the emits too, so latency from ``emitted`` leaves the stall's
wait out (coordinated omission); latency from ``due`` keeps it, as a user whose requests
arrive on schedule would see it. ``time.monotonic()`` is CLOCK_MONOTONIC on Linux, one clock
for every process of the machine, so a stamp taken in one worker process is read in another.

Conf: ``bench.corpus`` (the sentences, ``corpus.py``: ``varied``, the default, or ``fixed``),
``bench.tracked`` (spout tuples carry ids: acking on), ``bench.control`` (a JSON file
``{"rate": sentences/s for all spout tasks together, 0 = unpaced, "p": the share of words
count keeps}`` that spout and count re-read when it changes), ``bench.samples`` (a
directory: each count task appends its samples to ``lat-<task>.bin`` every
``FLUSH_SECS`` while words arrive, as triples of doubles ``(arrival, seconds since due,
seconds since emitted)``).
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
    with the time each was due and the time it was emitted, at the control file's rate (this
    task's share of it) spread evenly: each call emits one sentence when one is due, none
    when the sentences due by now were all emitted. Sentences that fell behind the schedule
    go out back to back, each with its own due time."""

    outputs = ["sentence", "due", "emitted"]

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
        if self.rate:
            due = self.origin + self.sent / self.rate
            if due >= now:
                return          # nothing due yet
        else:
            due = now
        self.sent += 1
        self.i += 1
        sentence = self.corpus[self.next_sentence]
        self.next_sentence = (self.next_sentence + 1) % len(self.corpus)
        if self.tracked:
            self.emit((sentence, due, now), tup_id=self.i)
        else:
            self.emit((sentence, due, now))


class Split(Bolt):
    outputs = ["word", "due", "emitted"]

    def process(self, tup: Any) -> None:
        emit = self.emit
        sentence, due, emitted = tup.values
        for w in sentence.split():
            emit((w, due, emitted))


class Count(Bolt):
    """Counts words; keeps ``(arrival, arrival - due, arrival - emitted)`` for each word
    with probability ``p`` and appends what it kept to its file every ``FLUSH_SECS`` (the
    harness reads what arrived before a moment once a later sample is in the file)."""

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
        w, due, emitted = tup.values
        self.counts[w] = self.counts.get(w, 0) + 1
        self.left -= 1
        if self.p and self.random() < self.p:
            now = time.monotonic()
            self.kept.extend((now, now - due, now - emitted))
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
