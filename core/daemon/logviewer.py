"""The logviewer: a supervisor serves the log files of its workers over HTTP.

Started by the supervisor on ``logviewer.host`` (default: the host name it advertises) and
``logviewer.port`` (Storm's key, default 8000; 0 picks a free port); the port it got is
published as ``logviewer_port`` in ``/supervisors/<id>``. Plain text, read-only, files under
``storm.local.dir/logs`` only:

- ``GET /log?topology=T&port=P`` the log of the worker on port P of topology T;
  ``&file=out`` its raw stdout/stderr, ``&file=metrics`` its metrics log, ``&file=events`` its
  events log (``topology.debug``, ``squall debug``; of a worker that has sampled nothing yet:
  an empty log, whose whole-file answer is a one-line note, :data:`NO_EVENTS_NOTE`);
- ``GET /daemonlog?name=supervisor`` a daemon's log (``nimbus``, ``supervisor``, ``ui``,
  ``drpc``: each one started with this ``storm.local.dir``);
- ``GET /list?name=NAME`` the worker files it holds of the topologies named NAME (ids
  ``NAME-<n>-<secs>``; without ``name``: of every topology), a killed one's too until its
  supervisor deletes them (``squall logs`` of a killed topology), as JSON:
  ``{"files": [{"topology", "port", "file", "size", "mtime"}]}`` (``file`` as ``/log``'s
  ``&file=``; rotated backups are not listed), only of the topologies the caller may read;
- ``&start=B`` (a byte offset; negative: from the end) and ``&length=N`` select a part;
- ``&rotated=1`` the file's newest rotated backup (``<file>.1``) instead of the file itself,
  under the same access rules (older backups are not served).

With ``nimbus.authentication`` on, a worker's logs are for its topology's owner and admins,
daemon logs for admins (:mod:`squall.daemon.logviewer_access`): a request without
``Authorization: Bearer <token>`` (or a link the UI signed) is 401, another user's is 403,
both before the file is looked up, so neither learns which logs exist.

Every answer carries ``X-Log-Size`` (the file's size now) and ``X-Log-Id``, the identity of the
file it was read from (device, inode and a digest of its first line: a file renamed by a
rotation keeps it, a new file gets another, :func:`same_log_file` compares two). A client
following a log asks for ``start=<what it has>`` next; when the identity changed, the file
rotated: the rest of the old one is in ``&rotated=1`` from the same offset, then the new one
from 0.
A request naming no known file is 404; malformed parameters are 400; 503 while the owner
of a topology cannot be read; a method other than GET and HEAD (HEAD: GET's answer without
its body) is 405; a failure of the logviewer's own is 500 and one log line. Every error is
one plain-text line. Requests are served on threads of their own; nothing here is called per
tuple.
"""
from __future__ import annotations

import json
import logging
import os
import re
import stat
import threading
import zlib
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from squall.daemon.log_files import worker_log_name
from squall.daemon.logviewer_access import Forbidden, LogAccess, Unauthorized
from squall.errors import SquallError

log = logging.getLogger(__name__)
CHUNK = 1 << 16
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_SUFFIXES = {"log": ".log", "out": ".out", "metrics": ".metrics.log", "events": ".events.log"}
_DAEMONS = ("nimbus", "supervisor", "ui", "drpc")
#: the body of a whole events log asked for before anything was sampled into it
NO_EVENTS_NOTE = ("no tuples recorded in this worker's events log yet: turn debugging on "
                  "with `squall debug TOPOLOGY --enable` or the UI's debug\n")


class BadRequest(Exception):
    """A malformed request (answered 400 with the message)."""


#: how much of a file's start :func:`file_identity` reads for the digest of its first line
_FIRST_LINE_MAX = 4096


def worker_file(logs: Path, topology: str, port: str, kind: str = "log",
                rotated: bool = False) -> Path | None:
    """The file a ``/log`` request names (``rotated``: its ``.1`` backup), or None when the
    parameters cannot name one."""
    if not _NAME.match(topology) or ".." in topology or not (port.isascii() and port.isdigit()):
        return None
    suffix = _SUFFIXES.get(kind)
    if suffix is None:
        return None
    name = worker_log_name(topology, int(port))[:-len(".log")] + suffix
    return _inside(logs, logs / (name + ".1" if rotated else name))


def worker_files(logs: Path, name: str | None = None) -> list[dict[str, Any]]:
    """The worker files in ``logs`` (not their rotated backups), of the topologies named
    ``name`` only when given: ``topology``, ``port``, ``file`` (``log``, ``out``,
    ``metrics``, ``events``), ``size`` and ``mtime``, sorted. A file that goes while
    listed is left out."""
    named = re.compile(re.escape(name) + r"-\d+-\d+") if name is not None else None
    out = []
    try:
        paths = list(logs.iterdir())
    except FileNotFoundError:
        return []
    for path in paths:
        found = _worker_file_parts(path.name)
        if found is None or (named is not None and not named.fullmatch(found[0])):
            continue
        try:
            st = path.lstat()
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):       # a link is never served (see _inside)
            continue
        out.append({"topology": found[0], "port": found[1], "file": found[2],
                    "size": st.st_size, "mtime": st.st_mtime})
    return sorted(out, key=lambda f: (f["topology"], f["port"], f["file"]))


