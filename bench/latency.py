"""End-to-end latency of the distributed word count: a sentence's due time -> count bolt.

    python -m bench.latency [--seconds 5] [--levels 25 50 90] [--acking off on] [--transport zmq]
                            [--corpus varied|fixed] [--windows 1]

For each acking mode, starts a cluster on 127.0.0.1 as ``bench.distributed`` does (a
ZooKeeper, a nimbus, one supervisor with two slots) and submits
``bench/topologies/latency.py`` in two workers: 2 spout, 2 split (shuffle), 2 count (fields)
executors; acking on adds 2 ackers. The sentences are ``--corpus``'s
(``bench/topologies/corpus.py``: ``varied``, as in ``bench.scale``, or ``fixed``, the one
sentence of the earlier tables). The spout stamps each sentence with the ``time.monotonic()``
(one clock for every process on Linux) at which the paced schedule wanted it emitted (its due
time) and the one at which it was emitted, and the count bolt keeps ``arrival - due`` and
``arrival - emitted`` for a random sample of words. First the spout runs unpaced (due time =
emit time): the count bolts' words/s between worker beats is the saturating rate. Then, on
the same topology, the spout is paced at each level (per cent of that rate, in sentences of 10
words) and, after ``--warmup`` seconds, the samples that arrived in ``--seconds`` give p50 /
p99 / p99.9 from the due time exactly (nearest rank over every kept sample), and p99 from the
emit beside it, labelled "emit-stamped". Latency from the emit leaves out the wait of every
sentence a stall made late (coordinated omission: the stall delays the emits too); latency
from the due time is what a source on schedule sees. The rate is set through a control file
the spouts re-read every 0.25 s. A level whose measured sentences/s falls more than
:data:`REACHED` below its target is marked "not reached": its latency is that of an overload,
not of the level. With acking on, the spout's mean complete latency over the same window comes
from the beats too. ``--windows N`` measures N windows in a row at each level and adds a row
of their medians (one window's tail moves with whatever else ran on the host in it). A window
that saw a process of the cluster end or start (a worker that died and was started again) or a
worker's beat total go down fails, as in ``bench.scale``: it is shown as failed, with no
figure, left out of the medians, and the run exits 1.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.distributed import (
    Beats,
    Cluster,
    WindowSpoiled,
    counted,
    supervisors_up,
    wait_for,
    workers_cpu,
)
from bench.distributed import beat_rates as worker_rates
from bench.overrides import parse
from bench.procs import cluster_processes, same_processes
from squall.daemon.dev_zookeeper import DevZooKeeper

HERE = Path(__file__).resolve().parent
TARGET = str(HERE / "topologies" / "latency.py") + ":topology"
WORDS = 10                      # words per sentence
QUANTILES = (0.5, 0.99, 0.999)
#: a paced level counts as reached when its sentences/s is at least this share of its target
REACHED = 0.97
#: doubles per sample in the count tasks' files: arrival, seconds since due, since emitted
SAMPLE = 3
#: the keys the cases set, and what sets them: a ``-c`` of one is refused
OWNED = {"topology.workers": "the benchmark (2 workers)",
         "topology.acker.executors": "--acking (2 ackers on, 0 off)",
         "topology.max.spout.pending": "--max-pending (acking on; none off)",
         "bench.tracked": "--acking", "bench.control": "the benchmark (the pacing file)",
         "bench.samples": "the benchmark (the samples' directory)", "bench.corpus": "--corpus"}


@dataclass
class Row:
    label: str
    target: float | None        # the paced rate, sentences/s; None unpaced
    sentences: float            # spout emits per second, both tasks
    words: float                # count bolts' executed per second, both tasks
    latency_ms: tuple[float, ...]   # at QUANTILES; empty without samples
    samples: int
    complete_ms: float | None   # the spouts' mean complete latency over the window
    load: float                 # the host's 1-minute load average at the window's end
    emit_p99_ms: float | None = None    # p99 of the same samples from their emit

    @property
    def reached(self) -> bool:
        """Whether the spouts emitted at least :data:`REACHED` of the paced target (always
        true unpaced)."""
        return self.target is None or self.sentences >= REACHED * self.target

    @property
    def shown(self) -> str:
        """The row's label, with "not reached" when the level's rate was not."""
        return self.label if self.reached else f"{self.label} (not reached)"


@dataclass
class Failed:
    """A window that is no measurement: the cluster changed in it (a worker died, or was
    started again), so its figures would mix two worker lives; ``why`` says what changed."""
    label: str
    target: float | None
    why: str

    @property
    def shown(self) -> str:
        return f"{self.label} (failed)"


def quantiles(values: Sequence[float], qs: Sequence[float]) -> tuple[float, ...]:
    """Nearest-rank quantiles: the smallest value with at least q of the values at or
    below it."""
    ordered = sorted(values)
    n = len(ordered)
    return tuple(ordered[min(n - 1, max(0, math.ceil(q * n) - 1))] for q in qs)


class Samples:
    """The count tasks' sample files under ``directory``, each read from where the last read
    stopped. The files grow through a run (a window's worth of samples each); read whole
    after every window, each read cost more than the last (the harness was seen at 80 % of a
    core late in a run, on a host whose two cores the workers share)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.offsets: dict[str, int] = {}       # bytes of each file read so far
        self.unused: dict[str, array] = {}      # samples read that arrived after the last window

    def read(self) -> dict[str, array]:
        """Each task's samples not yet used, with what its file gained since the last read
        appended: a flat array of (arrival, seconds since due, seconds since emitted)
        triples, in arrival order."""
        size = SAMPLE * 8
        for path in sorted(self.directory.glob("lat-*.bin")):
            start = self.offsets.get(path.name, 0)
            with open(path, "rb") as f:
                f.seek(start)
                data = f.read()
            whole = len(data) - len(data) % size        # a write may be under way
            self.unused.setdefault(path.name, array("d")).frombytes(data[:whole])
            self.offsets[path.name] = start + whole
        return self.unused

    def window(self, t1: float, t2: float, tasks: int) -> list[tuple[float, float, float]]:
        """(arrival, latency ms from due, from emit) of the samples that arrived between t1
        and t2, once every task's file holds a sample that arrived after t2 (so none of the
        window is still in memory). What arrived after t2 is kept for the next window; what
        arrived before t1 is dropped."""
        samples = wait_for(lambda: (s := self.read()) and len(s) >= tasks
                           and all(a and a[-SAMPLE] > t2 for a in s.values()) and s,
                           30, "the count tasks' samples")
        out = []
        for name, a in samples.items():
            later = len(a)
            for i in range(0, len(a), SAMPLE):
                if a[i] > t2:
                    later = i
                    break
                if a[i] >= t1:
                    out.append((a[i], a[i + 1] * 1000, a[i + 2] * 1000))
            self.unused[name] = a[later:]
        return out


def beat_rates(b1: dict[str, tuple[float, dict[str, Any]]],
               b2: dict[str, tuple[float, dict[str, Any]]]
               ) -> tuple[float, float, float | None]:
    """(spout emits/s, count executed/s, spouts' mean complete latency in ms) between each
    worker's two beats; the mean from each beat's running mean times its acked count.

    Raises :class:`~bench.distributed.WindowSpoiled` when a worker restarted between its two
    beats (its beat ``seq`` or a total went down) or beat at one end only."""
    rates = worker_rates(b1, b2)
    sentences = sum(n for (_, key), n in rates.items() if key == "sentences")
    words = sum(n for (_, key), n in rates.items() if key == "count")
    acked = complete = 0.0
    for name, (_, beat2) in b2.items():
        ex1 = b1[name][1].get("executors") or {}
        for key, ex in (beat2.get("executors") or {}).items():
            if ex.get("component") == "sentences":
                before = ex1.get(key, {})
                n1, n2 = before.get("acked", 0), ex.get("acked", 0)
                acked += n2 - n1
                complete += (ex.get("complete_latency_ms", 0.0) * n2
                             - before.get("complete_latency_ms", 0.0) * n1)
    return sentences, words, (complete / acked if acked else None)


def set_control(path: Path, rate: float, p: float) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"rate": rate, "p": p}))
    os.replace(tmp, path)


