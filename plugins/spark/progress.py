"""SparkSpout's read progress: what a restarted or moved task does not read again.

Per partition the spout keeps a *committed* row count ``c``: rows ``0 .. c-1`` were all acked
(every tuple tree they started completed). :class:`Progress` folds acks into those counts (an
ack above the first unacked row waits in a set until the gap closes) and knows which
partitions were read to their end and completely acked.

:class:`ProgressStore` keeps the counts in the cluster state store (ZooKeeper on a cluster; a
LocalCluster's in-process tree in local mode), one node per partition under
``/spark-spout/<progress id>/`` holding JSON ``{"rows": c, "complete": bool, "partitions": n,
"source": digest}`` (``n``: how many partitions the source had; ``digest``: its
:func:`~squall.plugins.spark.source.fingerprint`, its settings and input files). Counts taken
over another source (a topology submitted again with the same progress id over another path,
table, query, options, columns or set of files; or counts from before fingerprints) or with
another split are ignored, with one warning, because a row index then names another row, or
none: the partition is read from its start. The spout writes changed
counts at most every ``spark.spout.progress.interval.secs`` from its executor thread, and once
more when it closes; a task that starts reads its partitions from their committed counts and
skips complete ones. Rows acked after the last write are read again after a crash: the spout
gives at-least-once delivery, and only the rows since the last write are repeated.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from squall.errors import SquallError

__all__ = ["ROOT", "Progress", "ProgressStore"]

log = logging.getLogger(__name__)

ROOT = "/spark-spout"


class Progress:
    """Committed row counts of a task's partitions. Executor thread only."""

    def __init__(self, committed: Mapping[int, int] | None = None,
                 complete: Iterable[int] = ()) -> None:
        self.committed: dict[int, int] = dict(committed or {})
        self.complete: set[int] = set(complete)
        #: per partition: acked rows at or above its committed count
        self.ahead: dict[int, set[int]] = {}
        #: per partition read to its end: how many rows it has
        self.ends: dict[int, int] = {}
        #: partitions whose count changed since :meth:`take_changed`
        self.changed: set[int] = set()

    def ack(self, partition: int, row: int) -> None:
        done = self.committed.get(partition, 0)
        if row < done:
            return                          # a replayed row acked twice
        if row > done:
            self.ahead.setdefault(partition, set()).add(row)
            return
        done += 1
        ahead = self.ahead.get(partition)
        if ahead:
            while done in ahead:
                ahead.discard(done)
                done += 1
        self.committed[partition] = done
        self.changed.add(partition)
        self._check_complete(partition)

    def ended(self, partition: int, rows: int) -> None:
        """The reader got to the end of ``partition``: it has ``rows`` rows."""
        self.ends[partition] = rows
        self._check_complete(partition)

    def _check_complete(self, partition: int) -> None:
        end = self.ends.get(partition)
        if end is not None and self.committed.get(partition, 0) >= end \
                and partition not in self.complete:
            self.complete.add(partition)
            self.changed.add(partition)

    def take_changed(self) -> dict[int, tuple[int, bool]]:
        """``{partition: (committed, complete)}`` changed since the last call."""
        out = {p: (self.committed.get(p, 0), p in self.complete) for p in self.changed}
        self.changed.clear()
        return out


class ProgressStore:
    """The committed counts of one source (``progress_id``) in a cluster state store.

    ``store`` is a started :class:`squall.StateStore`; this object closes it. Reads and writes
    block on the store (milliseconds on ZooKeeper); a failed write is logged once per failure
    streak and retried with the next one, as the counts only grow. ``source`` is the source's
    fingerprint, written with every count; :meth:`load` takes only counts written with the same
    fingerprint and number of ``partitions``."""

    def __init__(self, store: Any, progress_id: str, partitions: int, source: str) -> None:
        self.store = store
        self.base = f"{ROOT}/{_node_name(progress_id)}"
        self.partitions = partitions
        self.source = source
        self.failing = False

    def load(self, mine: Iterable[int]) -> Progress:
        """The counts of partitions ``mine`` saved over this source with this split (one
        warning line when some are ignored: taken over another source or split)."""
        committed: dict[int, int] = {}
        complete: set[int] = set()
        ignored = other = 0
        for p in mine:
            raw = self.store.get(f"{self.base}/p{p}")
            if raw is None:
                continue
            try:
                value = json.loads(raw)
                rows, done, count = int(value["rows"]), bool(value["complete"]), \
                    int(value["partitions"])
            except (ValueError, KeyError, TypeError):
                log.warning("spark spout progress %s/p%d is unreadable; reading that partition "
                            "from its start", self.base, p)
                continue
            if value.get("source") != self.source:
                other += 1
                continue
            if count != self.partitions:
                ignored += 1
                continue
            committed[p] = rows
            if done:
                complete.add(p)
        if other:
            log.warning("spark spout progress under %s was taken over another source (other "
                        "source settings or input files); %d partition(s) are read from their "
                        "start", self.base, other)
        if ignored:
            log.warning("spark spout progress under %s was taken when the source had another "
                        "number of partitions (now %d); %d partition(s) are read from their "
                        "start", self.base, self.partitions, ignored)
        return Progress(committed, complete)

    def save(self, changed: Mapping[int, tuple[int, bool]]) -> bool:
        """Write ``changed`` counts; False (and one log line per failure streak) if the store
        refused, in which case the caller hands them in again later."""
        try:
            for p, (rows, done) in changed.items():
                self.store.put(f"{self.base}/p{p}", json.dumps(
                    {"rows": rows, "complete": done, "partitions": self.partitions,
                     "source": self.source}).encode())
        except SquallError as exc:
            if not self.failing:
                log.error("saving spark spout progress under %s failed (retrying): %s",
                          self.base, exc)
            self.failing = True
            return False
        self.failing = False
        return True

    def close(self) -> None:
        self.store.close()


def _node_name(progress_id: str) -> str:
    """A progress id as one node name (``/`` is a path separator there)."""
    return progress_id.replace("%", "%25").replace("/", "%2F")
