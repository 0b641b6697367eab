"""``squall monitor TOPOLOGY``: a live terminal view of a running topology.

Every ``--interval`` seconds it asks nimbus for the topology's info and shows one line per
component in flow order (sources first): its executors and tasks, its rates (emitted, executed,
acked and failed tuples per second: each executor's counters between its worker's last two
reports, see :class:`Rates`), its latency (bolts: mean execute latency; spouts: mean complete
latency, ms, since start), the failed tuples in all, the tuples waiting in its queues and, for
spouts, the tuples pending (in flight, not yet acked or failed); a component none of whose
executors has reported yet (after a submit or a rebalance) shows its planned executors and
tasks with dashes; then the newest error of each
component that reported one. On a terminal each frame replaces the last; ``--once`` prints a
single frame, once every worker reported twice, and exits. When the topology is killed the
view ends with "the topology is gone" (exit status 0).
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

from squall.cli.argtypes import positive_seconds
from squall.errors import NotAliveError

RATES = ("emitted", "executed", "acked", "failed")


def register(subparsers: Any) -> None:
    from squall.cli.cluster import cluster_command
    p = subparsers.add_parser("monitor", help="a live view of a topology: rates, latencies, "
                                              "failures and queues per component")
    p.add_argument("name", metavar="TOPOLOGY", help="the topology's name")
    p.add_argument("--interval", type=positive_seconds, default=2.0, metavar="S",
                   help="seconds between frames (default 2)")
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


class Rates:
    """Each component's rates from successive topology infos. Workers report their counters
    on their own period (``task.heartbeat.frequency.secs``), not when the monitor reads: an
    executor's rate is the change of its counters between its worker's last two reports,
    over the time between them (their ``time_secs``), and stays until the next report. So a
    frame read between two reports shows the last rates, not zero, and the next one not
    twice the rate."""

    def __init__(self) -> None:
        #: (worker, executor) -> (report time, counters, rates since the report before)
        self._last: dict[tuple[Any, Any], tuple[float, tuple[int, ...], tuple[float, ...] | None]] = {}

    def update(self, info: dict[str, Any], read_at: float) -> tuple[dict[str, list[float]], bool]:
        """Take one info (read at ``read_at``, the clock used where a worker's report time is
        unknown); returns component -> rates (in :data:`RATES` order) and whether every
        executor has rates (each one's worker reported twice)."""
        times = {w.get("worker"): float(w.get("time_secs") or 0)
                 for w in info.get("workers") or []}
        out: dict[str, list[float]] = {}
        complete = True
        for ex in info.get("executors") or []:
            key = (ex.get("worker"), ex.get("executor"))
            at = times.get(ex.get("worker")) or read_at
            counts = tuple(int(ex.get(k) or 0) for k in RATES)
            prev = self._last.get(key)
            if prev is None or at > prev[0]:
                rates = (None if prev is None else
                         tuple(max(0, c - p) / (at - prev[0]) for c, p in zip(counts, prev[1])))
                self._last[key] = (at, counts, rates)
            else:
                rates = prev[2]             # no new report: its last rates stand
            if rates is None:
                complete = False
                continue
            acc = out.setdefault(str(ex.get("component")), [0.0] * len(RATES))
            for i, r in enumerate(rates):
                acc[i] += r
        return out, complete


def watch(read: Callable[[], dict[str, Any]], interval: float, once: bool,
          clear: bool, patience: float = 30.0) -> int:
    """Print frames of ``read()`` until Ctrl-C or the topology is gone (killed: ``read``
    raises NotAliveError after the first frame; "the topology is gone" on stderr, 0, as
    ``squall logs --follow``). With ``once``, one frame, as soon as every worker reported
    twice (or after ``patience`` seconds, with what is known). A NotAliveError before any
    frame is the command's error."""
    rates = Rates()
    rates.update(read(), time.monotonic())
    started = time.monotonic()
    shown = False
    try:
        while True:
            time.sleep(min(interval, 1.0) if once else interval)   # the sampling period
            try:
                now = read()
            except NotAliveError:
                if not shown:
                    raise
                print("squall: the topology is gone", file=sys.stderr)
                return 0
            by_component, complete = rates.update(now, time.monotonic())
            if once and not complete and time.monotonic() - started < patience:
                continue
            text = frame(now, by_component)
            sys.stdout.write(("\x1b[H\x1b[2J" if clear else "") + text
                             + ("" if clear or once else "\n"))
            sys.stdout.flush()
            shown = True
            if once:
                return 0
    except KeyboardInterrupt:
        return 0


def frame(now: dict[str, Any], rates: dict[str, list[float]]) -> str:
    """One frame: the header, the component table (``rates``: component -> rates in
    :data:`RATES` order, from :class:`Rates`), the newest errors."""
    comps = now.get("components") or {}
    # a user's component no executor of which has reported yet (its workers are starting,
    # after a submit or a rebalance) keeps its row, from the topology's graph, with dashes
    planned = {n["id"]: n for n in now.get("graph") or [] if n.get("id") not in comps}
    order = [c for c in now.get("flow") or sorted(comps) if c in comps or c in planned]
    latency = _latencies(now.get("executors") or [])
    rows = []
    for cid in order:
        if cid in planned:
            n = planned[cid]
            rows.append([cid, str(n.get("kind") or ""), str(n.get("executors") or 0),
                         str(n.get("tasks") or 0), *["-"] * (len(RATES) + 4)])
            continue
        c = comps[cid]
        lat = latency.get(cid)
        rows.append([cid, str(c.get("kind") or ""), str(c.get("executors") or 0),
                     str(c.get("tasks") or 0),
                     *(f"{r:,.1f}" for r in rates.get(cid, [0.0] * len(RATES))),
                     "-" if lat is None else f"{lat:,.3f}", f"{int(c.get('failed') or 0):,}",
                     f"{_total(now.get('executors') or [], cid, 'queued') or 0:,}",
                     _count_or_dash(_total(now.get("executors") or [], cid, "pending"))])
    head = ["COMPONENT", "KIND", "EXEC", "TASKS", "EMIT/s", "EXEC/s", "ACK/s", "FAIL/s",
            "LATENCY ms", "FAILED", "QUEUED", "PENDING"]
    lines = [f"{now.get('name')} ({now.get('id')})  {now.get('status')}  "
             f"workers {now.get('num_workers')}  uptime {int(now.get('uptime_secs') or 0)}s  "
             f"rates between each worker's last two reports", ""]
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
