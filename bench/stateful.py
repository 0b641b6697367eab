"""Stateful word count: a StatefulBolt counter (memory and redis providers) against a plain
counter, alternated in one run.

    python -m bench.stateful [--rounds 5] [--warmup 3] [--seconds 8] [--interval-ms 1000]
    python -m bench.stateful --instructions [--sizes 2000 6000]
    python -m bench.stateful --paired [--rounds 5] [--arms plain memory]

Spout -> split (shuffle) -> count (fields grouping) in one LocalCluster worker, one task each,
sentences of 10 words, acking on (stateful bolts need it). Arms: ``plain`` (a Bolt counting
in a dict), ``memory`` (a StatefulBolt counting in its KeyValueState, ``memory`` provider) and
``redis`` (the same with the ``redis`` provider, against a redis-server this bench starts on a
free port). Checkpoints every ``--interval-ms``. The spout emits without end; after
``--warmup`` seconds, the words the count bolt processed and the sentences acked over the
next ``--seconds`` give the rates (steady state: start-up, shut-down and the checkpoint rhythm
stay out; acks of the stateful arms arrive once a checkpoint, so their ack rate is the rougher
figure). "CPU" divides by the process's CPU time over the window instead of wall time. Each
round runs every arm once, in a rotating order, each in a fresh LocalCluster; printed: the
median rates per arm and the median of the per-round ratios to ``plain`` (by CPU rate).

``--paired``: each round runs ``plain`` and each other arm at the same time, in two processes
of their own (same workload and conf), and takes the ratio of their CPU rates: on a shared host
whose load changes from second to second both sides of a ratio see the same load, where the
alternated runs above see different moments of it. Both processes then share the caches and
the cores, so its ratios are not the alternated ones (see bench/README.md, "stateful").

``--instructions``: CPU instructions per word counted by valgrind (callgrind), each arm in a
fresh process, marginal between two numbers of sentences (a finite spout; a run ends when the
count bolt has seen every word), for ``plain``, ``memory`` and ``dict`` (a StatefulBolt that
counts in a plain dict instead of its state: the checkpointing machinery alone). A figure that
does not move with the host's load, though checkpoints still follow the wall clock (valgrind
slows the run about 50 times, so there are more checkpoints per word than without it).
``topology.max.spout.pending`` is 2000 for ``plain`` and 200000 for the stateful arms, whose
acks wait up to a checkpoint interval (pending must cover what a second of input holds).
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench import host
from squall import Bolt, LocalCluster, Spout, StatefulBolt, TopologyBuilder
from squall.api.topology import Topology

PENDING = 200_000
SENTENCE = "the quick brown fox jumps over the lazy dog again"
_state: dict[str, int] = {"acked": 0, "words": 0}


class Sentences(Spout):
    outputs = ["sentence"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.i = 0

    def next_tuple(self) -> None:
        self.i += 1
        self.emit((SENTENCE,), tup_id=self.i)

    def ack(self, tup_id: Any) -> None:
        _state["acked"] += 1

    def fail(self, tup_id: Any) -> None:
        self.emit((SENTENCE,), tup_id=tup_id)


class Split(Bolt):
    outputs = ["word"]

    def process(self, tup: Any) -> None:
        emit = self.emit
        for w in tup.values[0].split():
            emit((w,))


class PlainCount(Bolt):
    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.counts: dict[str, int] = {}

    def process(self, tup: Any) -> None:
        w = tup.values[0]
        self.counts[w] = self.counts.get(w, 0) + 1
        _state["words"] += 1


class FiniteSentences(Sentences):
    """``bench.sentences`` sentences, then nothing."""

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.i = 0
        self.n = conf["bench.sentences"]

    def next_tuple(self) -> None:
        if self.i < self.n:
            self.i += 1
            self.emit((SENTENCE,), tup_id=self.i)


class DictCount(StatefulBolt):
    """A StatefulBolt counting in a plain dict: the checkpoint path without the state."""

    def init_state(self, state: Any) -> None:
        self.counts: dict[str, int] = {}

    def process(self, tup: Any) -> None:
        w = tup.values[0]
        self.counts[w] = self.counts.get(w, 0) + 1
        _state["words"] += 1


class StatefulCount(StatefulBolt):
    def init_state(self, state: Any) -> None:
        self.counts = state

    def process(self, tup: Any) -> None:
        w = tup.values[0]
        self.counts.put(w, self.counts.get(w, 0) + 1)
        _state["words"] += 1


COUNTS = {"plain": PlainCount, "memory": StatefulCount, "redis": StatefulCount,
          "dict": DictCount}


def topology(arm: str, spout: type = Sentences) -> Topology:
    b = TopologyBuilder()
    b.set_spout("sentences", spout)
    b.set_bolt("split", Split).shuffle_grouping("sentences")
    b.set_bolt("count", COUNTS[arm]).fields_grouping("split", ["word"])
    return b.create_topology()


def arm_conf(arm: str, interval_ms: int, redis_conf: dict[str, Any]) -> dict[str, Any]:
    conf: dict[str, Any] = {"topology.acker.executors": 1,
                            "topology.max.spout.pending": 2000 if arm == "plain" else PENDING,
                            "topology.state.checkpoint.interval.ms": interval_ms,
                            "topology.message.timeout.secs": 600}
    if arm in ("memory", "dict"):
        conf["topology.state.provider.config"] = {"key_prefix": uuid.uuid4().hex}
    elif arm == "redis":
        conf["topology.state.provider"] = "redis"
        conf["topology.state.provider.config"] = {**redis_conf,
                                                  "key_prefix": f"bench-{uuid.uuid4().hex}:"}
    return conf


def run_finite(arm: str, sentences: int, interval_ms: int) -> None:
    """One run of ``sentences`` sentences, until the count bolt has seen every word (what
    ``--instructions`` runs under valgrind)."""
    _state.update(acked=0, words=0)
    conf = {**arm_conf(arm, interval_ms, {}), "bench.sentences": sentences}
    with LocalCluster() as cluster:
        cluster.submit_topology("bench-stateful", conf, topology(arm, FiniteSentences))
        while _state["words"] < sentences * 10:
            time.sleep(0.01)


CHILD = "import sys\nfrom bench.stateful import run_finite\n" \
        "run_finite(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))\n"


def instructions(arms: list[str], sizes: tuple[int, int], interval_ms: int) -> None:
    from bench.instructions import callgrind

    def count(arm: str, n: int) -> int:
        return callgrind(CHILD, [arm, str(n), str(interval_ms)])["Ir"]

    small, big = sizes
    print(f"stateful word count, instructions per word (callgrind), marginal between "
          f"{small:,} and {big:,} sentences")
    base = None
    for arm in arms:
        per_word = (count(arm, big) - count(arm, small)) / ((big - small) * 10)
        base = base or (per_word if arm == "plain" else None)
        ratio = f"  x{base / per_word:.2f} of plain's rate" if base else ""
        print(f"  {arm:<8} {per_word:>9,.0f}{ratio}", flush=True)


def run_once(arm: str, interval_ms: int, redis_conf: dict[str, Any], warmup: float,
             seconds: float) -> tuple[float, float, float]:
    """(words/s, words per CPU second, acked words/s) over the measured window."""
    _state.update(acked=0, words=0)
    with LocalCluster() as cluster:
        cluster.submit_topology("bench-stateful", arm_conf(arm, interval_ms, redis_conf),
                                topology(arm))
        time.sleep(warmup)
        t0, c0, w0, a0 = time.perf_counter(), time.process_time(), _state["words"], \
            _state["acked"]
        time.sleep(seconds)
        t1, c1, w1, a1 = time.perf_counter(), time.process_time(), _state["words"], \
            _state["acked"]
    return (w1 - w0) / (t1 - t0), (w1 - w0) / (c1 - c0), (a1 - a0) * 10 / (t1 - t0)


PAIRED_CHILD = "import json, sys\nfrom bench.stateful import run_once\n" \
    "a = json.loads(sys.argv[1])\n" \
    "print('RATES', json.dumps(run_once(a['arm'], a['interval_ms'], a['redis'], a['warmup'], " \
    "a['seconds'])), flush=True)\n"


def paired(arms: list[str], rounds: int, interval_ms: int, redis_conf: dict[str, Any],
           warmup: float, seconds: float) -> None:
    """``--paired``: ``plain`` and each other arm at the same time, each in a process of its
    own; per round the ratio of their CPU rates."""
    import json
    import subprocess
    import sys

    from bench.tree import ROOT, tree_env

    def start(arm: str, env: dict[str, str]) -> subprocess.Popen[str]:
        args = json.dumps({"arm": arm, "interval_ms": interval_ms, "redis": redis_conf,
                           "warmup": warmup, "seconds": seconds})
        return subprocess.Popen([sys.executable, "-c", PAIRED_CHILD, args], env=env, cwd=ROOT,
                                stdout=subprocess.PIPE, text=True)

    def rates(proc: subprocess.Popen[str]) -> list[float]:
        out, _ = proc.communicate()
        for line in out.splitlines():
            if line.startswith("RATES "):
                return list(json.loads(line[6:]))
        raise RuntimeError(f"a paired run printed no rates (exit {proc.returncode})")

    others = [a for a in arms if a != "plain"]
    ratios: dict[str, list[float]] = {arm: [] for arm in others}
    # one hash seed for both (as --instructions): the words' dicts probe alike in both
    with tree_env(None, PYTHONHASHSEED="0") as env:
        for r in range(rounds):
            for arm in others:
                a, b = start("plain", env), start(arm, env)
                plain, this = rates(a), rates(b)
                ratios[arm].append(this[1] / plain[1])
                print(f"  round {r + 1}: plain {plain[1] / 1000:,.0f}k CPU, {arm} "
                      f"{this[1] / 1000:,.0f}k CPU, x{ratios[arm][-1]:.2f}", flush=True)
    print(f"stateful word count, paired (plain and the arm at the same time), checkpoint every "
          f"{interval_ms} ms; words per CPU second over {seconds:g} s after {warmup:g} s")
    for arm in others:
        print(f"  {arm:<8} x plain {statistics.median(ratios[arm]):.2f}   "
              f"({', '.join(f'{x:.2f}' for x in ratios[arm])})", flush=True)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.stateful")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--warmup", type=float, default=3.0)
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--interval-ms", type=int, default=1000)
    p.add_argument("--arms", nargs="+", choices=sorted(COUNTS))
    p.add_argument("--instructions", action="store_true",
                   help="count instructions per word with valgrind instead")
    p.add_argument("--sizes", type=int, nargs=2, default=(2000, 6000),
                   help="sentences of the two --instructions runs")
    p.add_argument("--paired", action="store_true",
                   help="run plain and each other arm at the same time (a loaded host)")
    args = p.parse_args(argv)
    if args.instructions:
        instructions(args.arms or ["plain", "memory", "dict"], tuple(args.sizes),
                     args.interval_ms)
        return
    args.arms = args.arms or ["plain", "memory", "redis"]
    from squall.testing.redis_fixtures import RedisServer
    runs: dict[str, list[tuple[float, float, float]]] = {arm: [] for arm in args.arms}
    ratios: dict[str, list[float]] = {arm: [] for arm in args.arms}
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp) / "redis")
        server.start()
        try:
            print(host.line(), flush=True)
            if args.paired:
                paired(args.arms, args.rounds, args.interval_ms, server.conf(), args.warmup,
                       args.seconds)
                return
            for r in range(args.rounds):
                order = args.arms[r % len(args.arms):] + args.arms[:r % len(args.arms)]
                this = {arm: run_once(arm, args.interval_ms, server.conf(), args.warmup,
                                      args.seconds) for arm in order}
                for arm in args.arms:
                    runs[arm].append(this[arm])
                    if "plain" in this:
                        ratios[arm].append(this[arm][1] / this["plain"][1])
                print(f"  round {r + 1}: " + ", ".join(
                    f"{a} {this[a][0] / 1000:,.0f}k ({this[a][1] / 1000:,.0f}k CPU)"
                    for a in args.arms), flush=True)
        finally:
            server.stop()
    print(f"stateful word count, local mode, 1 worker, acking on, checkpoint every "
          f"{args.interval_ms} ms; words/s over {args.seconds:g} s after {args.warmup:g} s; "
          f"median of {args.rounds} rounds")
    print(f"  {'arm':<8} {'wall words/s':>13} {'CPU words/s':>12} {'acked/s':>10} "
          f"{'x plain':>8}   CPU ratios")
    med = statistics.median
    for arm in args.arms:
        rs = runs[arm]
        ratio = f"{med(ratios[arm]):.2f}" if ratios[arm] else "-"
        print(f"  {arm:<8} {med(r[0] for r in rs):>13,.0f} {med(r[1] for r in rs):>12,.0f} "
              f"{med(r[2] for r in rs):>10,.0f} {ratio:>8}   "
              f"({', '.join(f'{x:.2f}' for x in ratios[arm])})", flush=True)


if __name__ == "__main__":
    main()
