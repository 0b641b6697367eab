"""One process of the floor word count: the scale-out workload in plain Python, no engine.

    python -m bench.floor_wc --proc-id I --addresses HOST:PORT;... --progress FILE
                             [--corpus varied|fixed] [--per-tuple]

Not a benchmark by itself: ``bench.scale --floor`` starts W of these and reads their progress
files (``bench.peers``). It is the least a word of that workload can cost in W CPython
processes that exchange words by key, so that squall's and bytewax's cost ratios can be read
against what the host and the interpreter allow:

- one thread does everything (a second writes the progress file every 0.2 s): take the next
  100 sentences (``bench/topologies/corpus.py``, from an offset per process), split each,
  put each word in the list of the process its ``hash`` names (every process runs with the
  same ``PYTHONHASHSEED``);
- count its own list's words at once: ``Counter.update`` on the list (C's loop), or, with
  ``--per-tuple``, one object per word (its values, a 1-tuple, in a slot) handed to a
  method that updates the count, as a per-tuple bolt is handed a tuple;
- send each other list as one msgpack array over a zmq PUSH socket to that process's PULL
  socket, without blocking; a full socket (zmq's high-water mark) is retried after taking in
  what has arrived, so no two processes wait on each other;
- take in everything that has arrived, counting its words the same way.

No tuple beyond that one object, no acking, no flow control beyond zmq's high-water mark, no
metrics, no failure handling: each of those is what an engine adds on top of this.
"""
from __future__ import annotations

import itertools
import os
from collections import Counter
from collections.abc import Callable

import msgpack
import zmq

from bench import peers
from bench.topologies.corpus import period

PER_CALL = 100
_counted = [0]      # words this process has counted


class Word:
    """What ``--per-tuple`` hands the count: the values, nothing else."""
    __slots__ = ("values",)

    def __init__(self, values: tuple[str]) -> None:
        self.values = values


class Count:
    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def process(self, tup: Word) -> None:
        word = tup.values[0]
        self.counts[word] = self.counts.get(word, 0) + 1


def counter(per_tuple: bool) -> Callable[[list[str]], None]:
    """What counts a list of words."""
    if not per_tuple:
        counts: Counter[str] = Counter()
        return counts.update
    process = Count().process

    def each(words: list[str]) -> None:
        for w in words:
            process(Word((w,)))
    return each


def run(proc_id: int, addresses: list[str], corpus: str, per_tuple: bool) -> None:
    """Count words forever (until the process is stopped)."""
    n = max(len(addresses), 1)
    ctx = zmq.Context(io_threads=1)
    pull = ctx.socket(zmq.PULL)
    pushes: list[zmq.Socket | None] = [None] * n
    if n > 1:
        pull.bind(f"tcp://{addresses[proc_id]}")
        for j, address in enumerate(addresses):
            if j != proc_id:
                pushes[j] = ctx.socket(zmq.PUSH)
                pushes[j].connect(f"tcp://{address}")     # type: ignore[union-attr]
    count = counter(per_tuple)
    packb, unpackb = msgpack.packb, msgpack.unpackb

    def take_in() -> None:
        while True:
            try:
                msg = pull.recv(zmq.NOBLOCK, copy=True)
            except zmq.Again:
                return
            words = unpackb(msg)
            count(words)
            _counted[0] += len(words)

    for batch in itertools.cycle(period(corpus, PER_CALL, offset=proc_id * 37)):
        outs: list[list[str]] = [[] for _ in range(n)]
        for sentence in batch:
            for w in sentence.split():
                outs[hash(w) % n].append(w)
        mine = outs[proc_id]
        count(mine)
        _counted[0] += len(mine)
        for j, words in enumerate(outs):
            sock = pushes[j]
            if sock is None or not words:
                continue
            data = packb(words)
            while True:
                try:
                    sock.send(data, zmq.NOBLOCK, copy=True)
                    break
                except zmq.Again:
                    pull.poll(1)
                    take_in()
        if n > 1:
            take_in()


def main(argv: list[str] | None = None) -> None:
    p = peers.parser("python -m bench.floor_wc")
    p.add_argument("--per-tuple", action="store_true",
                   help="count through an object and a method call per word")
    args = p.parse_args(argv)
    if os.environ.get("PYTHONHASHSEED") in (None, "random"):
        raise SystemExit("bench.floor_wc: set PYTHONHASHSEED (the same in every process)")
    peers.report(args.progress, _counted)
    run(args.proc_id, peers.addresses(args.addresses), args.corpus, args.per_tuple)


if __name__ == "__main__":
    main()
