"""The checkpoint spout (system component ``__checkpoint``): it drives every stateful task's
checkpoints through the ``__checkpoint`` stream, as Storm's CheckpointSpout does.

Its tuples are ``(txid, action, seq)``; ``seq`` numbers its emissions (the barrier key).
Actions, each tracked by the acker (every task on the checkpoint path acks it once it has
acted on it, anchoring what it forwards):

``recover``  every stateful task commits its prepared checkpoint if it is ``txid`` (the
             spout had decided to commit it), discards any other, reloads the committed state,
             fails the tuples it held and calls ``init_state``. Emitted first (Storm's
             INITSTATE) and after any failure (its ROLLBACK).
``prepare``  every stateful task stores its changes as checkpoint ``txid``. When the tuple
             is acked (every task prepared), the spout records ``txid`` as committed (the
             decision) and emits ``commit``; when it fails, ``recover`` with the last
             committed txid.
``commit``   every stateful task applies checkpoint ``txid`` and acks the tuples it covers.
             When it fails (a task died), ``recover`` with ``txid``: a restarted task commits
             its prepared checkpoint then.

One checkpoint is in flight at a time; ``prepare`` starts every
``topology.state.checkpoint.interval.ms``. The spout keeps its decision (the committed txid)
with the configured state provider, so it survives the spout's restart.
"""
from __future__ import annotations

import logging
import time
from typing import Any

from squall import drivers
from squall.api.component import Spout
from squall.api.context import TopologyContext
from squall.api.tuple import Stream
from squall.errors import StateProviderError
from squall.runtime.memory_stores import MemoryStores
from squall.stateful.memory import MemoryStateProvider
from squall.stateful.provider import StateProvider, task_id_namespace

__all__ = ["CHECKPOINT", "COMMIT", "FIELDS", "PREPARE", "RECOVER", "CheckpointSpout",
           "checkpoint_namespace", "make_provider"]

log = logging.getLogger(__name__)

#: the checkpoint spout's component id and the stream it (and the checkpoint path) emits
CHECKPOINT = "__checkpoint"
FIELDS = ("txid", "action", "seq")
RECOVER, PREPARE, COMMIT = "recover", "prepare", "commit"


def checkpoint_namespace(topology_name: str) -> str:
    """The namespace of the spout's decisions: ``<topology name>/__checkpoint`` (one task,
    so no task id: other components added or removed do not move it)."""
    return f"{topology_name}/{CHECKPOINT}"


def make_provider(conf: dict[str, Any], stores: MemoryStores) -> StateProvider:
    """The configured provider (``topology.state.provider``) built with its options; the
    ``memory`` provider (or a subclass of it) keeps its checkpoints in ``stores``, its
    worker's (``context.memory_stores``)."""
    cls = drivers.driver_class("state_provider", conf)
    options = conf.get("topology.state.provider.config") or {}
    if isinstance(cls, type) and issubclass(cls, MemoryStateProvider):
        return cls(options, stores)
    provider: StateProvider = cls(options)
    return provider


