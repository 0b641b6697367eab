"""A topology that writes to its worker log: for the log tests on a real cluster.

- ``Ticker`` (spout) emits ``test.emit.per.sec`` numbers a second, logs each at DEBUG on the
  ``chatty`` logger (invisible until someone raises that logger's level) and prints every 100th.
- ``Fussy`` (bolt) raises on every 50th number: an error with a traceback in the worker log.
"""
from __future__ import annotations

import logging
import time

from squall import Bolt, Spout, TopologyBuilder

chatty = logging.getLogger("chatty")


class Ticker(Spout):
    outputs = ["n"]

    def initialize(self, conf, context):
        self.interval = 1.0 / float(conf.get("test.emit.per.sec") or 100)
        self.next_at = 0.0
        self.n = 0

    def next_tuple(self):
        now = time.monotonic()
        if now < self.next_at:
            return
        self.next_at = now + self.interval
        self.n += 1
        chatty.debug("ticking %d %s", self.n, "." * 60)
        if self.n % 100 == 0:
            print(f"printed tick {self.n}")
        self.emit([self.n])


class Fussy(Bolt):
    outputs = []

    def process(self, tup):
        if tup.values[0] % 50 == 0:
            raise ValueError(f"fussy about {tup.values[0]}")


def build():
    b = TopologyBuilder()
    b.set_spout("ticker", Ticker)
    b.set_bolt("fussy", Fussy).shuffle_grouping("ticker")
    return b.create_topology()


topology = build()
