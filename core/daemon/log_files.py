"""Log files of squall's processes: where they live, how they rotate and how they are routed.

Layout under ``storm.local.dir/logs/``:

====================================  =========================================================
``<topology-id>-<port>.log``          a worker's log (``.1`` ... ``.N`` its rotated backups)
``<topology-id>-<port>.out``          what the worker process wrote to its raw stdout/stderr
                                      outside Python's logging (a crash of the interpreter)
``<topology-id>-<port>.metrics.log``  the ``log`` metrics consumer's data points, kept out of
                                      the worker log (``worker.metrics.log.separate``)
``<topology-id>-<port>.events.log``   sampled emits (``topology.debug``, ``squall debug``)
``nimbus.log``, ``supervisor.log``,   each daemon's own log
``ui.log``
====================================  =========================================================

Every ``.log`` file rotates when it would pass ``worker.log.max.bytes`` and keeps
``worker.log.backup.count`` backups. A worker's ``.out`` file is written by the process (and
its children) through the file descriptors it was started with, which no handler of ours sees:
its supervisor keeps it near that size from outside (:func:`cap_out_file`, every round).
Nothing here runs per tuple.
"""
from __future__ import annotations

import codecs
import io
import logging
import logging.handlers
import os
import re
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from squall.runtime.loop import component_of

log = logging.getLogger(__name__)
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: the logger the ``log`` metrics consumer writes its data points to
METRICS_LOGGER = "squall.metrics"
_WORKER_FILE = re.compile(
    r"^(?P<topology>.+)-(?P<port>\d+)\.(?:log|out|metrics\.log|events\.log)(?:\.\d+)?$")
#: the logger sampled emits go to (:mod:`squall.runtime.event_log`)
EVENTS_LOGGER = "squall.events"


def logs_dir(local_dir: str | os.PathLike[str]) -> Path:
    """``storm.local.dir/logs``."""
    return Path(local_dir) / "logs"


def worker_log_name(topology_id: str, port: int) -> str:
    """The file name of the worker log of ``(topology_id, port)``."""
    return f"{topology_id}-{int(port)}.log"


def worker_out_name(topology_id: str, port: int) -> str:
    """The file name of the raw stdout/stderr of the worker of ``(topology_id, port)``."""
    return f"{topology_id}-{int(port)}.out"


def cap_out_file(path: Path, max_bytes: int, backups: int) -> bool:
    """Keep a worker's ``.out`` file (``path``) near ``max_bytes`` while the worker writes
    it: once past it, the file's newest ``max_bytes`` (from the first whole line) become
    ``.1``, the older backups shift up to ``.<backups>`` (the oldest dropped; with
    ``backups`` 0 nothing is kept), and the file is emptied in place (copy and truncate).
    The worker's stdout and stderr, its children's too, were opened to append, so what they
    write next goes at the start of the emptied file. Lost: what was written between the
    copy and the truncation (a few lines at most), and what a single round wrote beyond
    ``max_bytes``. A ``max_bytes`` of 0 never caps. Returns whether it was capped; OSError
    when the file cannot be read or emptied (a backup that cannot be written is logged and
    skipped: the file is emptied all the same, so a full disk gets its room back)."""
    if not max_bytes:
        return False
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return False
    if size <= max_bytes:
        return False
    if backups:
        try:
            _keep_tail(path, size, max_bytes, backups)
        except OSError as exc:
            log.warning("cannot keep the end of %s before emptying it: %s", path,
                        exc.strerror or exc)
    os.truncate(path, 0)
    return True


def _keep_tail(path: Path, size: int, max_bytes: int, backups: int) -> None:
    """Shift ``path``'s backups up by one (``.N`` dropped) and copy its last ``max_bytes``
    as they are now (``size`` or more), from the first line that starts in them (within
    4 KiB), to ``.1``."""
    for n in range(backups - 1, 0, -1):
        older = path.with_name(f"{path.name}.{n}")
        if older.exists():
            os.replace(older, path.with_name(f"{path.name}.{n + 1}"))
    first = path.with_name(f"{path.name}.1")
    try:
        with open(path, "rb") as src, open(first, "wb") as dst:
            start = max(size, os.fstat(src.fileno()).st_size) - max_bytes
            src.seek(start)
            cut = src.readline(4096)    # the rest of a line cut at the seek, when short
            if not cut.endswith(b"\n"):
                src.seek(start)
            left = start + max_bytes - src.tell()
            while left > 0:             # no more: a fast writer is not chased to its end
                block = src.read(min(left, 1 << 20))
                if not block:
                    break
                dst.write(block)
                left -= len(block)
    except OSError:
        first.unlink(missing_ok=True)
        raise


def worker_file_topology(name: str) -> str | None:
    """The topology id a worker's log file belongs to (``None`` for a daemon's file)."""
    m = _WORKER_FILE.match(name)
    return m.group("topology") if m else None


