"""A word count whose components are multi-lang subprocesses, for multi-lang tests (submitted as
a code package; the commands run from this folder): a pystorm 3.1.4 spout
(``multilang/sentences_spout.py``), a pystorm split bolt (``multilang/split_bolt.py``, with
its fault injection) and a count bolt written in Node against the protocol
(``multilang/count_bolt.js``). It leaves the evidence ``acked_wordcount``'s readers read:
``acks-<task>.txt`` and ``counts-<task>.log`` in ``test.output.dir``.

Conf keys: ``test.output.dir``, ``test.sentences``, and for the split
``test.split.die.on`` / ``test.split.hang.on`` (a sentence id).
"""
from __future__ import annotations

import sys

from squall import ShellBolt, ShellSpout, TopologyBuilder


class Sentences(ShellSpout):
    command = [sys.executable, "multilang/sentences_spout.py"]
    outputs = ["sentence", "sid"]


class Split(ShellBolt):
    command = [sys.executable, "multilang/split_bolt.py"]
    outputs = ["word", "sid", "pos"]


class WrappedSplit(ShellBolt):
    """The split bolt behind a shell wrapper that does not ``exec`` it (a ``run.sh``): the
    wrapper's child is the one speaking the protocol."""
    command = ["bash", "-c", f"{sys.executable} multilang/split_bolt.py; true"]
    outputs = ["word", "sid", "pos"]


class MsgpackSplit(ShellBolt):
    command = ["env", "MULTILANG_SERIALIZER=msgpack", sys.executable, "multilang/split_bolt.py"]
    outputs = ["word", "sid", "pos"]


class Count(ShellBolt):
    command = ["node", "multilang/count_bolt.js"]
    outputs = ["word", "count"]


def build(split: type = Split, conf: dict | None = None) -> object:
    b = TopologyBuilder()
    b.set_spout("sentences", Sentences)
    b.set_bolt("split", split, parallelism=2, config=conf).shuffle_grouping("sentences")
    b.set_bolt("count", Count, parallelism=2).fields_grouping("split", ["word"])
    return b.create_topology()


topology = build()