def measure(beats: Beats, processes: Callable[[], dict[int, str]], samples: Samples, label: str,
            target: float | None, warmup: float, seconds: float, dump: Path | None = None
            ) -> Row:
    """One window of ``seconds`` after ``warmup``, between two beats of each worker.

    ``processes`` lists the cluster's processes (pid -> kind); it is read at both ends of the
    window, and :class:`~bench.distributed.WindowSpoiled` is raised if one ended or started
    in it, or if a worker's beats show it restarted (:func:`beat_rates`)."""
    time.sleep(warmup)
    b1 = beats.next(2)
    p1 = processes()
    t1 = time.monotonic()
    time.sleep(seconds)
    b2 = beats.next(2)
    t2 = time.monotonic()
    p2 = processes()
    same_processes(p1, p2, {**p2, **p1})
    sentences, words, complete = beat_rates(b1, b2)
    kept = samples.window(t1, t2, 2)
    lat = [due for _, due, _ in kept]
    if dump is not None:
        dump.mkdir(parents=True, exist_ok=True)
        name = label.replace(" %", "").replace(" #", "-")
        with open(dump / f"{name}.tsv", "w") as f:
            f.writelines(f"{t - t1:.6f}\t{due:.3f}\t{emit:.3f}\n"
                         for t, due, emit in sorted(kept))
    return Row(label, target, sentences, words, quantiles(lat, QUANTILES) if lat else (),
               len(lat), complete, os.getloadavg()[0],
               quantiles([emit for _, _, emit in kept], (0.99,))[0] if kept else None)


