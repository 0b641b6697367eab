"""Scale-out: the distributed word count with W workers on one supervisor, and its CPU per word.

    python -m bench.scale [--workers 1 2 4 8 12] [--forms per-tuple batch] [--acking off on]
                          [--seconds 6] [--warmup 3] [--runs 1] [--corpus varied|fixed]
                          [--no-bytewax] [--floor] [--count-grouping fields|local]
                          [--in-process] [--detail]

For each W, form and acking a fresh cluster (nimbus and one supervisor with W slots, as
processes on 127.0.0.1, over the ZooKeeper from Debian's package that all cases share, each
case under its own root) runs ``bench/topologies/swc.py`` in W workers: W spout tasks (100
sentences of 10 words per ``next_tuple``, from ``--corpus``: see ``bench/topologies/corpus.py``)
-> split x W (shuffle) -> count x W (fields on the word). Acking on: W ackers, ``tup_id`` on
every sentence, ``topology.max.spout.pending`` 2000 per spout task; off: no ackers, no ids.

Once every worker has beaten with counts in it and ``--warmup`` seconds have passed, the
window runs from one beat of each worker to its first beat ``--seconds`` later (a ZooKeeper
watch times each beat, as in ``bench.distributed``): words/s is the count tasks' executed
totals over that window. CPU is ``utime + stime`` from ``/proc/<pid>/stat`` of nimbus, the
supervisor and every process descended from them (the W workers), all alive through the
window, read at its ends; CPU per word is that CPU over the words the window's rate gives for
the same span. ZooKeeper's JVM and this process are not counted (ZooKeeper is shown beside,
``--detail``). A case whose window saw a process of the cluster end or start (a worker that
died and was started again), a worker's beat total go down, or no word counted fails: it is
reported as failed and left out of the tables.

Efficiency is words/s / (W x words/s at the smallest W) and cost ratio CPU per word at W / CPU
per word at the smallest W (normally W = 1); with ``--runs`` above 1 the medians are shown.

When ``bytewax`` (0.21.1, the ``bench`` extra) imports, each W also runs the same workload as
a bytewax dataflow in W processes (``bench.bytewax_wc``), measured the same way from its
progress files, and the squall / bytewax ratios are printed per W. ``--floor`` adds the same
workload in W plain Python processes (``bench.floor_wc``: split, hash, msgpack over zmq, a count
per word, nothing else; per form), the least a word costs in CPython at each W, and the squall /
floor ratios. ``--count-grouping local`` routes split -> count by local-or-shuffle instead of
fields: no word crosses between workers, so the figures show what W workers cost without the
crossing (each worker then counts its own words: not a word count, so the header and every
squall table say so, and no squall / bytewax or squall / floor ratio is printed).
``--in-process`` runs squall's cases in a LocalCluster in this process instead (W workers as
loop threads on one GIL, the in-memory transport; CPU is this process's): the crossing's cost
without W processes sharing the host, in one process a profiler can attach to. ``-c`` may not
set what the options set (:data:`OWNED`).
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.util
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench import host
from bench.distributed import (
    Beats,
    WindowSpoiled,
    beat_rates,
    cluster_conf,
    supervisors_up,
    wait_for,
)
from bench.overrides import parse
from bench.peers import progress
from bench.procs import TICK, cluster_processes, proc_stat, same_processes, tree
from squall.api.topology import ACKER
from squall.daemon.dev_zookeeper import DevZooKeeper
from squall.daemon.ports import free_port

HERE = Path(__file__).resolve().parent
TOPOLOGIES = HERE / "topologies"
TARGET = TOPOLOGIES / "swc.py"
NAME = "scale"
#: the workers' own beat counters shown by --detail (summed over the workers, per second)
COUNTERS = ("sent_batches", "sent_bytes", "received_batches", "loop_passes", "idle_waits",
            "spout_paused", "spout_at_max_pending")
PENDING = 2000                  # topology.max.spout.pending per spout task, acking on
#: the keys a case sets, and what sets them: a ``-c`` of one is refused
OWNED = {"topology.workers": "--workers", "topology.acker.executors": "--acking (W ackers on)",
         "bench.tracked": "--acking", "bench.corpus": "--corpus",
         "bench.count.grouping": "--count-grouping"}
#: what every squall title says with ``--count-grouping local``
LOCAL = "count grouping local (not a word count)"


# ---------------------------------------------------------------------------------- /proc


def cpu_of(pids: Sequence[int]) -> dict[int, float]:
    """CPU seconds by pid (processes that are gone are left out)."""
    return {pid: st[1] for pid in pids if (st := proc_stat(pid)) is not None}


def threads_cpu(pids: Sequence[int]) -> dict[str, float]:
    """CPU seconds of the given processes' threads summed by thread name."""
    out: dict[str, float] = {}
    for pid in pids:
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                stat = (task / "stat").read_text()
            except OSError:
                continue
            name = stat[stat.index("(") + 1:stat.rindex(")")]
            f = stat.rsplit(")", 1)[1].split()
            out[name] = out.get(name, 0.0) + (int(f[11]) + int(f[12])) / TICK
    return out


