"""How fast this host runs Python today: a bare word count with no squall in it.

    python -m bench.host [--runs 5]

The same host has measured squall's word count anywhere from 0.6 M to 2 M words/s on
different days with the same code, so a figure alone does not say whether the code or the
host changed. This loop is the least a per-tuple word count can do in Python: a slotted tuple
object per word, a ``process`` call per tuple, a method call per emit and a deque between the
two bolts. ``bench.wordcount`` and ``bench.distributed`` print it first; dividing their figures
by it gives a ratio that moves with the code, not the host.
"""
from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections import deque
from typing import Any

SENTENCE = ("the quick brown fox jumps over the lazy dog again",)


class _Tup:
    __slots__ = ("ackval", "id", "roots", "src", "task", "values")


def _words_per_cpu_second(sentences: int) -> float:
    new = object.__new__
    inbox: deque[Any] = deque()
    counts: dict[str, int] = {}

    def emit(values: tuple[Any, ...], stream: str = "default", anchors: Any = None) -> None:
        t = new(_Tup)
        t.values, t.task, t.src, t.id, t.roots, t.ackval = values, 1, None, None, None, 0
        inbox.append(t)

    def split(tup: Any) -> None:
        for w in tup.values[0].split():
            emit((w,))

    def count(tup: Any) -> None:
        w = tup.values[0]
        counts[w] = counts.get(w, 0) + 1

    t0 = time.process_time()
    for _ in range(sentences // 100):
        batch = []
        for _ in range(100):
            t = new(_Tup)
            t.values, t.task, t.src, t.id, t.roots, t.ackval = SENTENCE, 0, None, None, None, 0
            batch.append(t)
        for _ in map(split, batch):
            pass
        words = list(inbox)
        inbox.clear()
        for _ in map(count, words):
            pass
    return sentences * 10 / (time.process_time() - t0)


def probe(runs: int = 5, sentences: int = 50_000) -> float:
    """The bare loop's words per CPU second, median of ``runs``. The garbage collector is
    off while it runs (the loop makes no cycles), so what else the process has loaded does
    not change the figure."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        _words_per_cpu_second(sentences // 10)      # warm up
        return statistics.median(_words_per_cpu_second(sentences) for _ in range(runs))
    finally:
        if enabled:
            gc.enable()


def line(runs: int = 5) -> str:
    return f"host: bare Python word count {probe(runs):,.0f} words per CPU second (bench.host)"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.host")
    p.add_argument("--runs", type=int, default=5)
    print(line(p.parse_args(argv).runs))


if __name__ == "__main__":
    main()
