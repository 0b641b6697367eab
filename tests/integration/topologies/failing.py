"""A topology whose bolt raises in ``initialize`` (``test.fail.init: true``): its workers
cannot start. For the supervisor's backoff and the start-failure report."""
from __future__ import annotations

from squall import Bolt, Spout, TopologyBuilder


class Idle(Spout):
    outputs = ["x"]

    def next_tuple(self):
        pass


class Broken(Bolt):
    def initialize(self, conf, context):
        if conf.get("test.fail.init"):
            raise RuntimeError("the broken bolt cannot open its database")

    def process(self, tup):
        pass


def build():
    b = TopologyBuilder()
    b.set_spout("idle", Idle)
    b.set_bolt("broken", Broken).shuffle_grouping("idle")
    return b.create_topology()


topology = build()