def median_row(rows: Sequence[Row], label: str) -> Row:
    """The medians of several windows' figures (each quantile on its own)."""
    with_lat = [r.latency_ms for r in rows if r.latency_ms]
    completes = [r.complete_ms for r in rows if r.complete_ms is not None]
    emits = [r.emit_p99_ms for r in rows if r.emit_p99_ms is not None]
    return Row(label, rows[0].target, statistics.median(r.sentences for r in rows),
               statistics.median(r.words for r in rows),
               tuple(statistics.median(q) for q in zip(*with_lat)) if with_lat else (),
               sum(r.samples for r in rows),
               statistics.median(completes) if completes else None, rows[-1].load,
               statistics.median(emits) if emits else None)


def run_mode(zk: DevZooKeeper, transport: str, acking: bool, levels: Sequence[float],
             seconds: float, warmup: float, keep: int, pending: int,
             extra: Sequence[str], dump: Path | None = None,
             on_row: Callable[[Row | Failed], None] = lambda row: None, windows: int = 1,
             corpus: str = "varied") -> list[Row | Failed]:
    """A fresh cluster for one acking mode: the saturating row, then per level ``windows``
    rows and, with more than one, the row of their medians (each row also given to
    ``on_row`` as it is measured). A window in which the cluster changed (a worker restarted)
    is a :class:`Failed` row, left out of the medians; when the unpaced one fails, no level
    has a rate to be paced at and each is a :class:`Failed` row too."""
    with tempfile.TemporaryDirectory(prefix="squall-bench-lat-") as d:
        tmp = Path(d)
        samples = tmp / "samples"
        samples.mkdir()
        control = tmp / "control.json"
        set_control(control, 0, 0.001)           # unpaced; a few samples only
        cluster = Cluster(tmp, zk, 1, transport)
        beats = None
        rows: list[Row | Failed] = []
        try:
            client = cluster.client()
            wait_for(lambda: supervisors_up(client) == 1, 60, "the supervisor")
            cluster.squall("submit", TARGET, "--name", "wc", "-c", "topology.workers=2",
                           "-c", f"bench.tracked={acking}", "-c", f"bench.control={control}",
                           "-c", f"bench.samples={samples}", "-c", f"bench.corpus={corpus}",
                           "-c", "topology.max.spout.pending=" + (str(pending) if acking
                                                                  else "null"),
                           "-c", f"topology.acker.executors={2 if acking else 0}",
                           *[a for kv in extra for a in ("-c", kv)])
            beats = Beats(cluster.conf, client.topology_info("wc")["id"])
            wait_for(lambda: counted(client) > 0, 60, "counts in the beats")
            out = None if dump is None else dump / f"acking-{'on' if acking else 'off'}"
            daemons = dict(cluster.daemons)

            sample_files = Samples(samples)

            def window(label: str, target: float | None, wait: float) -> Row | Failed:
                try:
                    row: Row | Failed = measure(
                        beats, lambda: cluster_processes(daemons), sample_files, label, target,
                        wait, seconds, out)
                except WindowSpoiled as exc:
                    row = Failed(label, target, str(exc))
                on_row(row)
                return row

            sat = window("unpaced", None, warmup)
            rows.append(sat)
            for level in levels:
                label = f"{level:g} %"
                if not isinstance(sat, Row):
                    rows.append(Failed(label, None, "not measured: the unpaced window "
                                       "failed, so there is no rate to pace at"))
                    on_row(rows[-1])
                    continue
                rate = sat.words / WORDS * level / 100
                set_control(control, rate, min(1.0, keep / (rate * WORDS * seconds)))
                runs = [window(label if windows == 1 else f"{label} #{i + 1}", rate,
                               warmup if i == 0 else 0) for i in range(windows)]
                rows += runs
                measured = [r for r in runs if isinstance(r, Row)]
                if windows > 1 and measured:
                    rows.append(median_row(measured, f"{label}, median of {len(measured)}"
                                           + ("" if len(measured) == windows else
                                              f" ({windows - len(measured)} failed)")))
            return rows
        finally:
            if beats is not None:
                beats.close()
            cluster.close()
            stop_workers(tmp)