def rotation(conf: Mapping[str, Any]) -> tuple[int, int]:
    """``(max bytes, backup count)`` from ``worker.log.max.bytes`` / ``worker.log.backup.count``
    (a max of 0 never rotates)."""
    return (max(0, int(conf.get("worker.log.max.bytes") or 0)),
            max(0, int(conf.get("worker.log.backup.count") or 0)))


class _RotatingFile(logging.handlers.RotatingFileHandler):
    """The standard rotating handler, except that without backups (``backupCount`` 0) a
    rollover empties the file: the standard one then reopens it for appending, so the file
    grew without end (and was reopened at every record past the max)."""

    def doRollover(self) -> None:
        if self.backupCount > 0:
            super().doRollover()
            return
        if self.stream:
            self.stream.close()
            self.stream = None  # type: ignore[assignment]
        with open(self.baseFilename, "w", encoding=self.encoding):
            pass                        # emptied: no backup is kept
        if not self.delay:
            self.stream = self._open()


class _WatchedRotatingFile(_RotatingFile):
    """A daemon's log: also written again where it belongs when its file was deleted or
    replaced under it (``storm.local.dir`` removed by a ``/tmp`` cleaner: the supervisor
    makes its folders again, and its log went on into the deleted file). One ``stat`` a
    record; daemons log a few lines a second at most."""

    def emit(self, record: logging.LogRecord) -> None:
        if self.stream is not None:
            try:
                moved = not os.path.samestat(os.stat(self.baseFilename),
                                             os.fstat(self.stream.fileno()))
            except OSError:             # the file (or its folder) is gone
                moved = True
            if moved:
                self.stream.close()
                self.stream = None  # type: ignore[assignment]
                try:
                    os.makedirs(os.path.dirname(self.baseFilename), exist_ok=True)
                except OSError:
                    pass                # _open says why, through handleError
        super().emit(record)


def rotating_handler(path: Path, max_bytes: int, backups: int, *, delay: bool = False,
                     watched: bool = False) -> logging.Handler:
    """A handler appending to ``path`` (its directory created), rotated at ``max_bytes``
    keeping ``backups`` old files (none: emptied there); ``delay``: the file is created at
    the first record; ``watched``: made again if deleted under it (a daemon's log, never a
    worker's: a ``stat`` a record). Written as UTF-8; what UTF-8 cannot hold (a file name
    decoded with ``surrogateescape``) is backslash-escaped, never a lost record."""
    path.parent.mkdir(parents=True, exist_ok=True)
    cls = _WatchedRotatingFile if watched else _RotatingFile
    handler = cls(path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8",
                  delay=delay, errors="backslashreplace")
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    return handler


def add_daemon_log(conf: Mapping[str, Any], name: str) -> logging.Handler:
    """Also write this process's log records to ``storm.local.dir/logs/<name>.log`` (rotated,
    and made again if deleted under it); the existing handlers (the console) stay. Returns
    the handler (remove it from the root logger, and close it, when the daemon stops)."""
    path = logs_dir(str(conf.get("storm.local.dir") or "squall-local")).resolve() / f"{name}.log"
    handler = rotating_handler(path, *rotation(conf), watched=True)
    logging.getLogger().addHandler(handler)
    return handler