class CheckpointSpout(Spout):
    """The coordinator of checkpoints (see the module docstring). One task."""

    outputs = [Stream(FIELDS, name=CHECKPOINT)]
    #: checkpoints go on while the topology is deactivated, so that what stateful bolts hold
    #: commits and is acked (a deactivation or a rebalance's wait drains them)
    stays_active = True

    def initialize(self, conf: dict[str, Any], context: TopologyContext) -> None:
        self.interval = float(conf.get("topology.state.checkpoint.interval.ms") or 1000) / 1000
        self.provider = make_provider(conf, context.memory_stores)
        self.namespace = checkpoint_namespace(context.topology_name)
        #: where the decisions were kept before (read once, see :meth:`_read_committed`)
        self.legacy = task_id_namespace(context.topology_name, CHECKPOINT, context.task_id)
        #: the last committed txid; None until read from the provider
        self.committed: int | None = None
        self.action = RECOVER
        self.txid = 0
        self.seq = 0
        #: the seq of the tuple in flight (None: none)
        self.in_flight: int | None = None
        self.next_at = 0.0
        #: a run of failures is logged (once) and has not ended in a commit yet; of them, a
        #: failure of the state backend was (see :meth:`_failed`)
        self.failing = False
        self.backend_failing = False
        #: the clock the interval is measured by
        self.now: Any = time.monotonic

    def activate(self) -> None:
        """The first ``recover`` goes out at once: activation comes before the first
        ``next_tuple`` of any spout of this worker, so the stateful tasks downstream usually
        have their state before the first data tuple reaches them (one that comes earlier is
        failed at that recover, and replayed by its spout)."""
        self.next_tuple()

    def next_tuple(self) -> None:
        if self.in_flight is not None:
            return
        now = self.now()
        if now < self.next_at:
            return
        if self.committed is None:
            try:
                self.committed = self._read_committed()
            except StateProviderError as exc:
                self._failed(f"cannot read the last committed checkpoint: {exc}",
                             backend=True)
                self.next_at = now + self.interval
                return
        if self.action == RECOVER:
            self.txid = self.committed
        elif self.action == PREPARE:
            self.txid = self.committed + 1
        self.seq += 1
        self.in_flight = self.seq
        self.emit([self.txid, self.action, self.seq], stream=CHECKPOINT, tup_id=self.seq)

    def _read_committed(self) -> int:
        """The last committed txid. Where none is kept under this topology's namespace yet,
        the one kept under the spout's task id before is carried over (written anew), so
        the stateful tasks that carry their state over recover the same checkpoint."""
        committed = self.provider.txids(self.namespace)[0]
        if committed:
            return committed
        before = self.provider.txids(self.legacy)[0]
        if before:
            self.provider.prepare(self.namespace, before, {})
            self.provider.commit(self.namespace, before)
        return before

    def ack(self, tup_id: Any) -> None:
        if tup_id != self.in_flight:
            return
        self.in_flight = None
        now = self.now()
        if self.action == PREPARE:
            try:        # the decision: from here on, recovery commits this checkpoint
                self.provider.prepare(self.namespace, self.txid, {})
                self.provider.commit(self.namespace, self.txid)
            except StateProviderError as exc:
                self._failed(f"checkpoint {self.txid} not committed: {exc}", backend=True)
                self.action = RECOVER
                self.next_at = now + self.interval
                return
            self.committed = self.txid
            self.action = COMMIT
            self.next_at = now
            return
        if self.failing and self.action == COMMIT:
            # not at a recover: one that works between prepares that fail (a bolt failing
            # every checkpoint, a backend down for some writes) is no end of the outage
            self.failing = self.backend_failing = False
            log.info("checkpoints of topology %s commit again (txid %d)",
                     self.context.topology_name, self.txid)
        self.action = PREPARE
        self.next_at = now + self.interval

    def fail(self, tup_id: Any) -> None:
        if tup_id != self.in_flight:
            return
        self.in_flight = None
        self._failed(f"{self.action} of txid {self.txid} failed; every stateful task rolls "
                     "back to the last committed checkpoint")
        # after a failed prepare nothing new is committed; after a failed commit, recovery
        # commits txid where it was not yet. A failed recovery is tried again after a pause.
        wait = self.interval if self.action == RECOVER else 0.0
        self.action = RECOVER
        self.next_at = self.now() + wait

    def _failed(self, why: str, backend: bool = False) -> None:
        """Log the first failure of a run of them, the rest at debug: a run lasts until a
        checkpoint commits again (:meth:`ack` logs that), through any recoveries between.
        A failed checkpoint is a warning (the protocol recovers), the state backend failing
        (``backend``) an error, which the topology's errors show too (until it answers no
        checkpoint commits, and stateful bolts fail their inputs); the first backend failure
        of a run is that error even after a warning."""
        if self.failing and (self.backend_failing or not backend):
            log.debug("checkpoint spout: %s", why)
            return
        self.failing = True
        text = (f"checkpoint spout of topology {self.context.topology_name}: {why} "
                f"(retrying every {self.interval:.3g} s; no more of this until a checkpoint "
                "commits)")
        if backend:
            self.backend_failing = True
            log.error("%s", text)
            self.report_error(text)
        else:
            log.warning("%s", text)

    def close(self) -> None:
        self.provider.close()
