"""The master batch coordinator (Storm's ``MasterBatchCoordinator``): a spout that numbers
batches and runs their two phases.

- It emits ``(txid, attempt, info)`` on ``$batch`` (tracked by the acker) for up to
  ``topology.max.spout.pending`` batches at once (1 when unset), at most one every
  ``topology.trident.batch.emit.interval.millis``. Batches are processed concurrently.
  ``info`` holds, per partitioned spout of the group, what its coordinator's
  ``get_partitions_for_batch()`` said; a batch starts only when every such coordinator
  ``is_ready(txid)``. A txid's info is asked for once and kept in the cluster state store
  before its batch starts, so every try of that txid, also after a restart of the
  coordinator, gets the same partitions; it is deleted when the txid commits.
- Partitions are shared among the emitter tasks by the info: a batch whose info differs from
  that of the batches in flight starts once they all committed, so a partition's new owner
  continues after the batches its old owner emitted.
- When batch ``txid`` is acked and ``txid - 1`` has committed, it emits ``(txid, attempt)``
  on ``$commit``: commits happen strictly in txid order, one at a time, with no gap.
- When the commit of ``txid`` is acked (every committer wrote it), it emits ``(txid,)`` on
  ``$success`` (untracked): the source bolts tell their spouts that the batch is done for
  good (``ack`` of a batch spout, ``success`` of a partitioned emitter).
- A failed batch or commit restarts that txid and every later one in flight, each with a new
  attempt id (attempt ids increase across restarts of the coordinator too).
- The last committed txid is kept in the cluster state store (ZooKeeper on a cluster) under
  ``/trident/<topology name>/coordinators/<stream names>``, and the info of each txid not
  committed yet under ``.../<stream names>/<txid>``, so a restarted coordinator replays the
  batches in flight as they were and continues with the next txid. A topology submitted
  again under the same name does too when one of the group's states outlives the topology
  (Redis); when none does (memory states, dropped at kill), the kill drops the record and
  the spouts' metadata (see :meth:`~squall.state.cluster_state.ClusterState.drop_trident`),
  and a record a previous run left anyway (written as it was killed) is dropped here: the
  new run starts at txid 1, its spouts from their start. A group of DRPC streams only keeps
  nothing (a request does not outlive its caller's wait).
"""
from __future__ import annotations

import logging
import time
from typing import Any

from squall.api.component import Spout
from squall.api.tuple import Stream
from squall.spi.state import node_name_problem
from squall.state.cluster_state import trident_outlives
from squall.trident import plan
from squall.trident.runtime.meta import MetaStore
from squall.trident.runtime.repeats import RepeatedWarning

log = logging.getLogger(__name__)

PROCESSING, PROCESSED, COMMITTING = "processing", "processed", "committing"