class _NotMetrics(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.name != METRICS_LOGGER


class _OnlyMetrics(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.name == METRICS_LOGGER


class _Component(logging.Filter):
    """Puts ``component`` on each record: `` <component id>`` when the thread that made it
    runs a component's call (its turn on the worker's loop thread, or its own thread), else
    ``""`` (squall.runtime.loop.component_of). Per record, nothing per tuple."""

    def filter(self, record: logging.LogRecord) -> bool:
        cid = component_of(record.thread) if record.thread is not None else None
        record.component = f" {cid}" if cid else ""
        return True


class _BytesToLog(io.BufferedIOBase):
    """The ``buffer`` of a :class:`StreamToLog`: bytes written to it are decoded as UTF-8
    (an invalid byte becomes ``\\xNN``; a character split between two writes is kept whole)
    and go on to the text stream."""

    def __init__(self, text: StreamToLog) -> None:
        super().__init__()
        self._text = text
        self._decoder = codecs.getincrementaldecoder(StreamToLog.encoding)(
            errors=StreamToLog.errors)
        self._lock = threading.Lock()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        raw = bytes(data)
        with self._lock:
            text = self._decoder.decode(raw)
        if text:
            self._text.write(text)
        return len(raw)

    def flush(self) -> None:
        with self._lock:
            rest = self._decoder.decode(b"", final=True)
        if rest:
            self._text.write(rest)
        self._text.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._text.fileno()


class StreamToLog(io.TextIOBase):
    """A text stream that turns what is written into log records, one per line (a worker's
    ``sys.stdout`` / ``sys.stderr``, so a component's ``print`` lands in the rotated log).
    It has the text stream API libraries read (``encoding`` UTF-8, ``errors``,
    ``writable()``, ``writelines``, ``buffer`` for bytes: decoded, invalid bytes
    backslash-escaped); ``fileno()`` is ``fallback``'s (the worker's ``.out``), and it is no
    terminal. Writes from inside logging itself (a handler's error report) go to
    ``fallback``. Any thread may write."""

    #: what a library reads of a text stream (class attributes: the base's are read-only)
    encoding = "utf-8"
    errors = "backslashreplace"

    def __init__(self, logger: logging.Logger, level: int, fallback: TextIO | None) -> None:
        super().__init__()
        self._logger = logger
        self._level = level
        self._fallback = fallback
        self._pending = ""
        self._lock = threading.Lock()
        self._inside = threading.local()
        self._bytes = _BytesToLog(self)

    @property
    def buffer(self) -> _BytesToLog:
        return self._bytes

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if getattr(self._inside, "active", False):
            return self._fallback.write(text) if self._fallback is not None else len(text)
        with self._lock:
            self._pending += text
            *lines, self._pending = self._pending.split("\n")
        self._inside.active = True
        try:
            for line in lines:
                if line:
                    self._logger.log(self._level, "%s", line)
        finally:
            self._inside.active = False
        return len(text)

    def flush(self) -> None:
        with self._lock:
            rest, self._pending = self._pending, ""
        if rest:
            self._logger.log(self._level, "%s", rest)

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        if self._fallback is None:
            raise OSError("no file descriptor behind this log stream")
        return self._fallback.fileno()


def worker_log_format(port: int) -> str:
    """The format of a worker log's lines: ``[worker <port> <component>]`` names the
    component whose call made the line (a user logger's, a ``print``), when one did."""
    return f"%(asctime)s %(levelname)s [worker {port}%(component)s] %(name)s: %(message)s"


def setup_worker_logging(log_file: Path, max_bytes: int, backups: int, port: int) -> None:
    """Route a worker process's logging to its rotated ``log_file`` (replacing the root
    logger's handlers) and its ``sys.stdout`` / ``sys.stderr`` into that log. Each line
    says which component's call made it (:func:`worker_log_format`)."""
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
        old.close()
    handler = rotating_handler(log_file, max_bytes, backups)
    handler.setFormatter(logging.Formatter(worker_log_format(port)))
    handler.addFilter(_Component())
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    out: Any = StreamToLog(logging.getLogger("STDOUT"), logging.INFO, sys.__stdout__)
    err: Any = StreamToLog(logging.getLogger("STDERR"), logging.ERROR, sys.__stderr__)
    sys.stdout, sys.stderr = out, err


def separate_events_log(log_file: Path, max_bytes: int, backups: int) -> None:
    """Send the ``squall.events`` logger (sampled emits) to ``log_file`` (rotated; created on
    the first event) and nowhere else."""
    handler = rotating_handler(log_file, max_bytes, backups, delay=True)
    handler.setFormatter(logging.Formatter("%(message)s"))
    events = logging.getLogger(EVENTS_LOGGER)
    events.addHandler(handler)
    events.setLevel(logging.INFO)
    events.propagate = False


def separate_metrics_log(log_file: Path, max_bytes: int, backups: int) -> None:
    """Send the records of the ``squall.metrics`` logger itself (the ``log`` consumer's data
    points) to ``log_file`` (rotated) and keep them out of the root logger's files; the
    ``squall.metrics.*`` modules' own records still reach the worker log."""
    handler = rotating_handler(log_file, max_bytes, backups)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    handler.addFilter(_OnlyMetrics())
    logging.getLogger(METRICS_LOGGER).addHandler(handler)
    for root_handler in logging.getLogger().handlers:
        root_handler.addFilter(_NotMetrics())


def remove_dead_worker_logs(logs: Path, keep: set[str], grace_secs: float,
                            now: float) -> list[str]:
    """Delete the worker log files of topologies not in ``keep`` once none of a topology's
    files was written for ``grace_secs``: a killed topology's files (every worker's log, its
    rotated backups, ``.out``, ``.metrics.log``, ``.events.log``) go together, when the newest
    of them is that old, so they all stay readable for the grace. Returns the names deleted; a
    file that cannot be deleted is left (logged at DEBUG)."""
    try:
        files = list(logs.iterdir())
    except FileNotFoundError:
        return []
    by_topology: dict[str, list[tuple[Path, float]]] = {}
    for path in files:
        topology = worker_file_topology(path.name)
        if topology is None or topology in keep:
            continue
        try:
            mtime = path.stat().st_mtime
        except OSError as exc:
            log.debug("cannot stat %s: %s", path, exc)
            continue
        by_topology.setdefault(topology, []).append((path, mtime))
    removed: list[str] = []
    for topology_files in by_topology.values():
        if now - max(mtime for _, mtime in topology_files) < grace_secs:
            continue
        for path, _ in topology_files:
            try:
                path.unlink()
                removed.append(path.name)
            except OSError as exc:
                log.debug("cannot remove %s: %s", path, exc)
    return sorted(removed)
