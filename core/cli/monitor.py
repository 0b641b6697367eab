"""``squall monitor TOPOLOGY``: a live terminal view of a running topology.

Every ``--interval`` seconds it asks nimbus for the topology's info and shows one line per
component in flow order (sources first): its executors and tasks, the rates of the last
interval (emitted, executed, acked and failed tuples per second, from the counters' growth),
its latency (bolts: mean execute latency; spouts: mean complete latency, ms, since start), the
failed tuples in all, the tuples waiting in its queues and, for spouts, the tuples pending (in
flight, not yet acked or failed); then the newest error of each component that reported one.
On a terminal each frame replaces the last; ``--once`` prints a single frame (two samples an
interval apart) and exits.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

from squall.cli.argtypes import positive_seconds

RATES = ("emitted", "executed", "acked", "failed")


def register(subparsers: Any) -> None:
    from squall.cli.cluster import cluster_command
    p = subparsers.add_parser("monitor", help="a live view of a topology: rates, latencies, "
                                              "failures and queues per component")
    p.add_argument("name", metavar="TOPOLOGY", help="the topology's name")
    p.add_argument("--interval", type=positive_seconds, default=2.0, metavar="S",
                   help="seconds between frames (and between the two samples of --once; "
                        "default 2)")
    p.add_argument("--once", action="store_true",
                   help="print one frame and exit (for scripts and tests)")
    p.set_defaults(func=cluster_command(cmd_monitor))


def cmd_monitor(args: argparse.Namespace, conf: dict[str, Any]) -> int:
    from squall.daemon.nimbus_client import NimbusClient
    client = NimbusClient(conf)
    try:
        return watch(lambda: client.topology_info(args.name), args.interval, args.once,
                     sys.stdout.isatty())
    finally:
        client.close()


def watch(read: Callable[[], dict[str, Any]], interval: float, once: bool,
          clear: bool) -> int:
    """Print frames of ``read()`` until Ctrl-C (one frame with ``once``)."""
    before, t0 = read(), time.monotonic()
    try:
        while True:
            time.sleep(interval)     # the sampling period, not synchronization
            now, t1 = read(), time.monotonic()
            text = frame(before, now, t1 - t0)
            sys.stdout.write(("\x1b[H\x1b[2J" if clear else "") + text
                             + ("" if clear or once else "\n"))
            sys.stdout.flush()
            if once:
                return 0
            before, t0 = now, t1
    except KeyboardInterrupt:
        return 0


def frame(before: dict[str, Any], now: dict[str, Any], elapsed: float) -> str:
    """One frame: the header, the component table, the newest errors."""
    comps = now.get("components") or {}
    old = before.get("components") or {}
    order = [c for c in now.get("flow") or sorted(comps) if c in comps]
    latency = _latencies(now.get("executors") or [])
    rows = []
    for cid in order:
        c, p = comps[cid], old.get(cid) or {}
        rates = [max(0, int(c.get(k) or 0) - int(p.get(k) or 0)) / elapsed if elapsed > 0
                 else 0.0 for k in RATES]
        lat = latency.get(cid)
        rows.append([cid, str(c.get("kind") or ""), str(c.get("executors") or 0),
                     str(c.get("tasks") or 0), *(f"{r:,.1f}" for r in rates),
                     "-" if lat is None else f"{lat:,.3f}", f"{int(c.get('failed') or 0):,}",
                     f"{_total(now.get('executors') or [], cid, 'queued') or 0:,}",
                     _count_or_dash(_total(now.get("executors") or [], cid, "pending"))])
    head = ["COMPONENT", "KIND", "EXEC", "TASKS", "EMIT/s", "EXEC/s", "ACK/s", "FAIL/s",
            "LATENCY ms", "FAILED", "QUEUED", "PENDING"]
    lines = [f"{now.get('name')} ({now.get('id')})  {now.get('status')}  "
             f"workers {now.get('num_workers')}  uptime {int(now.get('uptime_secs') or 0)}s  "
             f"rates over the last {elapsed:.1f}s", ""]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for row in [head, *rows]:
        lines.append("  ".join(v.ljust(w) if i < 2 else v.rjust(w)
                               for i, (v, w) in enumerate(zip(row, widths, strict=True))))
    errors = now.get("errors") or {}
    newest = [(cid, errs[-1]) for cid, errs in sorted(errors.items()) if errs]
    if newest:
        lines += ["", "newest errors:"]
        for cid, err in newest:
            text = str(err.get("error") or "").strip().splitlines()
            lines.append(f"  {cid}: {text[-1] if text else '?'}")
    return "\n".join(lines) + "\n"


def _latencies(executors: list[dict[str, Any]]) -> dict[str, float]:
    """component -> mean latency in ms (bolts: execute, spouts: complete), weighted by the
    tuples each executor measured."""
    sums: dict[str, list[float]] = {}
    for ex in executors:
        spout = ex.get("kind") == "spout"
        ms = ex.get("complete_latency_ms" if spout else "execute_latency_ms")
        n = int(ex.get("acked" if spout else "executed") or 0)
        if isinstance(ms, (int, float)) and n > 0 and ms > 0:
            acc = sums.setdefault(str(ex.get("component")), [0.0, 0])
            acc[0] += ms * n
            acc[1] += n
    return {c: total / n for c, (total, n) in sums.items() if n}


def _total(executors: list[dict[str, Any]], cid: str, key: str) -> int | None:
    """Sum of ``key`` over the component's executors (None when none reports it)."""
    values = [int(ex[key]) for ex in executors
              if ex.get("component") == cid and ex.get(key) is not None]
    return sum(values) if values else None


def _count_or_dash(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"
