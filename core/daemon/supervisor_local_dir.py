"""A supervisor's hold on its ``storm.local.dir``: the lock that keeps a second supervisor off
it, the conf file its workers read there, and whether it can be written and has room.

- ``supervisor.lock``: an exclusive lock (``flock``) held while the supervisor runs; it ends
  with the process, ``kill -9`` included. Two supervisors on one directory would both take
  its workers and both restart a dead one. The directory deleted under a running supervisor
  (a ``/tmp`` cleaner, an operator's ``rm -rf``) takes the locked file with it, and with it
  what kept a second supervisor off: :meth:`LocalDir.keep` finds the file gone or replaced and
  locks the new one, or says which supervisor took the directory meanwhile.
- ``supervisor/supervisor-conf.json``: the supervisor's conf, which each worker it launches
  reads (its state store, its transport); written at start and again when it went.
- :meth:`LocalDir.problem`: whether each of its directories can be written (a probe file).
  :meth:`LocalDir.short_of_room`: whether the file system has ``supervisor.local.dir.min.free.mb``
  free. A supervisor that left the cluster because it could not write comes back only when it
  can and has that room: on a full disk a page freed now and then (a worker's directory
  removed) passes the probe, and it would rejoin, take a worker, fill up and leave again.

Used by the supervisor at its start and by its monitor thread; blocks on the file system only.
"""
from __future__ import annotations

import fcntl
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from squall.daemon import packaging
from squall.daemon.worker_main import supervisor_conf_path
from squall.errors import SquallError

log = logging.getLogger(__name__)
LOCK_FILE = "supervisor.lock"
#: the room a supervisor that left for a local dir it could not write waits for (MB; its
#: default where a conf does not say)
MIN_FREE_KEY = "supervisor.local.dir.min.free.mb"
MIN_FREE_DEFAULT_MB = 64


class LocalDir:
    """``storm.local.dir`` (``path``) of the supervisor whose conf is ``conf``."""

    def __init__(self, path: Path, conf: Mapping[str, Any]) -> None:
        self.path = path
        self._conf = dict(conf)
        value = conf.get(MIN_FREE_KEY)
        self._min_free_mb = MIN_FREE_DEFAULT_MB if value is None else max(0, int(value))
        self._lock: TextIO | None = None
        #: the conf file was written (by :meth:`write_conf`)
        self._conf_written = False

    # -- the lock -----------------------------------------------------------------------------
    def claim(self) -> None:
        """Lock the directory for this supervisor (until :meth:`release` or the process
        ends). SquallError naming the holder if another supervisor holds it."""
        holder = self._take()
        if holder is not None:
            raise SquallError(f"another supervisor (pid {holder}) runs on storm.local.dir "
                              f"{self.path}; give each supervisor a directory of its own")

    def _take(self) -> str | None:
        """Lock ``supervisor.lock`` (written with this process's pid); None when locked, else
        the pid the other holder wrote (``unknown`` when it wrote none)."""
        handle = open(self.path / LOCK_FILE, "a+")       # held until release()
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            return holder
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        if self._lock is not None:
            self._lock.close()
        self._lock = handle
        return None

    def release(self) -> None:
        """Give the lock up (at stop). Idempotent."""
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def _lock_lost(self) -> bool:
        """Whether the locked file is no longer ``supervisor.lock`` (deleted, replaced)."""
        if self._lock is None:
            return False
        try:
            now = os.stat(self.path / LOCK_FILE)
        except FileNotFoundError:
            return True
        held = os.fstat(self._lock.fileno())
        return (now.st_dev, now.st_ino) != (held.st_dev, held.st_ino)

    def keep(self) -> str:
        """Called each round, once the directories exist (:meth:`problem`): lock
        ``supervisor.lock`` again when the locked file went (logged), and write the conf
        file again when it went. Returns ``""`` while this supervisor holds the directory,
        else why not: another supervisor locked it meanwhile. OSError when the directory
        cannot be written."""
        if self._lock_lost():
            holder = self._take()
            if holder is not None:
                return (f"another supervisor (pid {holder}) took storm.local.dir {self.path} "
                        f"after its {LOCK_FILE} was deleted")
            log.warning("the %s of storm.local.dir %s was deleted or replaced under this "
                        "supervisor (the directory removed?); it holds the directory again",
                        LOCK_FILE, self.path)
        if not supervisor_conf_path(self.path).is_file():
            again = self._conf_written
            self.write_conf()
            if again:
                log.warning("wrote %s again: it was gone, and the workers launched from now "
                            "on read it", supervisor_conf_path(self.path))
        return ""

    def write_conf(self) -> None:
        """Write the supervisor's conf where its workers read it (owner-only: it may hold
        secrets). OSError when it cannot be written."""
        packaging.write_json(supervisor_conf_path(self.path), self._conf, private=True)
        self._conf_written = True

    # -- health -------------------------------------------------------------------------------
    def problem(self) -> str:
        """'' when the supervisor can write where it keeps things (a probe file in each of
        its directories, created when missing), else what went wrong."""
        for d in (self.path / "supervisor" / "stormdist", self.path / "workers",
                  self.path / "logs"):
            try:
                d.mkdir(parents=True, exist_ok=True)
                probe = d / f".probe-{os.getpid()}"
                probe.write_bytes(b"squall")
                probe.unlink()
            except OSError as exc:
                return f"{d}: {exc.strerror or exc}"
        return ""

    def short_of_room(self) -> str:
        """'' when the file system of the directory has ``supervisor.local.dir.min.free.mb``
        free (or that is 0, or it cannot be told), else how much it has."""
        if not self._min_free_mb:
            return ""
        try:
            st = os.statvfs(self.path)
        except OSError:
            return ""
        free = st.f_bavail * st.f_frsize
        if free >= self._min_free_mb * 2**20:
            return ""
        return (f"{self.path} has {free / 2**20:.1f} MB free, under {MIN_FREE_KEY} "
                f"({self._min_free_mb})")
