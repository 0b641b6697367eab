"""One process of the bytewax word count that ``python -m bench.scale`` compares squall with.

    python -m bench.bytewax_wc --proc-id I --addresses HOST:PORT;... --progress FILE
                              [--corpus varied|fixed]

Not a benchmark by itself: ``bench.scale`` starts W of these (one bytewax worker each, joined
by ``bytewax.testing.cluster_main`` over 127.0.0.1) and reads their progress files. The
dataflow is the scale-out workload: every worker's input partition yields 100 sentences of 10
words per ``next_batch`` without end, from the corpus ``--corpus`` names
(``bench/topologies/corpus.py``, as squall's spouts, each partition from an offset of its
own) -> ``flat_map`` to words (one call per sentence) -> ``key_on`` the word ->
``stateful_map`` keeping a running count per word (bytewax routes each key to one worker, as
a fields grouping does) -> a sink that only counts what it is given.

Its progress file is ``bench.peers``'s. Needs ``bytewax==0.21.1`` (the ``bench`` extra).
"""
from __future__ import annotations

import itertools
from typing import Any

import bytewax.operators as op
from bytewax.dataflow import Dataflow
from bytewax.inputs import DynamicSource, StatelessSourcePartition
from bytewax.outputs import DynamicSink, StatelessSinkPartition
from bytewax.testing import cluster_main

from bench import peers
from bench.topologies.corpus import period

PER_CALL = 100
_corpus = ["varied"]    # set from --corpus before the flow is built

_counted = [0]      # words that reached this process's sink


class _Sentences(StatelessSourcePartition[str]):
    def __init__(self, worker_index: int) -> None:
        self.batches = itertools.cycle(period(_corpus[0], PER_CALL, offset=worker_index * 37))

    def next_batch(self) -> list[str]:
        return next(self.batches)


class Sentences(DynamicSource[str]):
    """Every worker reads its own endless share of the sentences."""

    def build(self, step_id: str, worker_index: int, worker_count: int) -> _Sentences:
        return _Sentences(worker_index)


class _Counted(StatelessSinkPartition[Any]):
    def write_batch(self, items: list[Any]) -> None:
        _counted[0] += len(items)


class CountingSink(DynamicSink[Any]):
    def build(self, step_id: str, worker_index: int, worker_count: int) -> _Counted:
        return _Counted()


def _add(count: int | None, _word: str) -> tuple[int, int]:
    n = (count or 0) + 1
    return n, n


def flow() -> Dataflow:
    f = Dataflow("scale_wc")
    sentences = op.input("sentences", f, Sentences())
    words = op.flat_map("split", sentences, str.split)
    keyed = op.key_on("word", words, lambda w: w)
    counts = op.stateful_map("count", keyed, _add)
    op.output("counted", counts, CountingSink())
    return f


def main(argv: list[str] | None = None) -> None:
    args = peers.parser("python -m bench.bytewax_wc").parse_args(argv)
    _corpus[0] = args.corpus
    peers.report(args.progress, _counted)
    cluster_main(flow(), peers.addresses(args.addresses), args.proc_id)


if __name__ == "__main__":
    main()
