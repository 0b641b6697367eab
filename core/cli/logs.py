"""``squall logs TOPOLOGY [--follow]``, ``squall set-log-level TOPOLOGY LOGGER=LEVEL`` and
``squall debug TOPOLOGY [COMPONENT] --enable|--disable|--show``.

``logs`` finds the topology's workers in the cluster state (``/assignments``: which supervisor
and port; ``/supervisors``: the host and ``logviewer_port``) and prints each worker's log,
fetched from the logviewer of its supervisor (:mod:`squall.daemon.logviewer`), under a
``==> host:port <==`` header. ``--follow`` then keeps printing what the workers write (each
line prefixed with ``[host:port]`` when there are several), following rotations and
reassignments, until Ctrl-C or the topology is gone.

``debug`` asks nimbus to sample a share of a component's emits (every component's without
COMPONENT) into the events logs of the topology's workers (:mod:`squall.runtime.event_log`), or
to stop; ``--show`` prints those events logs, fetched like ``logs``.

``set-log-level`` asks nimbus to set logger levels in every worker of the topology
(:mod:`squall.daemon.log_levels`), for ``--timeout`` seconds (0: until reset).
"""
from __future__ import annotations

import argparse
import http.client
import json
import logging
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from squall.cli.argtypes import byte_count, seconds
from squall.errors import NotAliveError

log = logging.getLogger(__name__)
FOLLOW_POLL_SECS = 1.0
#: follow re-reads the assignment every this many polls (workers move on rebalance)
REFRESH_POLLS = 5


def register(subparsers: Any) -> None:
    """Add ``logs`` and ``set-log-level`` to ``squall``'s subparsers."""
    from squall.cli.cluster import cluster_command
    p = subparsers.add_parser("logs", help="print a topology's worker logs (via the logviewers)")
    p.add_argument("name", metavar="TOPOLOGY", help="the topology's name")
    p.add_argument("-f", "--follow", action="store_true",
                   help="keep printing new log lines until Ctrl-C or the topology is gone")
    p.add_argument("--tail", type=byte_count, default=None, metavar="BYTES",
                   help="print only the last BYTES of each log (default: all of it; 0: "
                        "nothing, e.g. with --follow for new lines only)")
    p.set_defaults(func=cluster_command(cmd_logs))

    p = subparsers.add_parser("set-log-level",
                              help="change log levels in a running topology's workers")
    p.add_argument("name", metavar="TOPOLOGY", help="the topology's name")
    p.add_argument("levels", nargs="+", metavar="LOGGER=LEVEL",
                   help="a logger name (ROOT: the root logger) and DEBUG, INFO, WARNING, "
                        "ERROR, CRITICAL or RESET (back to the worker's own level)")
    p.add_argument("--timeout", type=seconds, default=0.0, metavar="S",
                   help="seconds until the levels revert (default 0: until reset)")
    p.set_defaults(func=cluster_command(cmd_set_log_level))

    p = subparsers.add_parser("debug", help="sample a running topology's emits into its "
                                            "workers' events logs, or show those logs")
    p.add_argument("name", metavar="TOPOLOGY", help="the topology's name")
    p.add_argument("component", nargs="?", default=None,
                   help="the component whose emits to sample (default: every component)")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--enable", action="store_true", help="start sampling")
    what.add_argument("--disable", action="store_true", help="stop sampling")
    what.add_argument("--show", action="store_true",
                      help="print the workers' events logs (via the logviewers)")
    p.add_argument("--sampling", type=float, default=100.0, metavar="PCT",
                   help="percentage of emits recorded with --enable (default 100)")
    p.set_defaults(func=cluster_command(cmd_debug))


@dataclass(frozen=True, order=True)
class WorkerLog:
    """Where one worker's log is served."""

    host: str
    port: int
    url: str | None          # None: its supervisor publishes no logviewer

    @property
    def label(self) -> str:
        return f"{self.host}:{self.port}"


def worker_logs(state: Any, name: str, file: str = "log") -> tuple[str, list[WorkerLog]]:
    """The topology id of ``name`` and its workers' log addresses (``file``: ``log``, or
    ``events``, ... as the logviewer names them), sorted; NotAliveError when no live topology
    has that name."""
    tid = state.find_topology_id(name)
    if tid is None:
        raise NotAliveError(f"no topology named {name!r} is running")
    assignment = state.get_assignment(tid) or {}
    hosts = assignment.get("node_host") or {}
    supervisors = state.supervisors()
    out = set()
    for node, port in (assignment.get("executor_node_port") or {}).values():
        sup = supervisors.get(str(node)) or {}
        host = str(sup.get("hostname") or hosts.get(node) or node)
        lv_port = sup.get("logviewer_port")
        url = None
        if lv_port:
            query = urllib.parse.urlencode({"topology": tid, "port": int(port), "file": file})
            url = f"http://{host}:{int(lv_port)}/log?{query}"
        out.add(WorkerLog(host, int(port), url))
    return tid, sorted(out)


