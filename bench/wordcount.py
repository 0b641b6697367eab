"""Word count in local mode: spout -> split -> count (fields grouping), one process.

    python -m bench.wordcount [--runs 5] [--sizes 20000 100000]

N sentences of 10 words each (``-c bench.parallelism=2``: two split and two count tasks instead
of one each, so every emit chooses its task); the figure is the *marginal* rate between two sizes,
(words2 - words1) / (t2 - t1), which cancels start-up and shut-down. Forms: per-tuple bolts and
batch (``process_batch``) bolts, acking off (``topology.acker.executors: 0``) and on. Prints the
median of ``--runs`` runs per case.

Each process first makes one untimed run of the smaller size per case (the first run in a
process pays one-time costs the later ones do not). A run must count exactly its words (and,
acking on, see every sentence acked once) within :func:`deadline` seconds, and a pair whose
larger size took no longer than its smaller is rejected and run again; a case that still fails
is reported as failed. ``-c`` may not set what the cases set themselves (:data:`OWNED`).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from collections import Counter
from operator import itemgetter
from typing import Any

from bench import host
from bench.overrides import clashes, parse
from squall import Bolt, LocalCluster, Spout, TopologyBuilder
from squall.api.topology import Topology

SENTENCE = "the quick brown fox jumps over the lazy dog again"
_first = itemgetter(0)
_done = threading.Event()
_state: dict[str, Any] = {}
#: the count bolt instances of the current run: each counts its own words (with two workers
#: in one process, two loop threads would lose updates to one shared counter)
_counters: list[Any] = []
#: the (batch, acking) cases this process has made its untimed warm-up run of
_warmed: set[tuple[bool, bool]] = set()
#: the keys a case sets itself, and what sets them: a ``-c`` of one is refused
OWNED = {"bench.sentences": "the run's size (--sizes)",
         "bench.tracked": "the case's acking (ids on the spout's tuples when on)",
         "bench.spout.many": "the case's form",
         "topology.acker.executors": "the case's acking (1 acker on, 0 off)"}
#: tries of a pair before a case fails (a pair whose larger size took no longer is rejected)
PAIR_TRIES = 3


class RunFailed(Exception):
    """A run or a pair that gives no measurement: words missing or extra, sentences not
    acked exactly once, the deadline passed, or a larger size that took no longer."""


class BenchSpout(Spout):
    outputs = ["sentence"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.n = conf["bench.sentences"]
        self.tracked = conf["bench.tracked"]
        self.many = conf["bench.spout.many"]
        self.i = 0

    def next_tuple(self) -> None:
        i = self.i
        if i < self.n:
            if self.tracked:
                self.i = i + 1
                self.emit((SENTENCE,), tup_id=i)
            elif self.many:         # batch form, untracked: up to 100 sentences per call
                k = min(100, self.n - i)
                self.i = i + k
                self.emit_many([(SENTENCE,)] * k)
            else:
                self.i = i + 1
                self.emit((SENTENCE,))

    def ack(self, tup_id: Any) -> None:
        _state["acked"] += 1


class Split(Bolt):
    outputs = ["word"]

    def process(self, tup: Any) -> None:
        emit = self.emit
        for w in tup.values[0].split():
            emit((w,))


class Count(Bolt):
    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.counts: dict[str, int] = {}
        self.words = 0
        _counters.append(self)

    def process(self, tup: Any) -> None:
        w = tup.values[0]
        self.counts[w] = self.counts.get(w, 0) + 1
        self.words += 1


class SplitBatch(Bolt):
    outputs = ["word"]

    def process_batch(self, tuples: list[Any]) -> None:
        emit_many = self.emit_many
        for tup in tuples:
            emit_many(list(zip(tup.values[0].split())), anchors=(tup,))


class CountBatch(Bolt):
    lazy_batch = True           # read the batch's values without a Tuple per word

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.counts: Counter[str] = Counter()
        self.words = 0
        _counters.append(self)

    def process_batch(self, tuples: Any) -> None:
        self.counts.update(map(_first, tuples.values))
        self.words += len(tuples)


def reset() -> None:
    _state.update(acked=0)
    _counters.clear()


def counted() -> int:
    """Words the count bolts of the current run have counted."""
    return sum(c.words for c in _counters)


def topology(batch: bool, parallelism: int = 1) -> Topology:
    """One spout task; ``parallelism`` split and count tasks (with more than one, every emit
    goes through its grouping's choice, as in a cluster)."""
    b = TopologyBuilder()
    b.set_spout("sentences", BenchSpout)
    b.set_bolt("split", SplitBatch if batch else Split, parallelism).shuffle_grouping(
        "sentences")
    b.set_bolt("count", CountBatch if batch else Count, parallelism).fields_grouping(
        "split", ["word"])
    return b.create_topology()


def deadline(n: int) -> float:
    """Seconds a run of ``n`` sentences may take from submit to its last word: a minute,
    plus a second per 200 sentences (2,000 words/s, a hundredth of this host's rate, so a
    run under valgrind or an opcode tracer fits too)."""
    return 60 + n / 200


def check_run(n: int, acking: bool, words: int, acked: int) -> None:
    """Raise :class:`RunFailed` unless a run of ``n`` sentences counted exactly ``n`` x 10
    words and, acking on, saw exactly ``n`` acks."""
    if words != n * 10:
        raise RunFailed(f"{words:,} words counted for {n * 10:,} ("
                        + ("extra words" if words > n * 10 else "words lost") + ")")
    if acking and acked != n:
        raise RunFailed(f"{acked:,} sentences acked for {n:,}")


def run_once(n: int, batch: bool, acking: bool, conf: dict[str, Any] | None = None,
             timeout: float | None = None) -> tuple[float, float]:
    """(wall, process CPU) seconds from submit until every word is counted (and every
    sentence acked). Raises :class:`RunFailed` when that takes over ``timeout`` seconds
    (default :func:`deadline`) or the counts are not exact (:func:`check_run`, once the
    cluster has stopped, so late extra words count too), ``ValueError`` when ``conf`` sets a
    key the case sets (:data:`OWNED`)."""
    bad = clashes(conf or {}, OWNED)
    if bad:
        raise ValueError("; ".join(bad))
    reset()
    target = n * 10
    limit = deadline(n) if timeout is None else timeout
    topo_conf = {"bench.sentences": n, "bench.tracked": acking, "bench.spout.many": batch,
                 "topology.acker.executors": 1 if acking else 0,
                 "topology.max.spout.pending": 2000 if acking else None, **(conf or {})}
    # the same conf for the cluster: process-wide keys (worker.gc.thresholds) are read there
    with LocalCluster(dict(conf or {})) as cluster:
        t0, c0 = time.perf_counter(), time.process_time()
        parallelism = int(topo_conf.get("bench.parallelism") or 1)
        cluster.submit_topology("bench", topo_conf, topology(batch, parallelism))
        while counted() < target or (acking and _state["acked"] < n):
            if time.perf_counter() - t0 > limit:
                raise RunFailed(f"not done within {limit:g} s: {counted():,} of {target:,} "
                                "words counted" + (f", {_state['acked']:,} of {n:,} sentences "
                                                   "acked" if acking else ""))
            time.sleep(0.002)
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    check_run(n, acking, counted(), _state["acked"])
    return elapsed, cpu


def marginal_rates(sizes: tuple[int, int], small: tuple[float, float],
                   big: tuple[float, float]) -> tuple[float, float]:
    """Marginal (wall, CPU) words/s between the (wall, CPU) seconds of a run of each size;
    raises :class:`RunFailed` when the larger size took no longer, by either clock (noise
    larger than the difference: no rate)."""
    words = (sizes[1] - sizes[0]) * 10
    if big[0] <= small[0] or big[1] <= small[1]:
        raise RunFailed(f"{sizes[1]:,} sentences took no longer than {sizes[0]:,} (wall "
                        f"{big[0]:.3f} s against {small[0]:.3f}, CPU {big[1]:.3f} s against "
                        f"{small[1]:.3f}): the difference is under the noise")
    return words / (big[0] - small[0]), words / (big[1] - small[1])


def marginal(sizes: tuple[int, int], batch: bool, acking: bool,
             **kw: Any) -> tuple[float, float]:
    """Marginal (wall, CPU) words/s between the two sizes. The CPU figure (words per second
    of process CPU time) is what the machine can do, whatever else runs on it.

    The first call for a case in a process first makes one untimed run of the smaller size.
    A pair the larger size of which took no longer is reported on stderr and run again, up
    to :data:`PAIR_TRIES` pairs; then :class:`RunFailed` is raised, as it is for a run that
    fails (:func:`run_once`)."""
    small, big = sizes
    if not 0 < small < big:
        raise ValueError(f"sizes {small}, {big}: need 0 < smaller < larger")
    if (batch, acking) not in _warmed:
        run_once(small, batch, acking, **kw)
        _warmed.add((batch, acking))
    pairs = 0
    while True:
        pairs += 1
        first = run_once(small, batch, acking, **kw)
        second = run_once(big, batch, acking, **kw)
        try:
            return marginal_rates(sizes, first, second)
        except RunFailed as exc:
            if pairs == PAIR_TRIES:
                raise RunFailed(f"{exc}, in {PAIR_TRIES} pairs out of {PAIR_TRIES}: larger "
                                "--sizes are needed") from None
            print(f"bench: pair rejected, running it again: {exc}", file=sys.stderr,
                  flush=True)


def case_name(form: str, acking: bool) -> str:
    """A case as ``--cases`` names it: ``FORM-ACKING``, e.g. ``per-tuple-off``."""
    return f"{form}-{'on' if acking else 'off'}"


CASES = [("per-tuple", False, False), ("per-tuple", False, True),
         ("batch", True, False), ("batch", True, True)]


def checked_run_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, Any]:
    """The conf of ``args.conf`` (``-c`` items, none clashing with a case's :data:`OWNED`
    keys) after checking ``args.sizes`` (0 < smaller < larger); ``p.error`` otherwise. For
    every tool that times the marginal word count (this one, bench.instructions)."""
    try:
        conf = parse(args.conf, OWNED)
    except ValueError as exc:
        p.error(str(exc))
    if not 0 < args.sizes[0] < args.sizes[1]:
        p.error(f"--sizes {args.sizes[0]} {args.sizes[1]}: need 0 < smaller < larger")
    return conf

