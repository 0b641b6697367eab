"""The scale-out word count topology (submitted by ``python -m bench.scale``).

``build(parallelism, batch)`` gives W spout tasks -> split x W (shuffle) -> count x W (fields
grouping on the word). The bolts are ``dwc``'s (``Split``/``Count`` for the per-tuple form,
``SplitBatch``/``CountBatch`` for the batch form); the spout differs from ``dwc``'s in that
every ``next_tuple`` produces 100 sentences of 10 words in both forms:

* per-tuple form, untracked: 100 ``emit`` calls;
* batch form, untracked: one ``emit_many`` of the 100;
* tracked (``bench.tracked``, acking on), either form: 100 ``emit`` calls with a ``tup_id``
  each (``emit_many`` takes no ids), so ``topology.max.spout.pending`` bounds each task.

The spouts never run dry: ``bench.scale`` measures a window of the steady state.
"""
from __future__ import annotations

from typing import Any

from dwc import SENTENCE, Count, CountBatch, Split, SplitBatch

from squall import Spout, TopologyBuilder
from squall.api.topology import Topology

PER_CALL = 100


class Sentences(Spout):
    outputs = ["sentence"]
    many = False        # untracked: one emit_many of PER_CALL sentences instead of PER_CALL emits

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.tracked = bool(conf.get("bench.tracked"))
        self.i = 0

    def next_tuple(self) -> None:
        if self.tracked:
            emit, i = self.emit, self.i
            for k in range(i + 1, i + PER_CALL + 1):
                emit(SENTENCE, tup_id=k)
            self.i = i + PER_CALL
        elif self.many:
            self.emit_many([SENTENCE] * PER_CALL)
        else:
            emit = self.emit
            for _ in range(PER_CALL):
                emit(SENTENCE)


class SentencesBatch(Sentences):
    many = True


def build(parallelism: int, batch: bool) -> Topology:
    """The word count with ``parallelism`` tasks of each component."""
    b = TopologyBuilder()
    b.set_spout("sentences", SentencesBatch if batch else Sentences, parallelism=parallelism)
    b.set_bolt("split", SplitBatch if batch else Split, parallelism=parallelism
               ).shuffle_grouping("sentences")
    b.set_bolt("count", CountBatch if batch else Count, parallelism=parallelism
               ).fields_grouping("split", ["word"])
    return b.create_topology()


def topology() -> Topology:
    """Per-tuple form, one task each (for ``squall submit``; ``bench.scale`` calls build)."""
    return build(1, batch=False)