def fetch(url: str, start: int | None = None, timeout: float = 10.0) -> tuple[bytes, int]:
    """``(bytes, file size)`` of a log from ``start`` (None: all; negative: from the end)."""
    if start is not None:
        url += f"&start={start}"
    with urllib.request.urlopen(url, timeout=timeout) as reply:
        data = reply.read()
        return data, int(reply.headers.get("X-Log-Size") or len(data))


def _open_state(conf: dict[str, Any]) -> Any:
    from squall import drivers
    from squall.state.cluster_state import ClusterState
    store = drivers.driver("state", conf)
    store.start()
    return store, ClusterState(store, conf)


def cmd_logs(args: argparse.Namespace, conf: dict[str, Any]) -> int:
    return _print_logs(conf, args.name, "log", args.follow, args.tail)


def _print_logs(conf: dict[str, Any], name: str, file: str, follow: bool,
                tail: int | None) -> int:
    store, state = _open_state(conf)
    try:
        _, workers = worker_logs(state, name, file)
        if not workers:
            print(f"topology {name!r} has no workers yet", file=sys.stderr)
        offsets: dict[WorkerLog, int] = {}
        failed = False
        for w in workers:
            print(f"==> {w.label} <==", flush=True)
            if tail == 0:           # from the end: nothing yet
                offsets[w], ok = _print_from(w, -1, None, show=False)
            else:
                offsets[w], ok = _print_from(w, None if tail is None else -tail, None)
            failed |= not ok
        if not follow:
            return 1 if failed else 0
        return _follow(lambda: worker_logs(state, name, file)[1], offsets)
    finally:
        store.close()


def _print_from(w: WorkerLog, start: int | None, prefix: str | None,
                show: bool = True) -> tuple[int, bool]:
    """Print ``w``'s log from ``start`` (negative: that many bytes before its end; nothing
    with ``show`` false); returns (the offset printed up to, whether it could be read).
    Problems are one line on stderr."""
    if w.url is None:
        print(f"squall: {w.label}: its supervisor serves no logs (logviewer not running)",
              file=sys.stderr)
        return 0, False
    try:
        data, size = fetch(w.url, start)
        if start is not None and start > size:   # rotated since: the new file from its start
            start = 0
            data, size = fetch(w.url, start)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:   # no log written yet
            return 0, True
        print(f"squall: {w.label}: logviewer answered {exc.code}", file=sys.stderr)
        return 0, False
    except (OSError, ValueError, http.client.HTTPException) as exc:
        print(f"squall: {w.label}: cannot read its log from its logviewer: {exc!r}",
              file=sys.stderr)
        return 0, False
    if show:
        _write(data, prefix)
    offset = size if start is None or start < 0 else start + len(data)
    return offset, True


def _write(data: bytes, prefix: str | None) -> None:
    text = data.decode("utf-8", errors="replace")
    if prefix and text:
        text = "".join(f"{prefix}{line}" for line in text.splitlines(keepends=True))
    sys.stdout.write(text)
    sys.stdout.flush()


def _follow(find: Callable[[], list[WorkerLog]], offsets: dict[WorkerLog, int]) -> int:
    polls = 0
    try:
        while True:
            time.sleep(FOLLOW_POLL_SECS)   # the poll period of a follower, not synchronization
            polls += 1
            if polls % REFRESH_POLLS == 0:
                try:
                    current = find()
                except NotAliveError:
                    print("squall: the topology is gone", file=sys.stderr)
                    return 0
                for w in current:
                    offsets.setdefault(w, 0)
                for w in [w for w in offsets if w not in current]:
                    del offsets[w]
            several = len(offsets) > 1
            for w in sorted(offsets):
                if w.url is not None:
                    offsets[w], _ = _print_from(w, offsets[w],
                                                f"[{w.label}] " if several else None)
    except KeyboardInterrupt:
        return 0


def cmd_set_log_level(args: argparse.Namespace, conf: dict[str, Any]) -> int:
    from squall.daemon.log_levels import parse_assignment
    from squall.daemon.nimbus_client import NimbusClient
    levels = dict(parse_assignment(item) for item in args.levels)
    client = NimbusClient(conf)
    try:
        client.set_log_levels(args.name, levels, args.timeout)
    finally:
        client.close()
    how = f" for {args.timeout:g} s" if args.timeout else ""
    print(f"log levels of {args.name!r}: {json.dumps(levels)}{how}")
    return 0


def cmd_debug(args: argparse.Namespace, conf: dict[str, Any]) -> int:
    from squall.daemon.nimbus_client import NimbusClient
    if args.show:
        return _print_logs(conf, args.name, "events", False, None)
    client = NimbusClient(conf)
    try:
        client.debug(args.name, args.component, bool(args.enable), args.sampling)
    finally:
        client.close()
    what = f"component {args.component!r}" if args.component else "every component"
    if args.enable:
        print(f"sampling {args.sampling:g}% of the emits of {what} of {args.name!r} into the "
              f"events logs (squall debug {args.name} --show)")
    else:
        print(f"stopped sampling the emits of {what} of {args.name!r}")
    return 0


__all__ = ["WorkerLog", "register", "worker_logs"]
