"""How long a supervisor's workers have gone without a heartbeat, on the supervisor's clock.

A worker writes a local heartbeat file every ``worker.heartbeat.frequency.secs``
(:func:`~squall.daemon.worker_main.write_local_heartbeat`). The supervisor never compares a
time a worker wrote with its own clock: it notes, on its monotonic clock, when it last saw a
worker's newest beat change (its name, or its directory: each beat is a new file), as nimbus
does with the beats in ZooKeeper (:class:`~squall.daemon.nimbus_schedule.BeatTracker`). A step
of the host's clock (NTP) thus neither restarts every worker nor keeps one that hangs from
being restarted. The times in a beat are compared with each other only: a beat dated
(``time_secs``) more than the timeout before it was written (``written_secs``; for a worker of
an earlier release, its file name, ms) says the worker's loop is stuck in one pass.

The start deadline (no beat within ``supervisor.worker.start.timeout.secs``) counts from the
launch; for a worker the supervisor found running when it started (adopted), from then, and
a beat first seen counts as new: an adopted worker gets its timeouts counted from the
restart. Used by the supervisor's monitor thread only.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from squall.daemon.supervisor_local import LocalBeat, newest_heartbeat


class Sighting(NamedTuple):
    """What a worker's local heartbeats say now (:meth:`WorkerBeats.look`)."""

    #: its newest beat (None: it wrote none yet)
    beat: dict[str, Any] | None
    #: seconds since its launch (or since the supervisor first saw it, after a restart)
    since_launch: float
    #: seconds since its newest beat last changed (None: it wrote none yet)
    silent: float | None
    #: seconds its newest beat says its loop has been in one pass (0: it runs)
    stuck: float


def stuck_secs(newest: LocalBeat) -> float:
    """How long before it was written the beat is dated: how long the worker's loop had
    been in one pass (about 0 while it runs; both times are the worker's own clock's)."""
    beat = newest.beat
    written = beat.get("written_secs")
    try:
        at = float(beat.get("time_secs") or 0)
        written_at = newest.name / 1000.0 if written is None else float(written)
    except (TypeError, ValueError):
        return 0.0
    return max(0.0, written_at - at)


class WorkerBeats:
    """When (``clock``, monotonic) each worker was launched or first seen, and when its
    newest local heartbeat last changed."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._first: dict[str, float] = {}
        #: worker id -> ((name, directory mtime) of its newest beat, when that was first seen)
        self._changed: dict[str, tuple[tuple[int, int], float]] = {}

    def launched(self, worker_id: str) -> None:
        """The supervisor launched ``worker_id`` now: its start deadline counts from now."""
        self._first[worker_id] = self.clock()

    def look(self, local_dir: Path, worker_id: str) -> Sighting:
        """Read the newest local heartbeat of ``worker_id`` (under ``local_dir``) and say
        how long it has been the same. The first look at a worker not :meth:`launched` by
        this supervisor starts its clocks."""
        now = self.clock()
        first = self._first.setdefault(worker_id, now)
        newest = newest_heartbeat(local_dir, worker_id)
        if newest is None:
            return Sighting(None, now - first, None, 0.0)
        stamp = (newest.name, newest.dir_mtime_ns)
        seen = self._changed.get(worker_id)
        if seen is None or seen[0] != stamp:
            seen = self._changed[worker_id] = (stamp, now)
        return Sighting(newest.beat, now - first, now - seen[1], stuck_secs(newest))

    def forget(self, worker_id: str) -> None:
        """``worker_id`` was stopped."""
        self._first.pop(worker_id, None)
        self._changed.pop(worker_id, None)
