"""``squall logs TOPOLOGY [--follow]``, ``squall set-log-level TOPOLOGY LOGGER=LEVEL`` and
``squall debug TOPOLOGY [COMPONENT] --enable|--disable|--show``.

``logs`` asks nimbus for the topology's workers (``NimbusClient.topology_info``: the host,
port and supervisor's ``logviewer_port`` of each assigned worker), so nimbus
checks that the caller may see the topology as for every other command: a user with only a
token needs no ZooKeeper credentials, and another user's topology is refused in one line. It
prints each worker's log, fetched from the logviewer of its supervisor
(:mod:`squall.daemon.logviewer`, with the caller's ``squall.auth.token`` as a bearer token when
``nimbus.authentication`` is on), under a ``==> host:port <==`` header. ``--follow`` then keeps
printing what the workers write (each line prefixed with ``[host:port]`` when there are
several), following rotations and reassignments, until Ctrl-C or the topology is gone. Each
worker's ``.out`` file (what the process wrote outside logging: its raw stdout/stderr, the
trace faulthandler writes when the worker dies of a signal such as SIGSEGV) follows its log
under a ``==> host:port .out (stdout/stderr) <==`` header when it holds anything; followed,
its lines are prefixed with that label.

A topology killed a moment ago is no longer known to nimbus: ``logs`` then prints what the
supervisors' logviewers still keep of topologies of that name (:mod:`squall.cli.kept_logs`),
under a ``==> host:port topology-id <==`` header, or says in one line that none does.

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from squall.cli.argtypes import byte_count, seconds
from squall.errors import NotAliveError
from squall.security.settings import authentication_mode

log = logging.getLogger(__name__)
FOLLOW_POLL_SECS = 1.0
#: follow re-reads the assignment every this many polls (workers move on rebalance)
REFRESH_POLLS = 5
#: the worker files ``squall logs`` prints, as the logviewer names them (``&file=``): the
#: log, then the raw stdout/stderr (printed only when it holds anything)
LOG_FILES = ("log", "out")


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


def file_label(label: str, file: str) -> str:
    """``label`` (a worker's ``host:port``, a kept file's ``host:port topology-id``) with
    `` .out (stdout/stderr)`` when ``file`` is the worker's ``.out``, not one of its logs."""
    return f"{label} .out (stdout/stderr)" if file == "out" else label


@dataclass(frozen=True, order=True)
class WorkerLog:
    """Where one worker's log (``file``, as the logviewer names it) is served. Ordered by
    worker, a worker's log before its ``.out`` (the url names the file)."""

    host: str
    port: int
    url: str | None          # None: its supervisor publishes no logviewer
    file: str = "log"

    @property
    def label(self) -> str:
        return file_label(f"{self.host}:{self.port}", self.file)


def worker_logs(info: Mapping[str, Any], file: str = "log") -> list[WorkerLog]:
    """The log addresses of the workers of a topology info (``NimbusClient.topology_info``;
    ``file``: ``log``, ``out``, or ``events``, ... as the logviewer names them), sorted."""
    tid = str(info.get("id", ""))
    out = set()
    # every assigned worker: one that never beat (it crashed at start) has the log saying why
    for w in info.get("assigned_workers") or info.get("workers") or ():
        host = str(w.get("host") or w.get("supervisor_id") or "")
        port = int(w.get("port") or 0)
        lv_port = w.get("logviewer_port")
        url = None
        if lv_port:
            query = urllib.parse.urlencode({"topology": tid, "port": port, "file": file})
            url = f"http://{host}:{int(lv_port)}/log?{query}"
        out.add(WorkerLog(host, port, url, file))
    return sorted(out)


def worker_files(info: Mapping[str, Any], files: Sequence[str]) -> list[WorkerLog]:
    """The first of ``files`` of every worker of a topology info (its log: a worker whose
    supervisor serves no logs is said once, for it), then the others of each worker whose
    supervisor does; sorted, so each worker's files come together."""
    first, *more = files
    out = worker_logs(info, first)
    out += [w for file in more for w in worker_logs(info, file) if w.url is not None]
    return sorted(out)


def auth_headers(conf: Mapping[str, Any]) -> dict[str, str]:
    """The headers a logviewer of this cluster needs from this process: its
    ``squall.auth.token`` as a bearer token when ``nimbus.authentication`` is on (none
    otherwise: the token is not sent where nobody checks it)."""
    token = conf.get("squall.auth.token")
    if authentication_mode(conf) == "none" or not token:
        return {}
    return {"Authorization": f"Bearer {token}"}


@dataclass(frozen=True)
class LogPart:
    """What a logviewer answered: bytes of a file, the file's size then and its identity
    (``X-Log-Id``; None from a logviewer that sends none)."""

    data: bytes
    size: int
    identity: str | None