def stop_workers(tmp: Path) -> None:
    """Wait for the cluster's worker processes (told to stop by ``Cluster.close``) to
    exit, killing by pid any still there after 10 s, so none writes into ``tmp`` after."""
    deadline = time.monotonic() + 10
    while (pids := workers_cpu(tmp)) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)


def machine() -> str:
    model = next((line.split(":", 1)[1].strip() for line in
                  subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines()
                  if line.startswith("Model name")), platform.processor() or "?")
    return (f"{datetime.date.today()}, {os.cpu_count()} CPUs ({model}), "
            f"Python {platform.python_version()}, load average "
            + " ".join(f"{x:.2f}" for x in os.getloadavg()))


def table(rows: Sequence[Row | Failed], acking: bool) -> str:
    """The rows as a markdown table: latency p50 / p99 / p99.9 from each sentence's due time
    (unpaced: its emit), then p99 from the emit ("emit-stamped"); a level that was not
    reached says so in its rate and target; a failed window gives no figure, only why."""
    head = ("| rate | sentences/s, target | sentences/s | words/s | p50 ms | p99 ms | "
            "p99.9 ms | p99 ms, emit-stamped | samples |"
            + (" complete ms, mean |" if acking else "") + " load |")
    columns = head.count("|") - 1
    lines = [head, "|" + "---|" * columns]
    for r in rows:
        if isinstance(r, Failed):
            target = "" if r.target is None else f"{r.target:,.0f}"
            lines.append(f"| {r.shown} | {target} | failed: {r.why} |" + " |" * (columns - 3))
            continue
        lat = [f"{x:.2f}" for x in r.latency_ms] or ["", "", ""]
        target = "" if r.target is None else f"{r.target:,.0f}" + (
            "" if r.reached else " (not reached)")
        emit = "" if r.emit_p99_ms is None else f"{r.emit_p99_ms:.2f}"
        line = (f"| {r.shown} | {target} | {r.sentences:,.0f} | {r.words:,.0f} | "
                f"{' | '.join(lat)} | {emit} | {r.samples:,} |")
        if acking:
            line += f" {'' if r.complete_ms is None else f'{r.complete_ms:.2f}'} |"
        line += f" {r.load:.1f} |"
        lines.append(line)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.latency")
    p.add_argument("--seconds", type=float, default=5.0, help="measurement window per level")
    p.add_argument("--warmup", type=float, default=3.0,
                   help="seconds at each rate before its window")
    p.add_argument("--levels", type=float, nargs="+", default=[25, 50, 90],
                   help="per cent of the saturating rate")
    p.add_argument("--acking", nargs="+", choices=["off", "on"], default=["off", "on"])
    p.add_argument("--windows", type=int, default=1,
                   help="windows in a row at each level (more than one adds their medians)")
    p.add_argument("--transport", default="zmq")
    p.add_argument("--corpus", choices=["varied", "fixed"], default="varied",
                   help="the sentences (bench/topologies/corpus.py): 1,000 over a 10,000-word "
                        "vocabulary, or one sentence over and over (hot keys)")
    p.add_argument("--samples", type=int, default=200_000,
                   help="about how many words' latencies to keep per window")
    p.add_argument("--max-pending", type=int, default=50_000,
                   help="topology.max.spout.pending with acking on")
    p.add_argument("--dump", type=Path, metavar="DIR",
                   help="write each window's samples (seconds into the window, latency ms "
                        "from the due time, from the emit; in arrival order) to "
                        "DIR/acking-MODE/LEVEL.tsv")
    p.add_argument("-c", dest="conf", action="append", default=[], metavar="KEY=VALUE",
                   help="topology config (repeatable)")
    args = p.parse_args(argv)
    try:
        parse(args.conf, OWNED)
    except ValueError as exc:
        p.error(str(exc))

    def progress(row: Row | Failed) -> None:
        if isinstance(row, Failed):
            print(f"  {row.shown}: {row.why}", flush=True)
            return
        print(f"  {row.shown}: {row.words:,.0f} words/s, {row.samples:,} samples"
              + ("" if row.target is None else
                 f", {row.sentences:,.0f} of {row.target:,.0f} sentences/s"), flush=True)

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print(machine(), flush=True)
    print(f"2 workers on one supervisor, {args.transport}, corpus {args.corpus}; window "
          f"{args.seconds:g} s after "
          f"{args.warmup:g} s at each rate; latency from each sentence's due time on the "
          "spout's schedule (unpaced: its emit) -> count bolt; 'emit-stamped' from its emit",
          flush=True)
    failed = 0
    with contextlib.ExitStack() as stack:
        zdir = stack.enter_context(tempfile.TemporaryDirectory(prefix="squall-bench-zk-"))
        zk = stack.enter_context(DevZooKeeper(zdir))
        for mode in args.acking:
            acking = mode == "on"
            print(f"\nacking {mode}" + (f", 2 ackers, max spout pending {args.max_pending:,}"
                                        if acking else ""), flush=True)
            rows = run_mode(zk, args.transport, acking, args.levels, args.seconds,
                            args.warmup, args.samples, args.max_pending, args.conf,
                            args.dump, progress, max(1, args.windows), args.corpus)
            print(table(rows, acking), flush=True)
            failed += sum(isinstance(r, Failed) for r in rows)
    if failed:
        raise SystemExit(f"bench: {failed} window(s) failed and are left out of the figures "
                         "(see above)")


if __name__ == "__main__":
    main()
