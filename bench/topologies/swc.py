"""The scale-out word count topology (submitted by ``python -m bench.scale``).

``build(parallelism, batch)`` gives W spout tasks -> split x W (shuffle) -> count x W (fields
grouping on the word). The bolts are ``dwc``'s (``Split``/``Count`` for the per-tuple form,
``SplitBatch``/``CountBatch`` for the batch form); the spout differs from ``dwc``'s in that
every ``next_tuple`` produces 100 sentences of 10 words in both forms, from the corpus
``bench.corpus`` names (``varied``, the default, or ``fixed``: see ``corpus``):

* per-tuple form, untracked: 100 ``emit`` calls;
* batch form, untracked: one ``emit_many`` of the 100;
* tracked (``bench.tracked``, acking on), either form: 100 ``emit`` calls with a ``tup_id``
  each (``emit_many`` takes no ids), so ``topology.max.spout.pending`` bounds each task.

The spouts never run dry: ``bench.scale`` measures a window of the steady state.
"""
from __future__ import annotations

import itertools
from typing import Any

from corpus import period
from dwc import Count, CountBatch, Split, SplitBatch

from squall import Spout, TopologyBuilder
from squall.api.topology import Topology

PER_CALL = 100


class Sentences(Spout):
    outputs = ["sentence"]
    many = False        # untracked: one emit_many of PER_CALL sentences instead of PER_CALL emits

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.tracked = bool(conf.get("bench.tracked"))
        self.i = 0
        # each task from an offset of its own; every sentence's 1-tuple made once, here
        self.batches = itertools.cycle([
            [(s,) for s in sentences] for sentences in
            period(str(conf.get("bench.corpus") or "varied"), PER_CALL,
                   offset=context.task_index * 37)])

    def next_tuple(self) -> None:
        rows = next(self.batches)
        if self.tracked:
            emit, i = self.emit, self.i
            for k, row in enumerate(rows, i + 1):
                emit(row, tup_id=k)
            self.i = i + PER_CALL
        elif self.many:
            self.emit_many(rows)
        else:
            emit = self.emit
            for row in rows:
                emit(row)


class SentencesBatch(Sentences):
    many = True


def build(parallelism: int, batch: bool, count_grouping: str = "fields") -> Topology:
    """The word count with ``parallelism`` tasks of each component. ``count_grouping``
    ``"local"`` (local-or-shuffle instead of fields on the word) keeps every word in the
    worker that split it: no longer a word count (each worker counts its own words), but
    what W workers cost when nothing crosses between them."""
    if count_grouping not in ("fields", "local"):
        raise ValueError(f"count_grouping must be 'fields' or 'local', got {count_grouping!r}")
    b = TopologyBuilder()
    b.set_spout("sentences", SentencesBatch if batch else Sentences, parallelism=parallelism)
    b.set_bolt("split", SplitBatch if batch else Split, parallelism=parallelism
               ).shuffle_grouping("sentences")
    count = b.set_bolt("count", CountBatch if batch else Count, parallelism=parallelism)
    if count_grouping == "local":
        count.local_or_shuffle_grouping("split")
    else:
        count.fields_grouping("split", ["word"])
    return b.create_topology()


def topology() -> Topology:
    """Per-tuple form, one task each (for ``squall submit``; ``bench.scale`` calls build)."""
    return build(1, batch=False)
