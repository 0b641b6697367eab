"""Latency histograms with logarithmic buckets, for percentiles at a fixed, small cost.

A histogram is a list of :data:`SIZE` counts; :func:`index` maps a latency in milliseconds to
its bucket in O(1) (``math.frexp``): four buckets per power of two, from about 15 ns to about
4.6 hours (latencies outside land in the first or last bucket), so a percentile read from the
buckets is within about 12 % of that of the samples. The executors add to their tasks' lists (a
bolt's pass that crosses a 16th tuple, weighted by its tuples; a spout's 16th completion: a
sample, as Storm samples its stats); the stats timer takes the lists (a fresh one in their
place) into :class:`~squall.metrics.stats.WindowedStats`; snapshots carry them as sparse
``[[index, count], ...]`` lists that add up across executors.
"""
from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from itertools import accumulate
from math import frexp, ldexp

__all__ = ["SIZE", "add_sparse", "index", "merged", "new", "percentiles", "to_sparse"]

SIZE = 160
_LOWEST = -16           # bucket 0 starts at 2 ** -17 ms


def new() -> list[int]:
    """An empty histogram."""
    return [0] * SIZE


def index(ms: float) -> int:
    """The bucket of a latency of ``ms`` milliseconds."""
    if ms <= 0.0:
        return 0
    m, e = frexp(ms)                        # ms = m * 2 ** e, 0.5 <= m < 1
    i = (e - _LOWEST) * 4 + int(m * 8.0) - 4
    return 0 if i < 0 else (SIZE - 1 if i >= SIZE else i)


def _middle(i: int) -> float:
    """The middle of bucket ``i`` in milliseconds."""
    e, s = divmod(i, 4)
    return ldexp((4.5 + s) / 8.0, e + _LOWEST)


def add_sparse(into: list[int], pairs: Iterable[Sequence[int]] | Mapping[int, int]) -> None:
    """Add a sparse histogram (a mapping, or ``[[index, count], ...]``) into the histogram
    ``into``."""
    items = pairs.items() if isinstance(pairs, Mapping) else pairs
    for i, n in items:
        into[int(i)] += int(n)


def merged(hists: Sequence[Sequence[int]]) -> list[int]:
    """The sum of histograms (an empty one for none)."""
    if not hists:
        return new()
    if len(hists) == 1:
        return list(hists[0])
    return [sum(column) for column in zip(*hists)]


def to_sparse(hist: Sequence[int]) -> list[list[int]]:
    """``[[index, count], ...]`` of the non-empty buckets (JSON-ready)."""
    return [[i, n] for i, n in enumerate(hist) if n]


def percentiles(hist: Sequence[int], qs: Sequence[float]) -> list[float]:
    """The ``qs`` quantiles (each 0 < q <= 1) of ``hist`` in milliseconds; 0.0 each when it
    is empty."""
    cumulative = list(accumulate(hist))
    total = cumulative[-1] if cumulative else 0
    if total <= 0:
        return [0.0 for _ in qs]
    last = len(cumulative) - 1
    return [_middle(min(bisect_left(cumulative, q * total), last)) for q in qs]
