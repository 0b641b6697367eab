"""Distributed word count on a real cluster on this machine.

    python -m bench.distributed [--seconds 6] [--transports zmq nng grpc]

Starts a ZooKeeper (Debian's package), a nimbus and one or two supervisors as processes on
127.0.0.1, submits ``bench/topologies/dwc.py`` with two workers (on one supervisor, or one on
each of two), and reads the count bolts' executed totals from the worker beats: the figure is
words/s over ``--seconds`` of steady state after a warm-up. Also reports submit -> first tuple
(the first spout's first emit). Every case starts a fresh cluster. Rates are taken between
two beats of each worker (a ZooKeeper watch sees each beat as it is written), so the window
is exact to within milliseconds whatever the beat interval.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import yaml

from bench import host
from bench.overrides import parse
from bench.tree import tree_env
from squall.daemon.dev_zookeeper import DevZooKeeper
from squall.daemon.ports import free_port
from squall.state.cluster_state import decode_beat

HERE = Path(__file__).resolve().parent
TARGET = str(HERE / "topologies" / "dwc.py")
T = TypeVar("T")
#: the keys a case sets, and what sets them: a ``-c`` of one is refused
OWNED = {"topology.workers": "the benchmark (2 workers)",
         "topology.acker.executors": "the case's acking (2 ackers on, 0 off)",
         "bench.tracked": "the case's acking", "bench.marker": "the benchmark (first tuple)"}


def cluster_conf(zk: DevZooKeeper, name: str, **extra: Any) -> dict[str, Any]:
    """The conf of a benchmark's cluster on 127.0.0.1: its own ZooKeeper root, a free nimbus
    port, one-second monitors and beats."""
    return {"storm.zookeeper.servers": ["127.0.0.1"], "storm.zookeeper.port": zk.port,
            "storm.zookeeper.root": f"/{name}-{time.time_ns()}",
            "nimbus.seeds": [f"127.0.0.1:{free_port()}"],
            "nimbus.monitor.freq.secs": 1, "supervisor.monitor.frequency.secs": 1,
            "task.heartbeat.frequency.secs": 1, "storm.local.hostname": "127.0.0.1",
            "worker.log.level": "WARNING", **extra}


class Cluster:
    def __init__(self, tmp: Path, zk: DevZooKeeper, supervisors: int, transport: str,
                 env: dict[str, str] | None = None) -> None:
        self.tmp = tmp
        self.env = env
        self.conf = cluster_conf(zk, "bench", **{"squall.transport": transport})
        self.file = tmp / "squall.yaml"
        self.file.write_text(yaml.safe_dump(self.conf))
        self.procs: list[subprocess.Popen[bytes]] = []
        #: each daemon's pid and what it is (nimbus, sup0, sup1, ...)
        self.daemons: dict[int, str] = {}
        port = int(self.conf["nimbus.seeds"][0].split(":")[1])
        self._spawn("nimbus", {"nimbus.port": port})
        slots = 2 if supervisors == 1 else 1
        for i in range(supervisors):
            self._spawn("supervisor", {"supervisor.slots.ports":
                                       [free_port() for _ in range(slots)]}, f"sup{i}")

    def _spawn(self, kind: str, extra: dict[str, Any], name: str | None = None) -> None:
        local = self.tmp / (name or kind)
        local.mkdir()
        args = [sys.executable, "-m", "squall.cli.main", "--config", str(self.file),
                "-c", f"storm.local.dir={local}"]
        for k, v in extra.items():
            args += ["-c", f"{k}={yaml.safe_dump(v, default_flow_style=True).strip()}"
                     .replace("\n...", "")]
        log = open(self.tmp / f"{name or kind}.log", "ab")
        self.procs.append(subprocess.Popen(args + [kind], stdout=log, stderr=log,
                                           start_new_session=True, env=self.env))
        self.daemons[self.procs[-1].pid] = name or kind

    def squall(self, *args: str) -> None:
        subprocess.run([sys.executable, "-m", "squall.cli.main", "--config", str(self.file),
                        *args], check=True, capture_output=True, timeout=120, env=self.env)

    def client(self) -> Any:
        from squall.daemon.nimbus_client import NimbusClient
        return NimbusClient(self.conf)

    def close(self) -> None:
        import signal
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in self.procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
        # workers run in their own process groups: the supervisors stop them on SIGTERM
        # only when told; make sure nothing is left behind
        subprocess.run(["pkill", "-f", f"squall.daemon.worker_main.*{self.tmp}"], check=False)


def wait_for(cond: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.2)
    raise SystemExit(f"bench: timed out waiting for {what}")


def supervisors_up(client: Any) -> int:
    from squall.errors import SquallError
    try:
        return len(client.cluster_info().supervisors)
    except SquallError:
        return 0


class Beats:
    """Every worker beat of one topology as it is written: a ZooKeeper watch on each
    ``/workerbeats/<topology-id>/<node>-<port>`` records when the new value arrived (this
    process's monotonic clock) with the value. Rates are taken between two beats of the same
    worker, so the window is the worker's own beat interval to within the watch's delay
    (milliseconds), not the up to one beat interval a value read at an arbitrary moment is
    old (±1 s of a 6 s window)."""

    def __init__(self, conf: dict[str, Any], topology_id: str) -> None:
        from kazoo.client import KazooClient
        self.zk = KazooClient(hosts=f"127.0.0.1:{conf['storm.zookeeper.port']}")
        self.zk.start(timeout=30)
        self.base = f"{conf['storm.zookeeper.root']}/workerbeats/{topology_id}"
        self.cond = threading.Condition()
        self.latest: dict[str, tuple[float, dict[str, Any]]] = {}
        self.watched: set[str] = set()
        self.zk.ensure_path(self.base)
        self.zk.ChildrenWatch(self.base, self._children)

    def _children(self, names: list[str]) -> None:
        for name in names:
            if name not in self.watched:
                self.watched.add(name)
                self.zk.DataWatch(f"{self.base}/{name}", self._watcher(name))

    def _watcher(self, name: str) -> Any:
        def beat(data: bytes | None, _stat: Any) -> None:
            value = decode_beat(data) if data else None    # JSON, or compressed when large
            if value is not None:
                with self.cond:
                    self.latest[name] = (time.monotonic(), value)
                    self.cond.notify_all()
        return beat

    def next(self, workers: int, timeout: float = 30) -> dict[str, tuple[float, dict[str, Any]]]:
        """Each of ``workers`` workers' first beat written after this call."""
        with self.cond:
            seen = dict(self.latest)
            if not self.cond.wait_for(
                    lambda: sum(1 for k, v in self.latest.items() if seen.get(k) is not v)
                    >= workers, timeout):
                raise SystemExit("bench: timed out waiting for worker beats")
            return {k: v for k, v in self.latest.items() if seen.get(k) is not v}

    def close(self) -> None:
        self.zk.stop()
        self.zk.close()


def beat_totals(beat: dict[str, Any]) -> dict[str, float]:
    """A beat's executed (bolts) or emitted (spouts) totals by component, the worker's own
    counters, and its spouts' turns held back (``spout_paused``: by backpressure;
    ``spout_at_max_pending``: by max spout pending)."""
    out: dict[str, float] = {"spout_paused": 0, "spout_at_max_pending": 0}
    for ex in (beat.get("executors") or {}).values():
        spout = ex.get("kind") == "spout"
        n = ex.get("emitted" if spout else "executed") or 0
        out[ex.get("component", "?")] = out.get(ex.get("component", "?"), 0) + n
        if spout:
            out["spout_paused"] += ex.get("paused") or 0
            out["spout_at_max_pending"] += ex.get("at_max_pending") or 0
    out.update(beat.get("worker") or {})
    return out


class WindowSpoiled(Exception):
    """A measured window cannot be used: a worker restarted in it (its beat's ``seq`` or a
    total went down), or the processes measured changed. The case failed; its figures are
    not a measurement."""


def beat_rates(before: dict[str, tuple[float, dict[str, Any]]],
               after: dict[str, tuple[float, dict[str, Any]]]) -> dict[tuple[str, str], float]:
    """(worker, component or counter) -> per second between each worker's two beats.

    Every figure in a beat is a total since the worker started, so a worker that beat in
    one life at the window's start and in another at its end shows a total (or its beat
    ``seq``) going down: :class:`WindowSpoiled` is raised, naming the worker and the figure,
    as it is for a worker that beat at only one end of the window."""
    if before.keys() != after.keys():
        raise WindowSpoiled("the workers that beat changed during the window: "
                            f"{sorted(before)} at its start, {sorted(after)} at its end")
    out = {}
    for name, (t2, b2) in after.items():
        t1, b1 = before[name]
        if isinstance(b1.get("seq"), int) and isinstance(b2.get("seq"), int) \
                and b2["seq"] <= b1["seq"]:
            raise WindowSpoiled(f"worker {name} restarted during the window (its beat seq "
                                f"went from {b1['seq']} to {b2['seq']})")
        a, b = beat_totals(b1), beat_totals(b2)
        for key, n in b.items():
            if isinstance(n, (int, float)):
                if n < a.get(key, 0):
                    raise WindowSpoiled(f"worker {name} restarted during the window (its "
                                        f"{key} total went down from {a[key]:,} to {n:,})")
                out[(name, key)] = (n - a.get(key, 0)) / (t2 - t1)
    return out


def counted(client: Any) -> int:
    try:
        info = client.topology_info("wc")
    except Exception:
        return 0
    return int(info.get("components", {}).get("count", {}).get("executed", 0))


def workers_cpu(tmp: Path) -> dict[str, float]:
    """CPU seconds (user + system) each of the cluster's worker processes has used so far,
    by pid."""
    pids = subprocess.run(["pgrep", "-f", f"squall.daemon.worker_main.*{tmp}"],
                          capture_output=True, text=True).stdout.split()
    return {pid: cpu for pid in pids for cpu, _ in [_stat(Path(f"/proc/{pid}/stat"))]
            if cpu is not None}


def threads_cpu(pids: Sequence[str]) -> dict[str, float]:
    """CPU seconds of each thread of the given processes, by "pid/name tid"."""
    return {f"{pid}/{name} {task.name}": cpu for pid in pids
            for task in Path(f"/proc/{pid}/task").glob("*")
            for cpu, name in [_stat(task / "stat")] if cpu is not None}


def _stat(path: Path) -> tuple[float | None, str]:
    """(CPU seconds, user + system; the name) from a /proc stat file; None if it is gone."""
    try:
        stat = path.read_text()
    except OSError:
        return None, ""
    fields = stat.rsplit(")", 1)[1].split()
    return ((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"),
            stat[stat.index("(") + 1:stat.rindex(")")])


def detail(cpu: tuple[dict[str, float], dict[str, float]],
           threads: tuple[dict[str, float], dict[str, float]],
           rates: dict[tuple[str, str], float], seconds: float) -> str:
    """Per worker process its share of a core (and each thread's above 1 %), and per worker
    (``<node>-<port>``) what each component's executors did and its own counters, per second;
    ``cpu`` and ``threads`` are (before, after) over ``seconds``."""
    def rate(pair: tuple[dict[Any, float], dict[Any, float]], key: Any) -> float:
        return (pair[1][key] - pair[0].get(key, 0.0)) / seconds

    lines = [f"      pid {pid}: {rate(cpu, pid):.0%} of a core" for pid in sorted(cpu[1])]
    lines += [f"        thread {t}: {rate(threads, t):.0%}" for t in sorted(threads[1])
              if rate(threads, t) > 0.01]
    for key in sorted(rates):
        digits = 2 if key[1] == "overloaded_secs" else 0
        lines.append(f"      {key[0].rsplit('-', 1)[-1]} {key[1]:<16} "
                     f"{rates[key]:>12,.{digits}f}/s")
    return "\n".join(lines)


def run_case(zk: DevZooKeeper, supervisors: int, transport: str, acking: bool, batch: bool,
             seconds: float, extra: Sequence[str] = (),
             show_detail: bool = False,
             env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """(words/s, submit -> first tuple s, words per CPU second of the worker processes)"""
    with tempfile.TemporaryDirectory(prefix="squall-bench-") as d:
        tmp = Path(os.environ.get("SQUALL_BENCH_KEEP") or d)
        tmp.mkdir(parents=True, exist_ok=True)
        cluster = Cluster(tmp, zk, supervisors, transport, env)
        beats = None
        try:
            client = cluster.client()
            wait_for(lambda: supervisors_up(client) == supervisors, 60, "supervisors")
            marker = tmp / "first-tuple"
            t0 = time.time()
            cluster.squall("submit", TARGET +
                           (":batch_topology" if batch else ":topology"), "--name", "wc",
                           "-c", "topology.workers=2", "-c", f"bench.tracked={acking}",
                           "-c", f"bench.marker={marker}",
                           "-c", "topology.max.spout.pending=" + ("5000" if acking else "null"),
                           "-c", f"topology.acker.executors={2 if acking else 0}",
                           *[a for kv in extra for a in ("-c", kv)])
            wait_for(marker.exists, 60, "the first tuple")
            first = float(marker.read_text()) - t0
            beats = Beats(cluster.conf, client.topology_info("wc")["id"])
            wait_for(lambda: counted(client) > 0, 30, "counts in the beats")
            time.sleep(3)                                    # warm-up
            b1 = beats.next(2)
            t1, cpu1 = time.monotonic(), workers_cpu(tmp)
            th1 = threads_cpu(list(cpu1)) if show_detail else {}
            time.sleep(seconds)
            b2 = beats.next(2)
            t2, cpu2 = time.monotonic(), workers_cpu(tmp)
            rates = beat_rates(b1, b2)
            words = sum(n for (_, key), n in rates.items() if key == "count")
            used = sum(cpu2.values()) - sum(cpu1.values())
            if show_detail:
                print(detail((cpu1, cpu2), (th1, threads_cpu(list(cpu1))), rates, t2 - t1),
                      flush=True)
            return words, first, words * (t2 - t1) / max(used, 1e-9)
        finally:
            if beats is not None:
                beats.close()
            cluster.close()


def case_name(supervisors: int, acking: bool, batch: bool) -> str:
    """A case as ``--cases`` names it: ``SUPS-FORM-ACKING``, e.g. ``2-per-tuple-on``."""
    return f"{supervisors}-{'batch' if batch else 'per-tuple'}-{'on' if acking else 'off'}"


#: every case ``--cases`` may name
CASE_NAMES = [case_name(s, a, b) for s in (1, 2) for b in (False, True) for a in (False, True)]


def paired(runs: dict[str, Callable[[], T]]) -> tuple[dict[str, T], dict[str, str]]:
    """Run each of ``runs`` on a thread of its own, all at the same time, and wait for them:
    (results by key, the error of each run that raised, by key). A run that raises, even
    ``SystemExit`` (which a thread would drop without a word), is reported, not lost."""
    results: dict[str, T] = {}
    errors: dict[str, str] = {}

    def one(key: str, run: Callable[[], T]) -> None:
        try:
            results[key] = run()
        except BaseException as exc:        # reported by the caller, SystemExit too
            errors[key] = (str(exc) if isinstance(exc, SystemExit)
                           else f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=one, args=kv, name=f"bench-{kv[0]}")
               for kv in runs.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, errors


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.distributed")
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--transports", nargs="+", default=["zmq"])
    p.add_argument("--quick", action="store_true", help="only 2 supervisors, per-tuple, acking off and on")
    p.add_argument("--cases", nargs="+", metavar="SUPS-FORM-ACKING", choices=CASE_NAMES,
                   help="only these cases, e.g. 2-per-tuple-on 1-batch-off (of: "
                        + " ".join(CASE_NAMES) + ")")
    p.add_argument("-c", dest="conf", action="append", default=[], metavar="KEY=VALUE",
                   help="topology config for every case (repeatable)")
    p.add_argument("--detail", action="store_true",
                   help="also print each worker's CPU and each component's rate per worker")
    p.add_argument("--tree", type=Path,
                   help="run the cluster on this checkout's core/ and plugins/ (for example "
                        "a git worktree of an earlier commit)")
    p.add_argument("--against", type=Path, metavar="TREE",
                   help="run each case twice at the same time, on this checkout (or --tree) "
                        "and on TREE, each its own cluster, and print the ratio of their "
                        "words per CPU second: both share the host's cores and its noise")
    args = p.parse_args(argv)
    try:
        parse(args.conf, OWNED)
    except ValueError as exc:
        p.error(str(exc))
    # a SIGTERM (a `kill` or `timeout`) unwinds like Ctrl-C, so the cluster and ZooKeeper
    # this run started are stopped instead of left running
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print(host.line(), flush=True)      # before ZooKeeper's JVM starts
    with contextlib.ExitStack() as stack:
        zdir = stack.enter_context(tempfile.TemporaryDirectory(prefix="squall-bench-zk-"))
        env = stack.enter_context(tree_env(args.tree))
        other = stack.enter_context(tree_env(args.against)) if args.against else None
        zk = stack.enter_context(DevZooKeeper(zdir))
        print("distributed word count, 2 workers, words/s over "
              f"{args.seconds:g} s of steady state, between beats"
              + (f"; paired with {args.against} at the same time" if other else ""))
        print(f"  {'transport':<9} {'supervisors':<11} {'form':<9} {'acking':<6} "
              f"{'words/s':>12} {'first tuple s':>14} {'words/CPU s':>12}"
              + (f" {'against':>12} {'ratio':>6}" if other else ""))
        failed = 0
        for transport in args.transports:
            cases = [(s, a, b) for s in (1, 2) for b in (False, True) for a in (False, True)]
            if args.quick or transport != args.transports[0]:
                cases = [(2, False, False), (2, True, False)]
            if args.cases:
                cases = [c for c in cases if case_name(*c) in args.cases]
                if not cases:
                    print(f"  {transport:<9} none of --cases runs on it (after the first "
                          "transport, and with --quick: 2-per-tuple-off and -on)", flush=True)
            for sups, acking, batch in cases:
                def case(e: dict[str, str], show: bool) -> tuple[float, float, float]:
                    return run_case(zk, sups, transport, acking, batch, args.seconds,
                                    args.conf, show, e)
                row = (f"  {transport:<9} {sups:<11} {'batch' if batch else 'per-tuple':<9} "
                       f"{'on' if acking else 'off':<6}")
                if other is None:
                    try:
                        rate, first, per_cpu = case(env, args.detail)
                    except WindowSpoiled as exc:
                        print(f"{row} failed: {exc}", flush=True)
                        failed += 1
                        continue
                    print(f"{row} {rate:>12,.0f} {first:>14.2f} {per_cpu:>12,.0f}", flush=True)
                    continue
                results, errors = paired({"this": lambda: case(env, False),
                                          "other": lambda: case(other, False)})
                if errors:
                    print(f"{row} failed: " + "; ".join(
                        f"the run on {'this tree' if k == 'this' else args.against}: {why}"
                        for k, why in errors.items()), flush=True)
                    failed += 1
                    continue
                rate, first, per_cpu = results["this"]
                print(f"{row} {rate:>12,.0f} {first:>14.2f} {per_cpu:>12,.0f} "
                      f"{results['other'][2]:>12,.0f} {per_cpu / results['other'][2]:>6.2f}",
                      flush=True)
    if failed:
        raise SystemExit(f"bench: {failed} case(s) failed (see above)")


if __name__ == "__main__":
    main()
