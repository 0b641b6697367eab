"""Trident's word count against the per-tuple word count with acking (and bytewax), and DRPC
round trips on an idle two-worker cluster.

    python -m bench.trident [--runs 3] [--sizes 20000 120000] [--no-bytewax]
                            [--drpc-calls 300] [--drpc-interval-ms 1] [--drpc-pending 1 4]
                            [--no-drpc] [--no-wordcount]

Word count, local mode, one worker: N sentences of 10 words. Trident: a batch spout giving
1,000 sentences per txid (transactional: a txid always gets the same sentences) -> ``each``
split -> ``group_by`` word -> ``persistent_aggregate`` into a MemoryMapState with ``Count``;
ackers on (one), ``topology.max.spout.pending`` 3 batches, no emit interval; done when the
state's counts add up to 10 N. Per-tuple: ``bench.wordcount``'s spout -> split -> count with
acking on (``tup_id`` per sentence, pending 2000). Both as marginal words/s between the two
sizes (cancels start-up). bytewax (when it imports: the ``bench`` extra): ``bench.scale``'s
bytewax dataflow in one process, words/s over a window after a warm-up. The cases alternate
within each of ``--runs`` rounds; medians are printed, and the ratios of the medians.

DRPC: ZooKeeper, nimbus, one supervisor with two slots, ``squall drpc``, all processes on
127.0.0.1; ``bench/topologies/trident_drpc.py`` (split, group, count) in two workers with
``topology.trident.batch.emit.interval.millis`` ``--drpc-interval-ms`` and each
``topology.max.spout.pending`` of ``--drpc-pending`` (a fresh cluster each); after 50 warm-up calls,
``--drpc-calls`` sequential ``DRPCClient.execute`` calls are timed (p50, p99, max), each
decoding and checking its answer.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench import host
from bench import wordcount as per_tuple
from squall import LocalCluster
from squall.errors import DRPCError
from squall.trident import (
    BatchSpout, Count, Function, MemoryMapState, TridentTopology,
)
from squall.trident.state import memory

SENTENCE = per_tuple.SENTENCE
BATCH = 1000
HERE = Path(__file__).resolve().parent


class BenchSentences(BatchSpout):
    """``n`` sentences, ``BATCH`` per txid (later txids are empty)."""

    outputs = ["sentence"]

    def __init__(self, n: int) -> None:
        self.n = n

    def emit_batch(self, txid: int, collector: Any) -> None:
        k = max(0, min(BATCH, self.n - (txid - 1) * BATCH))
        emit = collector.emit
        for _ in range(k):
            emit((SENTENCE,))


class Split(Function):
    def execute(self, tup: Any, collector: Any) -> None:
        emit = collector.emit
        for w in tup.values[0].split():
            emit((w,))


def trident_once(n: int) -> float:
    """Wall seconds from submit until the state holds the counts of ``n`` sentences."""
    state_id = f"bench-trident-{time.time_ns()}"
    t = TridentTopology()
    (t.new_stream("sentences", BenchSentences(n))
     .each(["sentence"], Split(), ["word"])
     .group_by(["word"])
     .persistent_aggregate(MemoryMapState(state_id), Count(), ["count"]))
    conf = {"topology.acker.executors": 1, "topology.max.spout.pending": 3,
            "topology.trident.batch.emit.interval.millis": 0}
    target = n * 10
    with LocalCluster() as cluster:
        t0 = time.perf_counter()
        cluster.submit_topology("bench-trident", conf, t.build())
        stores = cluster.workers("bench-trident")[0].memory_stores
        while sum(v[1] for v in memory.stored(stores, state_id).values()) < target:
            time.sleep(0.002)
        elapsed = time.perf_counter() - t0
    return elapsed


def trident_marginal(sizes: tuple[int, int]) -> float:
    small, big = sizes
    return (big - small) * 10 / (trident_once(big) - trident_once(small))


def per_tuple_marginal(sizes: tuple[int, int]) -> float:
    return per_tuple.marginal(sizes, batch=False, acking=True)[0]


def bytewax_rate() -> float | None:
    from bench import scale
    if not scale.bytewax_available():
        return None
    return scale.run_bytewax(1, seconds=6.0, warmup=3.0, detail=False).words_s


# ---------------------------------------------------------------------------------- DRPC

def drpc_latencies(calls: int, interval_ms: int, pending: int) -> list[float]:
    """Seconds per DRPC call, on a fresh two-worker cluster (see the module docstring)."""
    from bench.distributed import cluster_conf, supervisors_up, wait_for
    from squall import DRPCClient
    from squall.daemon.dev_zookeeper import DevZooKeeper
    from squall.daemon.ports import free_port
    from squall.daemon.nimbus_client import NimbusClient
    with tempfile.TemporaryDirectory(prefix="sqtrident-") as d, \
            DevZooKeeper(Path(d) / "zk") as zk:
        tmp = Path(d)
        drpc_port = free_port()
        conf = cluster_conf(zk, "bench-trident", **{
            "drpc.servers": [f"127.0.0.1:{drpc_port}"], "drpc.host": "127.0.0.1",
            "drpc.port": drpc_port, "drpc.http.port": free_port(),
            "drpc.request.timeout.secs": 30})
        conf_file = tmp / "squall.yaml"
        conf_file.write_text(yaml.safe_dump(conf))
        procs = []

        def squall(*args: str, log: str) -> subprocess.Popen[bytes]:
            local = tmp / log
            local.mkdir(exist_ok=True)
            with open(tmp / f"{log}.log", "ab") as out:
                return subprocess.Popen(
                    [sys.executable, "-m", "squall.cli.main", "--config", str(conf_file),
                     "-c", f"storm.local.dir={local}", *args], stdout=out, stderr=out,
                    start_new_session=True)
        try:
            procs.append(squall("-c", f"nimbus.port={conf['nimbus.seeds'][0].split(':')[1]}",
                                "nimbus", log="nimbus"))
            procs.append(squall("-c", f"supervisor.slots.ports=[{free_port()}, {free_port()}]",
                                "supervisor", log="supervisor"))
            procs.append(squall("drpc", log="drpc"))
            client = NimbusClient(conf)
            wait_for(lambda: supervisors_up(client) == 1, 60, "the supervisor")
            subprocess.run([sys.executable, "-m", "squall.cli.main", "--config", str(conf_file),
                            "submit", f"{HERE / 'topologies' / 'trident_drpc.py'}:topology",
                            "--name", "drpc", "-c", "topology.workers=2",
                            "-c", f"topology.trident.batch.emit.interval.millis={interval_ms}",
                            "-c", f"topology.max.spout.pending={pending}"],
                           check=True, capture_output=True)
            drpc = DRPCClient(conf)
            expected = [["end", 1], ["fox", 1], ["the", 2]]

            def call() -> list[list[Any]]:
                return sorted(json.loads(drpc.execute("count", "the fox the end")))

            def answers() -> bool:
                try:
                    return call() == expected
                except DRPCError:
                    return False
            wait_for(answers, 120, "DRPC answers from the topology")
            for _ in range(50):
                call()
            out = []
            for _ in range(calls):
                t0 = time.perf_counter()
                result = call()
                out.append(time.perf_counter() - t0)
                assert result == expected, result
            client.close()
            return out
        finally:
            from bench.procs import tree
            from bench.scale import stop
            workers = tree([p.pid for p in procs])      # each worker leads its own group
            stop([p.pid for p in procs])
            stop(workers)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.trident")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--sizes", type=int, nargs=2, default=(20_000, 120_000))
    p.add_argument("--no-bytewax", action="store_true")
    p.add_argument("--drpc-calls", type=int, default=300)
    p.add_argument("--drpc-interval-ms", type=int, default=1)
    p.add_argument("--drpc-pending", type=int, nargs="+", default=[1],
                   help="topology.max.spout.pending values to measure, in turn")
    p.add_argument("--no-drpc", action="store_true")
    p.add_argument("--no-wordcount", action="store_true")
    args = p.parse_args(argv)
    print(host.line(), flush=True)
    sizes = (args.sizes[0], args.sizes[1])
    if not args.no_wordcount:
        print(f"word count, local mode, 1 worker; marginal words/s between {sizes[0]:,} and "
              f"{sizes[1]:,} sentences; cases alternated, {args.runs} rounds", flush=True)
        tri: list[float] = []
        pt: list[float] = []
        bw: list[float] = []
        for r in range(args.runs):
            tri.append(trident_marginal(sizes))
            pt.append(per_tuple_marginal(sizes))
            rate = None if args.no_bytewax else bytewax_rate()
            if rate is not None:
                bw.append(rate)
            print(f"  round {r + 1}: trident {tri[-1]:,.0f}  per-tuple acked {pt[-1]:,.0f}"
                  + (f"  bytewax {bw[-1]:,.0f}" if rate is not None else ""), flush=True)
        mt, mp = statistics.median(tri), statistics.median(pt)
        print(f"  median words/s: trident {mt:,.0f}, per-tuple acked {mp:,.0f}: "
              f"trident / per-tuple = {mt / mp:.2f}x", flush=True)
        if bw:
            mb = statistics.median(bw)
            print(f"  bytewax (1 process) {mb:,.0f}: trident / bytewax = {mt / mb:.2f}x",
                  flush=True)
        else:
            print("  bytewax: not installed (pip install -e '.[bench]') or --no-bytewax")
    if not args.no_drpc:
        for pending in args.drpc_pending:
            lat = sorted(drpc_latencies(args.drpc_calls, args.drpc_interval_ms, pending))
            p50 = lat[len(lat) // 2] * 1000
            p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000
            print(f"DRPC round trip, idle two-worker cluster, batch emit interval "
                  f"{args.drpc_interval_ms} ms, max spout pending {pending}, {len(lat)} calls: "
                  f"p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {lat[-1] * 1000:.1f} ms",
                  flush=True)

if __name__ == "__main__":
    main()