def stop(pids: Sequence[int], grace: float = 15) -> None:
    """SIGTERM each pid's process group (each of ours leads its own), SIGKILL after
    ``grace`` seconds whatever is left."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.1)
        if not any(_alive(p) for p in pids):
            return


def _alive(pid: int) -> bool:
    try:                                # reap our own children; others are reaped elsewhere
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:
        pass
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


# ---------------------------------------------------------------------------------- results


@dataclass
class Result:
    words_s: float
    cpu_s: float                                            # CPU seconds in the window
    words: float                                            # words in the same span
    parts: dict[str, float] = field(default_factory=dict)   # CPU seconds by process kind
    threads: dict[str, float] = field(default_factory=dict)
    counters: dict[str, float] = field(default_factory=dict)  # workers' own counters, per s
    acker_per_tree: float | None = None     # acking on: the acker's calls per tuple tree

    @property
    def us_per_word(self) -> float:
        return self.cpu_s / max(self.words, 1e-9) * 1e6


def _window(rate: float, t1: float, t2: float, before: dict[int, float],
            after: dict[int, float], kinds: dict[int, str], zk: tuple[float, float] | None,
            threads: tuple[dict[str, float], dict[str, float]] | None) -> Result:
    """The window's result from the CPU seconds of each process at its ends; raises
    :class:`WindowSpoiled` unless the same processes were alive at both (one that ended took
    its CPU with it, one that started has only part of the window's), or when nothing was
    counted in it (a stalled run: its CPU per word would be CPU ÷ 0)."""
    same_processes(before, after, kinds)
    if rate <= 0:
        raise WindowSpoiled(f"nothing was counted in the {t2 - t1:.1f} s window")
    used = {pid: after[pid] - before[pid] for pid in after}
    parts: dict[str, float] = {}
    for pid, c in used.items():
        parts[kinds.get(pid, "other")] = parts.get(kinds.get(pid, "other"), 0.0) + c
    if zk is not None:
        parts["zookeeper (not counted)"] = zk[1] - zk[0]
    th = ({k: v - threads[0].get(k, 0.0) for k, v in threads[1].items()}
          if threads is not None else {})
    return Result(rate, sum(used.values()), rate * (t2 - t1), parts, th)


# ---------------------------------------------------------------------------------- squall


class Cluster:
    """A nimbus and one supervisor with ``slots`` slots, as processes, under ``tmp``."""

    def __init__(self, tmp: Path, zk: DevZooKeeper, slots: int) -> None:
        self.tmp = tmp
        self.conf = cluster_conf(zk, "bench-scale")
        self.file = tmp / "squall.yaml"
        self.file.write_text(yaml.safe_dump(self.conf))
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.workers: set[int] = set()
        self._spawn("nimbus", {"nimbus.port": int(self.conf["nimbus.seeds"][0].split(":")[1])})
        self._spawn("supervisor", {"supervisor.slots.ports": [free_port() for _ in range(slots)]})

    def _spawn(self, kind: str, extra: dict[str, Any]) -> None:
        local = self.tmp / kind
        local.mkdir()
        args = [sys.executable, "-m", "squall.cli.main", "--config", str(self.file),
                "-c", f"storm.local.dir={local}"]
        for k, v in extra.items():
            args += ["-c", f"{k}={yaml.safe_dump(v, default_flow_style=True).strip()}"
                     .replace("\n...", "")]
        with open(self.tmp / f"{kind}.log", "ab") as log:
            self.procs[kind] = subprocess.Popen(args + [kind], stdout=log, stderr=log,
                                                start_new_session=True)

    def kinds(self) -> dict[int, str]:
        """Every process of the cluster by pid: nimbus, supervisor, and the workers (and
        anything else) under them."""
        out = cluster_processes({p.pid: kind for kind, p in self.procs.items()})
        self.workers.update(pid for pid, kind in out.items() if kind == "workers")
        return out

    def close(self) -> None:
        self.kinds()                    # the workers as they are now, to stop them too
        stop([p.pid for p in self.procs.values()])
        stop(sorted(self.workers))      # each worker leads its own process group


def submit(cluster: Cluster, client: Any, workers: int, batch: bool, acking: bool,
           extra: dict[str, Any]) -> None:
    from squall.api.target import load_module
    from squall.cli.cluster import submitted_conf
    from squall.daemon.packaging import zip_code_dir
    topology = load_module(str(TARGET)).build(workers, batch,
                                              extra.get("bench.count.grouping", "fields"))
    client.submit_topology(NAME, submitted_conf({}, topology_conf(workers, acking, extra)),
                           topology.to_json(), zip_code_dir(TOPOLOGIES))


def topology_conf(workers: int, acking: bool, extra: dict[str, Any]) -> dict[str, Any]:
    """The topology's conf for W workers (W ackers and max pending, acking on)."""
    return {"topology.workers": workers, "bench.tracked": acking,
            "topology.acker.executors": workers if acking else 0,
            "topology.max.spout.pending": PENDING if acking else None, **extra}


def _counting(latest: dict[str, tuple[float, dict[str, Any]]], workers: int) -> bool:
    """Every worker has beaten, and the count tasks have counted something."""
    if len(latest) < workers:
        return False
    return any(ex.get("component") == "count" and ex.get("executed")
               for _, beat in latest.values() for ex in (beat.get("executors") or {}).values())


def run_squall(zk: DevZooKeeper, zk_pid: int | None, workers: int, batch: bool, acking: bool,
               seconds: float, warmup: float, detail: bool,
               extra: dict[str, Any] | None = None) -> Result:
    with tempfile.TemporaryDirectory(prefix="sqscale-cluster-") as d:
        cluster = Cluster(Path(d), zk, workers)
        beats = client = None
        try:
            from squall.daemon.nimbus_client import NimbusClient
            client = NimbusClient(cluster.conf)
            wait_for(lambda: supervisors_up(client) == 1, 60, "the supervisor")
            submit(cluster, client, workers, batch, acking, extra or {})
            beats = Beats(cluster.conf, client.topology_info(NAME)["id"])
            wait_for(lambda: _counting(dict(beats.latest), workers), 60 + 10 * workers,
                     f"counts in the beats of {workers} workers")
            time.sleep(warmup)
            b1 = beats.next(workers)
            kinds = cluster.kinds()
            t1, c1 = time.monotonic(), cpu_of(list(kinds))
            z1 = cpu_of([zk_pid]).get(zk_pid, 0.0) if zk_pid else None
            th1 = threads_cpu([p for p, k in kinds.items() if k == "workers"]) if detail else None
            time.sleep(seconds)
            b2 = beats.next(workers)
            t2, c2 = time.monotonic(), cpu_of(list(kinds))
            z2 = cpu_of([zk_pid]).get(zk_pid, 0.0) if zk_pid else None
            th2 = threads_cpu([p for p, k in kinds.items() if k == "workers"]) if detail else None
            now = cluster.kinds()
            same_processes(kinds, now, {**now, **kinds})
            rates = beat_rates(b1, b2)
            rate = sum(n for (_, key), n in rates.items() if key == "count")
            counters: dict[str, float] = {}
            for (_, key), n in rates.items():
                if key in COUNTERS:
                    counters[key] = counters.get(key, 0.0) + n
            result = _window(rate, t1, t2, c1, c2, kinds,
                             (z1, z2) if z1 is not None and z2 is not None else None,
                             (th1, th2) if th1 is not None and th2 is not None else None)
            result.counters = counters
            trees = sum(n for (_, key), n in rates.items() if key == "split")
            if acking and trees:
                # one split execute per sentence: the acker's calls per tuple tree (its init
                # and the acks, each worker's folded per pass)
                result.acker_per_tree = sum(
                    n for (_, key), n in rates.items() if key == ACKER) / trees
            return result
        finally:
            if beats is not None:
                beats.close()
            if client is not None:
                client.close()
            cluster.close()


def run_local(workers: int, batch: bool, acking: bool, seconds: float, warmup: float,
              detail: bool, extra: dict[str, Any] | None = None) -> Result:
    """The same topology in a LocalCluster in this process (``--in-process``): W workers as
    loop threads sharing one GIL, the in-memory transport, no ZooKeeper. Words/s is the count
    tasks' executed totals over the window (``get_topology_info``), CPU this process's. What
    a crossing tuple costs in squall's own code shows here as in a cluster, without the
    host's scheduling of W processes, and one process is easy to profile (``perf record
    -p``, ``py-spy``)."""
    from squall import LocalCluster
    from squall.api.target import load_module
    extra = extra or {}
    topology = load_module(str(TARGET)).build(workers, batch,
                                              extra.get("bench.count.grouping", "fields"))

    def counted(cluster: Any) -> int:
        info = cluster.get_topology_info(NAME)
        return int(info["components"].get("count", {}).get("executed", 0))

    me = [os.getpid()]
    with LocalCluster(dict(extra)) as cluster:     # -c reaches the cluster too (gc thresholds)
        cluster.submit_topology(NAME, topology_conf(workers, acking, extra), topology)
        wait_for(lambda: counted(cluster) > 0, 60, "counts in the local cluster")
        time.sleep(warmup)
        n1, t1, c1 = counted(cluster), time.monotonic(), time.process_time()
        th1 = threads_cpu(me) if detail else {}
        time.sleep(seconds)
        n2, t2, c2 = counted(cluster), time.monotonic(), time.process_time()
        th2 = threads_cpu(me) if detail else {}
        cluster.kill_topology(NAME)
    rate = (n2 - n1) / (t2 - t1)
    return Result(rate, c2 - c1, float(n2 - n1), {"this process": c2 - c1},
                  {k: v - th1.get(k, 0.0) for k, v in th2.items()})


# ---------------------------------------------------------------------------------- bytewax


def bytewax_available() -> bool:
    return importlib.util.find_spec("bytewax") is not None and \
        importlib.util.find_spec("bytewax.testing") is not None


def run_bytewax(workers: int, seconds: float, warmup: float, detail: bool,
                corpus: str = "varied") -> Result:
    """The workload as a bytewax dataflow in ``workers`` processes (``bench.bytewax_wc``)."""
    return run_peers("bench.bytewax_wc", "bytewax", workers, seconds, warmup, detail, corpus)


def run_floor(workers: int, seconds: float, warmup: float, detail: bool,
              corpus: str = "varied", per_tuple: bool = False) -> Result:
    """The workload in ``workers`` plain Python processes (``bench.floor_wc``)."""
    return run_peers("bench.floor_wc", "floor", workers, seconds, warmup, detail, corpus,
                     {"PYTHONHASHSEED": "0"}, ["--per-tuple"] if per_tuple else [])


def run_peers(module: str, kind: str, workers: int, seconds: float, warmup: float,
              detail: bool, corpus: str, env: dict[str, str] | None = None,
              args: Sequence[str] = ()) -> Result:
    """Start ``workers`` processes of ``module`` (``--proc-id``, ``--addresses``,
    ``--progress``, ``--corpus``, then ``args``), wait until they all count, then measure a
    window from their progress files (:mod:`bench.peers`)."""
    with tempfile.TemporaryDirectory(prefix=f"sqscale-{kind}-") as d:
        tmp = Path(d)
        addresses = ";".join(f"127.0.0.1:{free_port()}" for _ in range(workers)) \
            if workers > 1 else ""
        files = [tmp / f"progress-{i}" for i in range(workers)]
        procs: list[subprocess.Popen[bytes]] = []
        try:
            for i in range(workers):
                with open(tmp / f"proc-{i}.log", "ab") as log:
                    procs.append(subprocess.Popen(
                        [sys.executable, "-m", module, "--proc-id", str(i),
                         "--addresses", addresses, "--progress", str(files[i]),
                         "--corpus", corpus, *args],
                        cwd=HERE.parent, stdout=log, stderr=log, start_new_session=True,
                        env={**os.environ, **(env or {})}))

            def counting() -> bool:
                if any(p.poll() is not None for p in procs):
                    raise SystemExit(f"bench: a {kind} process exited; see {tmp}/proc-*.log")
                got = [progress(f) for f in files]
                return all(g is not None for g in got) and sum(g[1] for g in got if g) > 0

            wait_for(counting, 60 + 10 * workers, f"counts from {workers} {kind} processes")
            time.sleep(warmup)
            pids = tree([p.pid for p in procs])
            p1 = [progress(f) for f in files]
            t1, c1 = time.monotonic(), cpu_of(pids)
            th1 = threads_cpu(pids) if detail else None
            time.sleep(seconds)
            p2 = [progress(f) for f in files]
            t2, c2 = time.monotonic(), cpu_of(pids)
            th2 = threads_cpu(pids) if detail else None
            if any(p.poll() is not None for p in procs):
                raise WindowSpoiled(f"a {kind} process exited during the window")
            rate = sum((b[1] - a[1]) / (b[0] - a[0]) for a, b in zip(p1, p2)
                       if a is not None and b is not None and b[0] > a[0])
            return _window(rate, t1, t2, c1, c2, dict.fromkeys(pids, kind), None,
                           (th1, th2) if th1 is not None and th2 is not None else None)
        finally:
            stop([p.pid for p in procs])


# ---------------------------------------------------------------------------------- output


def _med(results: list[Result], attr: str) -> float:
    return statistics.median(getattr(r, attr) for r in results)


def table(title: str, rows: dict[int, list[Result]]) -> str:
    """One table: W, words/s, µs CPU per word, efficiency and cost ratio against the
    smallest W."""
    base_w = min(rows)
    base_rate, base_cost = _med(rows[base_w], "words_s"), _med(rows[base_w], "us_per_word")
    lines = [title, f"  {'W':>3} {'words/s':>12} {'µs CPU/word':>12} {'efficiency':>11} "
                    f"{'cost ratio':>11}   runs (words/s)"]
    for w in sorted(rows):
        rate, cost = _med(rows[w], "words_s"), _med(rows[w], "us_per_word")
        eff = rate / (w / base_w * base_rate) if base_rate else float("nan")
        lines.append(f"  {w:>3} {rate:>12,.0f} {cost:>12.2f} {eff:>11.2f} "
                     f"{cost / base_cost if base_cost else float('nan'):>11.2f}   "
                     + ", ".join(f"{r.words_s / 1000:,.0f}k" for r in rows[w]))
    return "\n".join(lines)


def _detail(r: Result) -> str:
    words = max(r.words, 1e-9)
    out = ["      CPU µs/word by process: " + ", ".join(
        f"{k} {v / words * 1e6:.2f}" for k, v in sorted(r.parts.items()))]
    if r.threads:
        top = sorted(r.threads.items(), key=lambda kv: -kv[1])[:8]
        out.append("      by thread name (all workers): " + ", ".join(
            f"{k} {v / words * 1e6:.2f}" for k, v in top))
    if r.counters:
        c = r.counters
        sent = c.get("sent_batches", 0.0)
        each = (f" ({r.words_s / sent:,.0f} words counted per message, "
                f"{c.get('sent_bytes', 0) / sent:,.0f} B each)" if sent >= 1 else "")
        out.append(f"      all workers, per s: {sent:,.0f} messages sent{each}, "
                   f"{c.get('loop_passes', 0):,.0f} loop passes "
                   f"({c.get('idle_waits', 0):,.0f} idle)"
                   + (f", {r.acker_per_tree:.2f} acker calls per tuple tree"
                      if r.acker_per_tree is not None else ""))
        out.append(f"      spout turns held back, per s: {c.get('spout_paused', 0):,.0f} by "
                   f"backpressure, {c.get('spout_at_max_pending', 0):,.0f} at max pending")
    return "\n".join(out)


def _why(exc: BaseException) -> str:
    """The failure and, when cleaning up raised over it, what it interrupted."""
    cause = exc.__context__
    return f"{exc}" + (f" (while handling: {cause!r})" if cause is not None else "")


class Terminated(SystemExit):
    """SIGTERM: the whole run stops (a case's own failure, a ``SystemExit`` from a wait
    that timed out among them, stops only that case)."""


def _terminate(*_: Any) -> None:
    raise Terminated(143)


def _zk_pid(data_dir: str) -> int | None:
    """The ZooKeeper JVM started on ``data_dir`` (to show its CPU beside the figures)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if data_dir.encode() in cmd and b"java" in cmd:
                return int(entry.name)
    return None


@contextlib.contextmanager
def _zookeeper() -> Iterator[tuple[DevZooKeeper, int | None]]:
    with tempfile.TemporaryDirectory(prefix="sqscale-zk-") as zdir, \
            DevZooKeeper(zdir) as zk:
        yield zk, _zk_pid(zdir)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.scale")
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8, 12])
    p.add_argument("--forms", nargs="+", choices=["per-tuple", "batch"],
                   default=["per-tuple", "batch"])
    p.add_argument("--acking", nargs="+", choices=["off", "on"], default=["off", "on"])
    p.add_argument("--seconds", type=float, default=6.0, help="the measured window")
    p.add_argument("--warmup", type=float, default=3.0,
                   help="seconds after every worker counts before the window")
    p.add_argument("--runs", type=int, default=1, help="repeat every case; medians shown")
    p.add_argument("--no-bytewax", action="store_true", help="skip the bytewax comparison")
    p.add_argument("--floor", action="store_true",
                   help="also run the workload in W plain Python processes (bench.floor_wc): "
                        "the least a word costs in CPython at each W")
    p.add_argument("--corpus", choices=["varied", "fixed"], default="varied",
                   help="the sentences (bench/topologies/corpus.py): 1,000 over a 10,000-word "
                        "vocabulary, or one sentence (a hot key under fields grouping)")
    p.add_argument("-c", dest="conf", action="append", default=[], metavar="KEY=VALUE",
                   help="topology config for squall's cases, a YAML value (repeatable)")
    p.add_argument("--detail", action="store_true",
                   help="per case, CPU per word by process kind and by worker thread name")
    p.add_argument("--count-grouping", choices=["fields", "local"], default="fields",
                   help="local: split -> count by local-or-shuffle, so no word crosses between "
                        "workers (what W workers cost without the crossing; not a word count)")
    p.add_argument("--in-process", action="store_true",
                   help="squall's cases in a LocalCluster in this process (W workers as loop "
                        "threads on one GIL, in-memory transport) instead of a cluster")
    args = p.parse_args(argv)
    try:
        extra = {"bench.corpus": args.corpus, "bench.count.grouping": args.count_grouping,
                 **parse(args.conf, OWNED)}
    except ValueError as exc:
        p.error(str(exc))
    # a SIGTERM unwinds like Ctrl-C: every cluster, bytewax process and temp dir is removed
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, signal.default_int_handler)   # even if started with it ignored
    workers = sorted(set(args.workers))
    bytewax = not args.no_bytewax and bytewax_available()
    print(host.line(), flush=True)
    print(f"{os.cpu_count()} CPUs; corpus {args.corpus}; window {args.seconds:g} s after a "
          f"{args.warmup:g} s warm-up; "
          "acking on: W ackers, max spout pending "
          f"{extra.get('topology.max.spout.pending', PENDING)} per spout task"
          + (f"; squall's cases: {LOCAL}" if args.count_grouping == "local" else ""),
          flush=True)
    if not bytewax:
        print("bytewax: skipped (" + ("--no-bytewax" if args.no_bytewax else
              "not installed; pip install -e '.[bench]'") + ")", flush=True)
    cases = [(f, a) for f in args.forms for a in args.acking]
    squall: dict[tuple[str, str], dict[int, list[Result]]] = {c: {} for c in cases}
    bw: dict[int, list[Result]] = {}
    floor: dict[str, dict[int, list[Result]]] = {f: {} for f in args.forms}
    zookeeper = contextlib.nullcontext((None, None)) if args.in_process else _zookeeper()
    failed = 0
    with zookeeper as (zk, zk_pid):
        squall_case: Callable[..., Result] = (
            run_local if zk is None else functools.partial(run_squall, zk, zk_pid))
        for run in range(args.runs):
            for w in workers:
                for form, acking in cases:
                    if zk is not None and not zk.is_running():
                        raise SystemExit("bench: ZooKeeper is gone; stopping")
                    try:
                        r = squall_case(w, form == "batch", acking == "on", args.seconds,
                                        args.warmup, args.detail, extra)
                    except Terminated:
                        raise
                    except (Exception, SystemExit) as exc:      # one case, not the run
                        print(f"  run {run + 1} W={w:<2} squall {form:<9} acking {acking:<3} "
                              f"failed: {_why(exc)}", flush=True)
                        failed += 1
                        continue
                    squall[(form, acking)].setdefault(w, []).append(r)
                    print(f"  run {run + 1} W={w:<2} squall {form:<9} acking {acking:<3} "
                          f"{r.words_s:>12,.0f} words/s {r.us_per_word:>8.2f} µs CPU/word",
                          flush=True)
                    if args.detail:
                        print(_detail(r), flush=True)
                others: list[tuple[str, Callable[..., Result], dict[int, list[Result]]]] = \
                    [("bytewax", run_bytewax, bw)] if bytewax else []
                if args.floor:
                    others += [(f"floor {form}", functools.partial(
                        run_floor, per_tuple=form == "per-tuple"), floor[form])
                        for form in args.forms]
                for kind, runner, rows in others:
                    try:
                        r = runner(w, args.seconds, args.warmup, args.detail, args.corpus)
                    except Terminated:
                        raise
                    except (Exception, SystemExit) as exc:
                        print(f"  run {run + 1} W={w:<2} {kind} failed: {_why(exc)}", flush=True)
                        failed += 1
                        continue
                    rows.setdefault(w, []).append(r)
                    print(f"  run {run + 1} W={w:<2} {kind:<31} {r.words_s:>12,.0f} "
                          f"words/s {r.us_per_word:>8.2f} µs CPU/word", flush=True)
                    if args.detail:
                        print(_detail(r), flush=True)
    print()
    print(report(squall, bw, floor, args.count_grouping), flush=True)
    if failed:
        raise SystemExit(f"bench: {failed} case(s) failed and are left out of the tables "
                         "(see above)")


def squall_title(form: str, acking: str, grouping: str) -> str:
    """The title of one squall case's table; with ``--count-grouping local`` it says the
    case is no word count."""
    return f"squall, {form}, acking {acking}" + (f", {LOCAL}" if grouping == "local" else "")


def report(squall: dict[tuple[str, str], dict[int, list[Result]]],
           bw: dict[int, list[Result]], floor: dict[str, dict[int, list[Result]]],
           grouping: str) -> str:
    """The tables: each squall case, bytewax and the floor, and squall's ratios to them. With
    ``--count-grouping local`` squall's cases count no word across workers (not a word count),
    so no ratio to bytewax's or the floor's word count is given."""
    out = [table(squall_title(form, acking, grouping), rows) + "\n"
           for (form, acking), rows in squall.items() if rows]
    word_count = grouping != "local"
    if bw:
        out.append(table("bytewax 0.21.1 (flat_map, key_on, stateful_map)", bw) + "\n")
        if word_count:
            out.append(ratios("squall / bytewax, words/s (and µs CPU per word)", squall, bw)
                       + "\n")
    for form, rows in floor.items():
        if rows:
            out.append(table(f"floor, {form}: plain Python processes (bench.floor_wc)", rows)
                       + "\n")
            if word_count:
                out.append(ratios(f"squall / floor {form}, words/s (and µs CPU per word)",
                                  {c: r for c, r in squall.items() if c[0] == form}, rows)
                           + "\n")
    if not word_count and (bw or any(floor.values())):
        out.append(f"no squall / bytewax or squall / floor ratios: squall's cases ran with "
                   f"{LOCAL}, theirs are word counts\n")
    return "\n".join(out)


def ratios(title: str, squall: dict[tuple[str, str], dict[int, list[Result]]],
           other: dict[int, list[Result]]) -> str:
    """Per W, each squall case's words/s and (CPU per word) over ``other``'s, medians."""
    lines = [title, f"  {'W':>3} " + " ".join(f"{f + ' ' + a:>24}" for f, a in squall)]
    for w in sorted(other):
        o_rate, o_cost = _med(other[w], "words_s"), _med(other[w], "us_per_word")
        cells = []
        for rows in squall.values():
            if w not in rows:
                cells.append("-")
                continue
            rate, cost = _med(rows[w], "words_s"), _med(rows[w], "us_per_word")
            cells.append(f"{rate / o_rate:>10.2f} ({cost / o_cost:.2f})")
        lines.append(f"  {w:>3} " + " ".join(f"{x:>24}" for x in cells))
    return "\n".join(lines)


if __name__ == "__main__":
    main()
