"""Shell bolts whose subprocesses do not leave at the end of their stdin
(``multilang/lingering_bolt.py``), for the tests of what stops them when their worker dies:
``linger`` runs it directly, ``wrapped`` behind a shell that does not ``exec`` it (the
shell's child speaks the protocol). A spout emits a word a second, to both."""
from __future__ import annotations

import sys
import time

from squall import ShellBolt, Spout, TopologyBuilder


class Words(Spout):
    outputs = ["word"]

    def initialize(self, conf, context):
        self.last = 0.0

    def next_tuple(self):
        if time.monotonic() - self.last >= 1:
            self.last = time.monotonic()
            self.emit(["word"])


class Linger(ShellBolt):
    command = [sys.executable, "multilang/lingering_bolt.py"]
    outputs = ["word"]


class WrappedLinger(ShellBolt):
    command = ["bash", "-c", f"{sys.executable} multilang/lingering_bolt.py; true"]
    outputs = ["word"]


def build() -> object:
    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("linger", Linger).shuffle_grouping("words")
    b.set_bolt("wrapped", WrappedLinger).shuffle_grouping("words")
    return b.create_topology()


topology = build()
