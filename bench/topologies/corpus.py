"""The sentences of the scale-out word count (``bench.scale``: squall's ``swc.py`` and the
bytewax dataflow of ``bench.bytewax_wc`` read the same ones).

``varied`` (the default): 1,000 sentences of 10 words drawn with a fixed seed, each word
equally likely, from a vocabulary of 10,000 made-up words of 3 to 9 letters. Under a fields
grouping on the word every count task then gets about 1/W of the words, so adding workers
adds counting capacity. ``fixed``: one sentence, "the quick brown fox jumps over the lazy dog
again", over and over: its 9 distinct words hash to at most 9 count tasks, and the task of
"the" takes a fifth of all words or more, so past a few workers that one task bounds the
rate (a hot key, which no engine spreads under a plain key partitioning).

Sentences are handed out round-robin, 100 per call (:func:`period`); a spout or input
partition starts at an offset of its own so that W of them do not emit in lockstep.
"""
from __future__ import annotations

import random

SENTENCE = "the quick brown fox jumps over the lazy dog again"
KINDS = ("varied", "fixed")
VOCABULARY = 10_000
SENTENCES = 1_000
WORDS_PER_SENTENCE = 10


def sentences(kind: str = "varied") -> list[str]:
    """The corpus ``kind`` names (see the module's text)."""
    if kind == "fixed":
        return [SENTENCE]
    if kind != "varied":
        raise ValueError(f"corpus must be one of {KINDS}, got {kind!r}")
    rng = random.Random(20261128)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocabulary: list[str] = []
    seen: set[str] = set()
    while len(vocabulary) < VOCABULARY:
        word = "".join(rng.choice(letters) for _ in range(rng.randint(3, 9)))
        if word not in seen:
            seen.add(word)
            vocabulary.append(word)
    return [" ".join(rng.choice(vocabulary) for _ in range(WORDS_PER_SENTENCE))
            for _ in range(SENTENCES)]


def period(kind: str, per_call: int, offset: int = 0) -> list[list[str]]:
    """The lists of ``per_call`` sentences a source hands out, round-robin through the
    corpus from ``offset``, over one period (after it they repeat: cycle through them)."""
    corpus = sentences(kind)
    n = len(corpus)
    ring = corpus * (per_call // n + 2)     # any window of per_call sentences is one slice
    out = []
    i = start = offset % n
    while True:
        out.append(ring[i:i + per_call])
        i = (i + per_call) % n
        if i == start:
            return out