def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.wordcount")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--sizes", type=int, nargs=2, default=(20_000, 120_000))
    p.add_argument("--cases", nargs="+", metavar="FORM-ACKING",
                   choices=[case_name(form, acking) for form, _, acking in CASES],
                   help="e.g. per-tuple-off batch-on (default: all four)")
    p.add_argument("-c", dest="conf", action="append", default=[], metavar="KEY=VALUE",
                   help="topology config for every run, a YAML value (repeatable)")
    args = p.parse_args(argv)
    conf = checked_run_args(p, args)
    print(host.line(), flush=True)
    print(f"word count, local mode, 1 worker; marginal words/s between {args.sizes[0]:,} and "
          f"{args.sizes[1]:,} sentences of 10 words; median of {args.runs}")
    print(f"  {'form':<10} {'acking':<7} {'wall words/s':>14} {'CPU words/s':>14}   wall runs")
    failed = 0
    for form, batch, acking in CASES:
        if args.cases and case_name(form, acking) not in args.cases:
            continue
        try:
            runs = [marginal(tuple(args.sizes), batch, acking, conf=conf)
                    for _ in range(args.runs)]
        except RunFailed as exc:
            print(f"  {form:<10} {'on' if acking else 'off':<7} failed: {exc}", flush=True)
            failed += 1
            continue
        wall = [r[0] for r in runs]
        cpu = [r[1] for r in runs]
        print(f"  {form:<10} {'on' if acking else 'off':<7} {statistics.median(wall):>14,.0f} "
              f"{statistics.median(cpu):>14,.0f}   "
              f"({', '.join(f'{r / 1000:,.0f}k' for r in wall)})", flush=True)
    if failed:
        raise SystemExit(f"bench: {failed} case(s) failed (see above)")


if __name__ == "__main__":
    main()