def _worker_file_parts(file_name: str) -> tuple[str, int, str] | None:
    """``(topology id, port, kind)`` of a worker file's name; None for any other file."""
    for kind, suffix in sorted(_SUFFIXES.items(), key=lambda item: -len(item[1])):
        if file_name.endswith(suffix):
            topology, _, port = file_name[:-len(suffix)].rpartition("-")
            if topology and _NAME.match(topology) and port.isascii() and port.isdigit():
                return topology, int(port), kind
            return None
    return None


def daemon_file(logs: Path, name: str, rotated: bool = False) -> Path | None:
    if name not in _DAEMONS:
        return None
    return _inside(logs, logs / (f"{name}.log.1" if rotated else f"{name}.log"))


def file_identity(fd: int) -> str:
    """``X-Log-Id`` of the open file ``fd``: ``<device>:<inode>:<crc32 of its first line>``
    (the last part empty while the file has no whole first line yet). A rotation renames a
    file, which keeps its identity; the new file gets another even where the file system
    reuses the inode of a deleted backup."""
    st = os.fstat(fd)
    head = os.pread(fd, _FIRST_LINE_MAX, 0)
    end = head.find(b"\n")
    if end < 0 and len(head) == _FIRST_LINE_MAX:
        end = _FIRST_LINE_MAX - 1          # a first line longer than that: its start
    marker = f"{zlib.crc32(head[:end + 1]):08x}" if end >= 0 else ""
    return f"{st.st_dev:x}:{st.st_ino:x}:{marker}"


def same_log_file(a: str, b: str) -> bool:
    """Whether two ``X-Log-Id`` values name the same file: the same device and inode, and
    the same first line where both had one."""
    dev_ino_a, _, marker_a = a.rpartition(":")
    dev_ino_b, _, marker_b = b.rpartition(":")
    return dev_ino_a == dev_ino_b and (marker_a == marker_b or not marker_a or not marker_b)


def _inside(logs: Path, path: Path) -> Path | None:
    root = logs.resolve()
    try:
        resolved = path.resolve()
    except OSError:
        return None
    return resolved if resolved.parent == root else None


def byte_range(size: int, start: str | None, length: str | None) -> tuple[int, int]:
    """``(offset, count)`` of the bytes a request selects in a file of ``size`` bytes."""
    try:
        begin = int(start) if start not in (None, "") else 0
        count = int(length) if length not in (None, "") else size
    except ValueError:
        raise BadRequest("start and length must be integers") from None
    if count < 0:
        raise BadRequest("length must not be negative")
    if begin < 0:
        begin = max(0, size + begin)
    begin = min(begin, size)
    return begin, max(0, min(count, size - begin))


