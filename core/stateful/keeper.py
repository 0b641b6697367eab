"""One stateful task's checkpoints: its :class:`KeyValueState`, the tuples whose acks wait
for a commit, and the provider calls of ``recover``, ``prepare`` and ``commit`` (see
:mod:`squall.stateful.checkpoint` for the protocol)."""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from squall.errors import StateProviderError
from squall.stateful.provider import StateProvider
from squall.stateful.state import KeyValueState

__all__ = ["StateKeeper"]

log = logging.getLogger(__name__)


class StateKeeper:
    """The checkpoints of one stateful task (namespace ``namespace`` of ``provider``).

    ``ready`` is False until a recovery succeeded, and again after any provider failure:
    meanwhile the task fails its inputs (the spouts replay them) and every checkpoint it is
    asked for. ``ack``/``fail`` ack or fail an input tuple towards the acker; ``init_state``
    is the bolt's. Provider errors are raised to the caller (the executor fails the
    checkpoint tuple and logs); the keeper is left consistent. Loop thread only."""

    __slots__ = ("ack", "dumps", "fail", "init_state", "loads", "namespace", "pending",
                 "prepared", "prepared_txid", "provider", "ready", "state")

    def __init__(self, *, provider: StateProvider, namespace: str,
                 dumps: Callable[[Any], bytes], loads: Callable[[bytes], Any],
                 init_state: Callable[[KeyValueState], None], ack: Callable[[Any], None],
                 fail: Callable[[Any], None]) -> None:
        self.provider = provider
        self.namespace = namespace
        self.dumps = dumps
        self.loads = loads
        self.init_state = init_state
        self.ack = ack
        self.fail = fail
        self.ready = False
        self.state: KeyValueState | None = None
        #: inputs processed since the last prepare: acked when the next checkpoint commits
        self.pending: list[Any] = []
        #: inputs of the prepared checkpoint ``prepared_txid``
        self.prepared: list[Any] = []
        self.prepared_txid: int | None = None

    def hold(self, tup: Any) -> None:
        """An input processed (or acked by the bolt): its ack waits for the commit."""
        self.pending.append(tup)

    def _drop(self, tuples: list[Any]) -> None:
        fail = self.fail
        for tup in tuples:
            fail(tup)

    def _lose_pending(self) -> None:
        """Forget the uncommitted changes: fail their inputs; recovery must reload."""
        self.ready = False
        pending, self.pending = self.pending, []
        self._drop(pending)

    def recover(self, txid: int) -> None:
        """Commit the prepared checkpoint if it is ``txid`` (decided by the spout), discard
        any other, reload the committed state and hand it to ``init_state``."""
        self._lose_pending()
        committed, prepared = self.provider.txids(self.namespace)
        if prepared == txid and committed != txid:
            self.provider.commit(self.namespace, txid)
            committed = txid
        if self.prepared_txid is not None:
            held, self.prepared = self.prepared, []
            covered = self.prepared_txid == committed
            self.prepared_txid = None
            if covered:
                for tup in held:
                    self.ack(tup)
            else:
                self._drop(held)
        self.provider.rollback(self.namespace)
        _, data = self.provider.load(self.namespace)
        self.state = KeyValueState.from_committed(data, self.dumps, self.loads)
        self.init_state(self.state)
        self.ready = True

    def prepare(self, txid: int) -> None:
        """Store the changes since the last checkpoint as checkpoint ``txid``."""
        if not self.ready or self.state is None:
            raise StateProviderError(f"state {self.namespace!r} is not recovered yet")
        if self.prepared_txid is not None:
            # a checkpoint is prepared and neither committed nor recovered: the spout never
            # does that; start over from the committed state
            self._lose_pending()
            raise StateProviderError(f"state {self.namespace!r}: checkpoint "
                                     f"{self.prepared_txid} is still prepared")
        changes = self.state.take_changes()
        try:
            self.provider.prepare(self.namespace, txid, changes)
        except StateProviderError:
            self._lose_pending()
            raise
        self.prepared, self.pending = self.pending, []
        self.prepared_txid = txid

    def commit(self, txid: int) -> None:
        """Apply checkpoint ``txid`` and ack the inputs it covers."""
        if not self.ready:
            raise StateProviderError(f"state {self.namespace!r} is not recovered yet")
        if self.prepared_txid != txid:
            raise StateProviderError(f"state {self.namespace!r}: asked to commit checkpoint "
                                     f"{txid}, prepared is {self.prepared_txid}")
        self.provider.commit(self.namespace, txid)
        held, self.prepared = self.prepared, []
        self.prepared_txid = None
        for tup in held:
            self.ack(tup)