@dataclass(frozen=True)
class Position:
    """How far a worker's log was printed: ``offset`` bytes of the file ``identity`` names
    (None: not known yet)."""

    offset: int = 0
    identity: str | None = None


def fetch(url: str, start: int | None = None, timeout: float = 10.0,
          headers: Mapping[str, str] | None = None, rotated: bool = False) -> LogPart:
    """A log from ``start`` (None: all; negative: from the end); ``rotated``: its newest
    rotated backup instead. Raises urllib's errors (HTTPError 404: no such file)."""
    if start is not None:
        url += f"&start={start}"
    if rotated:
        url += "&rotated=1"
    request = urllib.request.Request(url, headers=dict(headers or {}))
    with urllib.request.urlopen(request, timeout=timeout) as reply:
        data = reply.read()
        return LogPart(data, int(reply.headers.get("X-Log-Size") or len(data)),
                       reply.headers.get("X-Log-Id"))


def cmd_logs(args: argparse.Namespace, conf: dict[str, Any]) -> int:
    return _print_logs(conf, args.name, LOG_FILES, args.follow, args.tail)


def _print_logs(conf: dict[str, Any], name: str, files: Sequence[str], follow: bool,
                tail: int | None) -> int:
    """Print ``files`` (:func:`worker_files`) of each worker of topology ``name``; the first
    under its header always, the others only when they hold anything."""
    from squall.daemon.nimbus_client import NimbusClient
    client = NimbusClient(conf)
    headers = auth_headers(conf)
    try:
        # nimbus answers only a caller that may see the topology (AuthorizationError, a
        # NotAliveError listing the caller's own otherwise), as for kill or rebalance
        try:
            info = client.topology_info(name)
        except NotAliveError as exc:    # killed: its supervisors may keep its logs a while
            return _print_kept_logs(client, headers, name, files, follow, tail, exc)
        workers = worker_files(info, files)
        if not workers:
            print(f"topology {name!r} has no workers yet", file=sys.stderr)
        positions: dict[WorkerLog, Position] = {}
        failed = False
        for w in workers:
            title, optional = f"==> {w.label} <==", w.file != files[0]
            if not optional:
                print(title, flush=True)
            if tail == 0:           # from the end: nothing yet
                positions[w], ok = _print_from(w, headers, -1, show=False)
            else:
                positions[w], ok = _print_from(w, headers, None if tail is None else -tail,
                                               title=title if optional else None)
            failed |= not ok
        if not follow:
            return 1 if failed else 0
        return _follow(lambda: worker_files(client.topology_info(name), files),
                       Follower(headers, positions))
    finally:
        client.close()


def _print_kept_logs(client: Any, headers: Mapping[str, str], name: str,
                     files: Sequence[str], follow: bool, tail: int | None,
                     not_running: NotAliveError) -> int:
    """Print the ``files`` the supervisors still keep of killed topologies named ``name``
    (:mod:`squall.cli.kept_logs`; ``tail`` as for a running one; as for a running one, the
    files after the first only when they hold anything); ``not_running`` (nimbus's answer),
    with a word on the logs, when none does."""
    from squall.cli.kept_logs import kept_logs
    kept = kept_logs(client.cluster_info().supervisors, name, files, headers)
    if not kept:
        raise NotAliveError(f"{not_running}; no supervisor keeps logs of a topology named "
                            f"{name!r}") from None
    print(f"squall: topology {name!r} is not running; printing the logs its supervisors "
          "still keep", file=sys.stderr)
    failed = False
    for k in kept:
        title, optional = f"==> {file_label(k.label, k.file)} <==", k.file != files[0]
        if not optional:
            print(title, flush=True)
        _, ok = _print_from(WorkerLog(k.host, k.port, k.url, k.file), headers,
                            None if tail is None else -tail, show=tail != 0,
                            title=title if optional else None)
        failed |= not ok
    if follow:
        print("squall: nothing to follow: the topology is not running", file=sys.stderr)
    return 1 if failed else 0


def _print_from(w: WorkerLog, headers: Mapping[str, str], start: int | None,
                show: bool = True, title: str | None = None) -> tuple[Position, bool]:
    """Print ``w``'s log from ``start`` (None: all of it; negative: that many bytes before
    its end; nothing with ``show`` false), under ``title`` when given and anything is
    printed; returns where that left it and whether it could be read. Problems are one
    line on stderr."""
    if w.url is None:
        print(f"squall: {w.label}: its supervisor serves no logs (logviewer not running)",
              file=sys.stderr)
        return Position(), False
    try:
        part = fetch(w.url, start, headers=headers)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:   # no log written yet
            return Position(), True
        _report(w, exc)
        return Position(), False
    except (OSError, ValueError, http.client.HTTPException) as exc:
        _report(w, exc)
        return Position(), False
    if show and part.data:
        if title is not None:
            print(title, flush=True)
        _write(part.data, None)
    return Position(part.size, part.identity), True


