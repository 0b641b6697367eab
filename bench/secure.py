"""The secure word count against the plain one, on real clusters on this machine.

    python -m bench.secure [--pairs 3] [--seconds 6] [--transports zmq grpc nng] [--acking]

Each run starts a fresh cluster on 127.0.0.1 (Debian's ZooKeeper, shared by every run, a
nimbus and one supervisor with 2 slots) and runs ``bench/topologies/dwc.py`` (per-tuple form)
in 2 workers, so every word crosses the transport between them about half the time. "plain"
is the default cluster; "secure" adds what README's "Running a secure cluster" sets:
ZooKeeper digest ACLs, token authentication of the nimbus API (every daemon and this client
send a token) and ``squall.transport.tls`` (CURVE with the ZAP allow-list for zmq, certificates
of the cluster's CA both ways for grpc and nng) with credentials nimbus generates. Plain and
secure alternate, pair after pair, so both see the same host load; the figures are the medians
of each side and of the per-pair ratios (secure / plain), of words per second and of words per
worker CPU second (steadier on a loaded host).

Words/s is the count bolts' executed total between two worker beats seen through the nimbus
API (polled every 0.1 s around each edge, so the window is exact to about 0.1 s), after a
3 s warm-up; words per CPU second divides by the worker processes' CPU time.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench import host
from bench.distributed import TARGET, cluster_conf, counted, wait_for, workers_cpu
from squall.daemon.dev_zookeeper import DevZooKeeper
from squall.daemon.ports import free_port

ADMIN_TOKEN = "bench-admin-token"
SECURE: dict[str, Any] = {
    "storm.zookeeper.auth.scheme": "digest",
    "storm.zookeeper.auth.payload": "squall:bench-zk-password",
    "nimbus.authentication": "token",
    "nimbus.auth.tokens": {ADMIN_TOKEN: "squall"},
    "nimbus.admins": ["squall"],
    "squall.auth.token": ADMIN_TOKEN,
    "squall.transport.tls": True,
}


class SmallCluster:
    """A nimbus and one supervisor (2 slots) as processes, with ``conf`` in a config file."""

    def __init__(self, tmp: Path, conf: dict[str, Any]) -> None:
        self.tmp, self.conf = tmp, conf
        self.file = tmp / "squall.yaml"
        self.file.write_text(yaml.safe_dump(conf))
        self.procs: list[subprocess.Popen[bytes]] = []
        port = int(conf["nimbus.seeds"][0].split(":")[1])
        self._spawn("nimbus", {"nimbus.port": port})
        self._spawn("supervisor", {"supervisor.slots.ports": [free_port(), free_port()]})

    def _spawn(self, kind: str, extra: dict[str, Any]) -> None:
        local = self.tmp / kind
        local.mkdir()
        args = [sys.executable, "-m", "squall.cli.main", "--config", str(self.file),
                "-c", f"storm.local.dir={local}"]
        for k, v in extra.items():
            args += ["-c", f"{k}={yaml.safe_dump(v, default_flow_style=True).strip()}"
                     .replace("\n...", "")]
        with open(self.tmp / f"{kind}.log", "ab") as log:
            self.procs.append(subprocess.Popen(args + [kind], stdout=log, stderr=log,
                                               start_new_session=True))

    def submit(self, acking: bool) -> None:
        subprocess.run([sys.executable, "-m", "squall.cli.main", "--config", str(self.file),
                        "submit", TARGET + ":topology", "--name", "wc",
                        "-c", "topology.workers=2", "-c", f"bench.tracked={acking}",
                        "-c", "topology.max.spout.pending=" + ("5000" if acking else "null"),
                        "-c", f"topology.acker.executors={2 if acking else 0}"],
                       check=True, capture_output=True, timeout=120)

    def worker_pids(self) -> list[int]:
        return [int(p.name) for p in (self.tmp / "supervisor").glob("workers/*/pids/*")
                if p.name.isdigit()]

    def close(self) -> None:
        """Stop the daemons this cluster started and the workers they launched (by pid)."""
        workers = self.worker_pids()
        for p in self.procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
        for pid in workers:   # each worker leads its own process group
            for sig in (signal.SIGTERM, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, sig)


def _edge(client: Any, timeout: float = 30) -> tuple[float, int]:
    """(time, count) when the executed total next changes (a worker beat arrived)."""
    before = counted(client)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = counted(client)
        if now != before:
            return time.monotonic(), now
        time.sleep(0.1)
    raise SystemExit("bench: no worker beat within 30 s")


def run_one(zk: DevZooKeeper, transport: str, secure: bool, acking: bool,
            seconds: float) -> tuple[float, float]:
    """(words/s, words per worker CPU second) of one fresh cluster."""
    from squall.daemon.nimbus_client import NimbusClient
    extra = {"squall.transport": transport, **(SECURE if secure else {})}
    with tempfile.TemporaryDirectory(prefix="squall-bench-secure-") as d:
        tmp = Path(d)
        cluster = SmallCluster(tmp, cluster_conf(zk, "bench-secure", **extra))
        client = NimbusClient(cluster.conf)
        try:
            wait_for(lambda: _supervisors(client) == 1, 60, "the supervisor")
            cluster.submit(acking)
            wait_for(lambda: counted(client) > 0, 60, "counts in the beats")
            time.sleep(3)                                    # warm-up
            t1, c1 = _edge(client)
            cpu1 = workers_cpu(tmp)
            time.sleep(seconds)
            t2, c2 = _edge(client)
            cpu2 = workers_cpu(tmp)
            used = sum(cpu2.values()) - sum(cpu1.values())
            return (c2 - c1) / (t2 - t1), (c2 - c1) / max(used, 1e-9)
        finally:
            client.close()
            cluster.close()


def _supervisors(client: Any) -> int:
    from squall.errors import SquallError
    try:
        return len(client.cluster_info().supervisors)
    except SquallError:
        return 0


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.secure")
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--transports", nargs="+", default=["zmq"])
    p.add_argument("--acking", action="store_true", help="acking on (2 ackers, pending 5000)")
    args = p.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print(host.line(), flush=True)
    with contextlib.ExitStack() as stack:
        zdir = stack.enter_context(tempfile.TemporaryDirectory(prefix="squall-bench-zk-"))
        zk = stack.enter_context(DevZooKeeper(zdir))
        print(f"secure vs plain word count, 2 workers, per-tuple, acking "
              f"{'on' if args.acking else 'off'}, words/s over {args.seconds:g} s")
        for transport in args.transports:
            rows: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
            for pair in range(args.pairs):
                for secure in ((False, True) if pair % 2 == 0 else (True, False)):
                    rows[secure].append(run_one(zk, transport, secure, args.acking,
                                                args.seconds))
                    rate, per_cpu = rows[secure][-1]
                    print(f"  {transport:<5} pair {pair + 1} {'secure' if secure else 'plain':<6}"
                          f" {rate:>12,.0f} words/s {per_cpu:>12,.0f} words/CPU s", flush=True)
            for i, what in ((0, "words/s"), (1, "words/CPU s")):
                ratios = [s[i] / p[i] for p, s in zip(rows[False], rows[True])]
                plain = statistics.median(r[i] for r in rows[False])
                secure_rate = statistics.median(r[i] for r in rows[True])
                print(f"  {transport:<5} {what:<11} median plain {plain:,.0f}  secure "
                      f"{secure_rate:,.0f}  secure/plain per pair {statistics.median(ratios):.2f}"
                      f" ({', '.join(f'{r:.2f}' for r in ratios)})", flush=True)


if __name__ == "__main__":
    main()