def _events_not_written(logs: Path, topology: str, port: str, kind: str,
                        rotated: bool) -> bool:
    """Whether a ``/log`` request names the events log of a worker that has a log but no
    events log yet (nothing was sampled: debugging is off, or no emit was sampled so far)."""
    if kind != "events" or rotated:
        return False
    events = worker_file(logs, topology, port, "events")
    worker_log = worker_file(logs, topology, port, "log")
    return (events is not None and not events.is_file()
            and worker_log is not None and worker_log.is_file())


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    #: HEAD: the answer's status and headers without its body
    _head = False
    #: whether this request's status line went out
    _answered = False

    def do_GET(self) -> None:
        self._serve(head=False)

    def do_HEAD(self) -> None:
        self._serve(head=True)

    def _serve(self, head: bool) -> None:
        """Serve the request; a failure of the logviewer's own is a 500 and one log line,
        never a connection dropped without an answer."""
        self._head, self._answered = head, False
        try:
            self._get()
        except Exception as exc:
            log.error("logviewer: %s failed: %s: %s", self.path, type(exc).__name__, exc)
            log.debug("logviewer: the failure's traceback", exc_info=True)
            self.close_connection = True
            if not self._answered:
                try:
                    self._fail(HTTPStatus.INTERNAL_SERVER_ERROR,
                               f"internal error: {type(exc).__name__}")
                except OSError:
                    pass            # the client is gone: nobody to answer

    def _refuse_method(self) -> None:
        self._answered = False
        self._fail(HTTPStatus.METHOD_NOT_ALLOWED,
                   f"{self.command} is not served: the logviewer answers GET and HEAD",
                   {"Allow": "GET, HEAD"})

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse_method

    def send_error(self, code: int, message: str | None = None,
                   explain: str | None = None) -> None:
        """The server's own refusals (a malformed request line, an unknown method) in the
        same plain-text form as the logviewer's other errors."""
        self.close_connection = True
        self._answered = False
        status = HTTPStatus(code)
        self._fail(status, message or status.phrase, {"Connection": "close"})

    def _get(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        logs = self.server.logs
        access = self.server.access
        authorization = self.headers.get("Authorization")
        rotated = query.get("rotated", "0")
        try:
            if url.path == "/list":
                files = worker_files(logs, query.get("name") or None)
                if access is not None:
                    readable = access.readable_topologies(
                        authorization, {f["topology"] for f in files})
                    files = [f for f in files if f["topology"] in readable]
                self._send_listing(files)
                return
            if url.path == "/log":
                topology = query.get("topology", "")
                path = worker_file(logs, topology, query.get("port", ""),
                                   query.get("file", "log"), rotated == "1")
                if path is not None and access is not None:
                    access.check_worker_log(authorization, query, topology)
            elif url.path == "/daemonlog":
                path = daemon_file(logs, query.get("name", ""), rotated == "1")
                if access is not None:
                    access.check_daemon_log(authorization)
            else:
                self._fail(HTTPStatus.NOT_FOUND, "unknown page: use /log, /daemonlog or /list")
                return
        except Unauthorized as exc:
            self._fail(HTTPStatus.UNAUTHORIZED, str(exc))
            return
        except Forbidden as exc:
            self._fail(HTTPStatus.FORBIDDEN, str(exc))
            return
        except SquallError as exc:     # the state store: the owner cannot be checked now
            log.warning("logviewer: cannot check who may read %s: %s", url.path, exc)
            self._fail(HTTPStatus.SERVICE_UNAVAILABLE, "cannot check access now; try again")
            return
        if rotated not in ("0", "1"):
            self._fail(HTTPStatus.BAD_REQUEST, f"rotated={rotated!r}: expected 0 or 1")
            return
        if path is None or not path.is_file():
            if url.path == "/log" and _events_not_written(
                    logs, topology, query.get("port", ""), query.get("file", "log"),
                    rotated == "1"):
                self._no_events(query)
                return
            self._fail(HTTPStatus.NOT_FOUND, "no such log file")
            return
        try:
            with path.open("rb") as f:
                size = os.fstat(f.fileno()).st_size   # of this file, even if it rotates now
                identity = file_identity(f.fileno())
                begin, count = byte_range(size, query.get("start"), query.get("length"))
                self.send_response(HTTPStatus.OK)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(count))
                self.send_header("X-Log-Size", str(size))
                self.send_header("X-Log-Id", identity)
                self.end_headers()
                self._answered = True
                if self._head:
                    return
                f.seek(begin)
                while count > 0:
                    data = f.read(min(CHUNK, count))
                    if not data:   # truncated under us: pad nothing, close the connection
                        self.close_connection = True
                        break
                    self.wfile.write(data)
                    count -= len(data)
        except BadRequest as exc:
            self._fail(HTTPStatus.BAD_REQUEST, str(exc))
        except OSError as exc:
            log.debug("logviewer: %s: %s", path, exc)

    def _send_listing(self, files: list[dict[str, Any]]) -> None:
        body = (json.dumps({"files": files}) + "\n").encode()
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self._answered = True
        if not self._head:
            self.wfile.write(body)

    def _no_events(self, query: dict[str, str]) -> None:
        """The events log of a worker that has sampled nothing yet: an empty log (size 0,
        no ``X-Log-Id``: no file yet), with a one-line note when the whole file was asked
        for (a browser following the page's link; a reader asking for a byte range from an
        offset gets nothing, and takes up the file once it appears)."""
        ranged = query.get("start") not in (None, "") or query.get("length") not in (None, "")
        body = b"" if ranged else NO_EVENTS_NOTE.encode()
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Log-Size", "0")
        self.end_headers()
        self._answered = True
        if not self._head:
            self.wfile.write(body)

    def _fail(self, status: HTTPStatus, message: str,
              headers: dict[str, str] | None = None) -> None:
        body = (message + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        if status == HTTPStatus.UNAUTHORIZED:
            self.send_header("WWW-Authenticate", 'Bearer realm="squall"')
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self._answered = True
        if not self._head:
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("logviewer %s: " + format, self.address_string(), *args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], logs: Path, access: LogAccess | None) -> None:
        super().__init__(address, _Handler)
        self.logs = logs
        self.access = access


class LogViewer:
    """Serves ``logs`` on ``(host, port)``: :meth:`start` binds (OSError when it cannot),
    :meth:`stop` closes. :attr:`port` is the bound port. ``access`` decides who reads what
    (None: everyone everything, for a logviewer outside a cluster)."""

    def __init__(self, logs: Path, host: str, port: int,
                 access: LogAccess | None = None) -> None:
        self.logs = logs
        self.host = host
        self.requested_port = port
        self.access = access
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1]) if self._server is not None else 0

    def start(self) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        self._server = _Server((self.host, self.requested_port), self.logs, self.access)
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="squall-logviewer", daemon=True)
        self._thread.start()
        log.info("logviewer serving %s on %s:%d", self.logs, self.host, self.port)

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