class Follower:
    """Prints what the workers' logs get past their :class:`Position` (``squall logs
    --follow``), each line prefixed with ``[host:port]`` when there are several; called
    from the command's thread, blocks on the logviewers (10 s at most each)."""

    def __init__(self, headers: Mapping[str, str],
                 positions: Mapping[WorkerLog, Position]) -> None:
        from squall.daemon.logviewer import same_log_file   # the X-Log-Id contract
        self._same_file = same_log_file
        self._headers = dict(headers)
        self.positions = dict(positions)

    def workers(self, current: list[WorkerLog]) -> None:
        """Follow ``current`` from now on: new workers' logs from their start, gone ones
        no longer."""
        for w in current:
            self.positions.setdefault(w, Position())
        for w in [w for w in self.positions if w not in current]:
            del self.positions[w]

    def poll(self) -> None:
        """Print what every followed log got since the last poll; a worker's ``.out`` lines
        are always prefixed with its label."""
        several = len({(w.host, w.port) for w in self.positions}) > 1
        for w in sorted(self.positions):
            if w.url is not None:
                self.positions[w] = self._print_more(
                    w, self.positions[w], f"[{w.label}] " if several or w.file == "out"
                    else None)

    def _print_more(self, w: WorkerLog, pos: Position, prefix: str | None) -> Position:
        """Print ``w``'s log past ``pos`` and return the new position. When the file is
        another than at ``pos`` (it rotated: ``X-Log-Id`` changed), the rest of the old
        one comes first, from the rotated backup, then the new file from its start; a file
        that shrank under the same (or an unknown) identity is read again from 0.
        Problems are one line on stderr and leave ``pos`` for the next poll."""
        assert w.url is not None
        try:
            part = fetch(w.url, pos.offset, headers=self._headers)
            moved = (pos.identity is not None and part.identity is not None
                     and not self._same_file(pos.identity, part.identity))
            if moved or part.size < pos.offset:
                if moved:
                    self._print_rotated_rest(w, pos, prefix)
                pos = Position(0, part.identity)
                part = fetch(w.url, 0, headers=self._headers)
        except urllib.error.HTTPError as exc:
            if exc.code != 404:   # 404: no log written yet
                _report(w, exc)
            return pos
        except (OSError, ValueError, http.client.HTTPException) as exc:
            _report(w, exc)
            return pos
        _write(part.data, prefix)
        return Position(pos.offset + len(part.data), part.identity)

    def _print_rotated_rest(self, w: WorkerLog, pos: Position, prefix: str | None) -> None:
        """Print the rotated file at ``pos`` from its offset, if it is still the newest
        backup; say so in one line otherwise (it rotated again since: lines were lost)."""
        assert w.url is not None and pos.identity is not None
        try:
            old: LogPart | None = fetch(w.url, pos.offset, headers=self._headers,
                                        rotated=True)
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                raise
            old = None
        if old is not None and old.identity is not None \
                and self._same_file(pos.identity, old.identity):
            _write(old.data, prefix)
        else:
            print(f"squall: {w.label}: the log rotated more than once since the last read; "
                  "lines between were not printed", file=sys.stderr)


def _report(w: WorkerLog, exc: Exception) -> None:
    """One line on stderr for a log that could not be read."""
    if isinstance(exc, urllib.error.HTTPError):
        why = _first_line(exc)
        print(f"squall: {w.label}: logviewer answered {exc.code}{': ' + why if why else ''}",
              file=sys.stderr)
    else:
        print(f"squall: {w.label}: cannot read its log from its logviewer: {exc!r}",
              file=sys.stderr)


def _first_line(exc: urllib.error.HTTPError) -> str:
    """The first line of an error answer's body (the logviewer's one-line reason)."""
    try:
        body = exc.read(512).decode("utf-8", errors="replace")
    except (OSError, http.client.HTTPException):
        return ""
    return body.strip().splitlines()[0] if body.strip() else ""


def _write(data: bytes, prefix: str | None) -> None:
    text = data.decode("utf-8", errors="replace")
    if prefix and text:
        text = "".join(f"{prefix}{line}" for line in text.splitlines(keepends=True))
    sys.stdout.write(text)
    sys.stdout.flush()


def _follow(find: Callable[[], list[WorkerLog]], follower: Follower) -> int:
    polls = 0
    try:
        while True:
            time.sleep(FOLLOW_POLL_SECS)   # the poll period of a follower, not synchronization
            polls += 1
            if polls % REFRESH_POLLS == 0:
                try:
                    follower.workers(find())
                except NotAliveError:
                    print("squall: the topology is gone", file=sys.stderr)
                    return 0
            follower.poll()
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
        return _print_logs(conf, args.name, ("events",), False, None)
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


__all__ = ["LOG_FILES", "Follower", "LogPart", "Position", "WorkerLog", "auth_headers",
           "file_label", "register", "worker_files", "worker_logs"]