class TridentCoordinator(Spout):
    outputs = [Stream(["txid", "attempt", "info"], name="$batch"),
               Stream(["txid", "attempt"], name="$commit"),
               Stream(["txid"], name="$success")]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        own = conf.get("trident.coordinator") or {}
        self.meta = (MetaStore(conf, f"/trident/{context.topology_name}")
                     if own.get("durable", True) else None)
        self.store = self.meta.within("coordinators") if self.meta is not None else None
        self.key = str(own.get("key", "default"))
        self.max_pending = max(1, int(conf.get("topology.max.spout.pending") or 1))
        self.interval = float(conf.get("topology.trident.batch.emit.interval.millis")
                              or 0) / 1000.0
        #: what every write of the group's record holds besides its last committed txid
        self.record = {"topology_id": context.topology_id,
                       "streams": list(own.get("streams", [])),
                       "outlives": bool(own.get("outlives", True))}
        saved = self._saved()
        self.committed = int(saved["committed"]) if saved else 0
        if self.store is not None:
            self.store.put(self.key, {**self.record, "committed": self.committed})
        self.coordinators = {s["name"]: plan.from_json(s["spout"]).get_coordinator(conf, context)
                             for s in own.get("partitioned", [])}
        #: where each txid's partition info is kept until it commits (partitioned spouts only)
        self.kept = (self.store.within(self.key)
                     if self.store is not None and self.coordinators else None)
        #: txid -> the partition info of its batch, kept for replays until it commits
        self.infos: dict[int, dict[str, Any]] = self._kept_infos()
        #: txid -> [attempt, phase] of the batches in flight
        self.active: dict[int, list[Any]] = {}
        self.last_attempt = 0
        self.last_emit = 0.0
        #: the warnings of failed batches (a batch failing every try repeats them)
        self.retries = RepeatedWarning(
            log, float(conf.get("topology.error.throttle.interval.secs", 10)))
        log.info("trident coordinator %s: continuing after committed txid %d", self.key,
                 self.committed)

    def _saved(self) -> dict[str, Any] | None:
        """The group's record, unless a previous run left it that was not to outlive its
        topology (then it is dropped here, with its spouts' metadata)."""
        if self.meta is None or self.store is None:
            return None
        saved = self.store.get(self.key)
        if not isinstance(saved, dict) or trident_outlives(saved) \
                or saved.get("topology_id") == self.record["topology_id"]:
            return saved
        log.info("trident coordinator %s: the run of %s before this one kept only states that "
                 "died with it; starting at txid 1", self.key, saved.get("topology_id"))
        streams = saved.get("streams")
        for stream in streams if isinstance(streams, list) else []:
            if isinstance(stream, str) and not node_name_problem(stream):
                self.meta.delete_path(f"spouts/{stream}")     # as the spouts name it
        self.store.delete(self.key)
        return None

    def _kept_infos(self) -> dict[int, dict[str, Any]]:
        """The infos of the txids a previous run started and did not commit."""
        infos: dict[int, dict[str, Any]] = {}
        if self.kept is None:
            return infos
        for name in self.kept.names():
            txid = int(name) if name.isdigit() else 0
            info = self.kept.get(name) if txid > self.committed else None
            if isinstance(info, dict) and set(info) == set(self.coordinators):
                infos[txid] = info
            else:               # committed (its delete was lost), or not this topology's
                self.kept.delete(name)
        if infos:
            log.info("trident coordinator %s: replaying txids %s with their partitions",
                     self.key, sorted(infos))
        return infos

    def _new_info(self, txid: int) -> dict[str, Any] | None:
        """The partition info of a txid never started (``None``: not ready), kept in the
        state store before any task can see its batch."""
        if not all(c.is_ready(txid) for c in self.coordinators.values()):
            return None
        info = {name: c.get_partitions_for_batch() for name, c in self.coordinators.items()}
        if self.kept is not None:
            self.kept.put(str(txid), info)
        self.infos[txid] = info
        return info

    def _attempt(self) -> int:
        # increasing across restarts: a bolt that still holds an old attempt's rows never
        # takes a new attempt for it
        self.last_attempt = max(self.last_attempt + 1, time.time_ns() // 1000)
        return self.last_attempt

    def next_tuple(self) -> None:
        nxt = self.committed + 1
        status = self.active.get(nxt)
        if status is not None and status[1] == PROCESSED:
            status[1] = COMMITTING
            self.emit([nxt, status[0]], "$commit", tup_id=("c", nxt, status[0]))
        if len(self.active) >= self.max_pending:
            return
        now = time.monotonic()
        if now - self.last_emit < self.interval:
            return
        txid = nxt
        while txid in self.active:
            txid += 1
        info = self.infos.get(txid)
        if info is None:
            info = self._new_info(txid)
            if info is None:
                return
        if self.active and info != self.infos.get(txid - 1, info):
            # other partitions, or other owners: wait for the batches in flight to commit
            # (the txids in flight are consecutive, and share one info)
            return
        attempt = self._attempt()
        self.active[txid] = [attempt, PROCESSING]
        self.last_emit = now
        self.emit([txid, attempt, info], "$batch", tup_id=("b", txid, attempt))

    def _current(self, tup_id: Any) -> list[Any] | None:
        _, txid, attempt = tup_id
        status = self.active.get(txid)
        return status if status is not None and status[0] == attempt else None

    def ack(self, tup_id: Any) -> None:
        status = self._current(tup_id)
        if status is None:
            return                       # an attempt that was restarted meanwhile
        kind, txid, _ = tup_id
        if kind == "b":
            status[1] = PROCESSED
            return
        self.committed = txid
        del self.active[txid]
        self.infos.pop(txid, None)
        if self.store is not None:
            self.store.put(self.key, {**self.record, "committed": txid})
        if self.kept is not None:
            self.kept.delete(str(txid))
        self.emit([txid], "$success")

    def fail(self, tup_id: Any) -> None:
        if self._current(tup_id) is None:
            return
        kind, txid, _ = tup_id
        self.retries.warning("trident: %s of txid %d failed; restarting it and the %d later "
                             "batches in flight", "batch" if kind == "b" else "commit", txid,
                             sum(1 for t in self.active if t > txid))
        for t in [t for t in self.active if t >= txid]:
            del self.active[t]

    def close(self) -> None:
        for c in self.coordinators.values():
            c.close()
        if self.meta is not None:
            self.meta.close()
