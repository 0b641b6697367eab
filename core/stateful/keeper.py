"""One stateful task's checkpoints: its :class:`KeyValueState`, the acks that wait for a
commit, and the provider calls of ``recover``, ``prepare`` and ``commit`` (see
:mod:`squall.stateful.checkpoint` for the protocol).

The acks of the inputs a task processed are not kept as tuples but folded as the acker
would get them: root id -> XOR of the acks' values (``pending``, then ``prepared``). A commit
hands the fold to the ack ledger in one go; a rollback fails each of its roots once.

State that squall kept under a task id (:func:`~squall.stateful.provider.task_id_namespace`)
is carried over once: while the task's own namespace has never committed, recovery reads the
old one, the first checkpoint writes every key into the new one, and once that commits the
old one is emptied (so no later task of another index can read it).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from squall.errors import StateProviderError
from squall.runtime.acks import SETTLED
from squall.stateful.provider import StateProvider
from squall.stateful.state import KeyValueState

__all__ = ["NotRecovered", "StateKeeper"]

log = logging.getLogger(__name__)

#: acks the held inputs: (root -> XOR fold, how many inputs); the fold is handed over
AckFold = Callable[[dict[int, int], int], None]
#: fails the held inputs: (their roots, how many inputs)
FailRoots = Callable[[Iterable[int], int], None]


class NotRecovered(Exception):
    """A checkpoint asked of a task that has not recovered its state (it started, or lost its
    uncommitted changes, since the last ``recover``): the checkpoint fails, and the spout
    sends ``recover``."""


class StateKeeper:
    """The checkpoints of one stateful task (namespace ``namespace`` of ``provider``).

    ``ready`` is False until a recovery succeeded, and again after any provider failure:
    meanwhile the task keeps its inputs unprocessed (:meth:`defer`; they fail once at the
    next ``recover``) and fails every checkpoint it is asked for (:class:`NotRecovered`).
    ``pending`` (root -> XOR) and ``pending_n`` are public so the executor folds an input's
    ack inline (see :meth:`hold` for what it does).
    Provider errors (:class:`~squall.errors.StateProviderError`) are raised to the caller
    (the executor fails the checkpoint tuple and logs); the keeper stays consistent. Loop
    thread only."""

    __slots__ = ("ack", "carried", "defer_limit", "deferred", "deferred_n", "dumps", "fail",
                 "init_state", "legacy", "loads", "namespace", "pending", "pending_n",
                 "prepared", "prepared_n", "prepared_txid", "provider", "ready", "spoiled",
                 "state", "value_dumps", "value_loads")

    def __init__(self, *, provider: StateProvider, namespace: str,
                 dumps: Callable[[Any], bytes], loads: Callable[[bytes], Any],
                 init_state: Callable[[KeyValueState], None], ack: AckFold,
                 fail: FailRoots, legacy: str | None = None,
                 value_dumps: Callable[[Any], bytes] | None = None,
                 value_loads: Callable[[bytes], Any] | None = None,
                 defer_limit: int = 32768) -> None:
        self.provider = provider
        self.namespace = namespace
        #: the namespace this task's state was kept under before ``namespace`` (None: none)
        self.legacy = legacy
        #: the encoded keys recovered from ``legacy`` and not yet committed under
        #: ``namespace`` (None: nothing being carried over)
        self.carried: list[bytes] | None = None
        self.dumps = dumps
        self.loads = loads
        #: how values are encoded (None: as keys; see :mod:`squall.stateful.values`)
        self.value_dumps = value_dumps
        self.value_loads = value_loads
        self.init_state = init_state
        self.ack = ack
        self.fail = fail
        self.ready = False
        self.state: KeyValueState | None = None
        #: acks of the inputs processed since the last prepare, folded per root
        self.pending: dict[int, int] = {}
        self.pending_n = 0
        #: those of the prepared checkpoint ``prepared_txid``
        self.prepared: dict[int, int] = {}
        self.prepared_n = 0
        self.prepared_txid: int | None = None
        #: an input failed after it may have changed the state (see :meth:`spoil`)
        self.spoiled = False
        #: the roots of the inputs that came while not ready, and how many (see :meth:`defer`)
        self.deferred: set[int] = set()
        self.deferred_n = 0
        #: how many inputs :meth:`defer` keeps at most
        self.defer_limit = defer_limit

    def spoil(self) -> None:
        """An input failed (``process`` raised, or the bolt failed it) after it may have
        changed the state: the changes since the last prepare cannot be told apart, so they
        are all dropped by :meth:`drop_spoiled` (the executor calls it at the end of the
        pass; a prepare first calls it too) and the state is recovered, as Storm rolls a
        stateful bolt back when its executor dies. Else the replay of the failed input would
        count it twice."""
        self.spoiled = True

    def drop_spoiled(self) -> None:
        """After :meth:`spoil`: fail every input since the last prepare (the spouts replay
        them) and wait for recovery (which reloads the committed state)."""
        if self.spoiled:
            self.spoiled = False
            self._lose_pending()

    def hold(self, tup: Any) -> None:
        """An input processed (or acked by the bolt): its ack waits for the commit. A tracked
        input is marked settled as the bolt's ``ack`` marks one (``id`` and ``ackval``
        zeroed): held again (a second ``ack``, auto_ack after the bolt's own, an ``ack`` of a
        tuple auto_ack held already) or failed by the bolt, it changes nothing and counts
        nothing (XORed twice, its ack would cancel out and its tree would time out)."""
        roots = tup.roots
        if not roots:       # untracked: counted once, marked as the bolt's ack marks it; a
            if tup.ackval == SETTLED:   # tick is settled when made and counts nothing
                return
            tup.ackval = SETTLED
            self.pending_n += 1
            return
        v = tup.id ^ tup.ackval
        if not v:
            return
        tup.id = tup.ackval = 0
        self.pending_n += 1
        fold = self.pending
        for r in roots:
            fold[r] = fold.get(r, 0) ^ v

    def defer(self, tup: Any) -> bool:
        """An input that came while the task is not ready: it is not processed, and its trees
        fail once at the next :meth:`recover` (the spouts replay them after it), whether that
        succeeds or not. Not processed then either: it came before the ``recover`` checkpoint,
        and what came before it is rolled back (its tree may be failed and replayed by
        another task's rollback, and counted twice). Only its roots are kept. False (nothing
        kept) when ``defer_limit`` inputs wait already: the caller fails it now."""
        if self.deferred_n >= self.defer_limit:
            return False
        self.deferred_n += 1
        roots = tup.roots
        if roots:
            self.deferred.update(roots)
        return True

    def _fail_deferred(self) -> None:
        deferred, n = self.deferred, self.deferred_n
        self.deferred, self.deferred_n = set(), 0
        if n:
            self.fail(deferred, n)

    def _lose_pending(self) -> None:
        """Forget the uncommitted changes: fail their inputs; recovery must reload."""
        self.ready = False
        pending, n = self.pending, self.pending_n
        self.pending, self.pending_n = {}, 0
        if n:
            self.fail(pending, n)

    def _settle_prepared(self, committed: bool) -> None:
        prepared, n = self.prepared, self.prepared_n
        self.prepared, self.prepared_n, self.prepared_txid = {}, 0, None
        if n:
            if committed:
                self.ack(prepared, n)
            else:
                self.fail(prepared, n)

    def recover(self, txid: int) -> None:
        """Fail the inputs processed since the last prepare and those deferred, commit the
        prepared checkpoint if it is ``txid`` (decided by the spout), discard any other,
        reload the committed state and hand it to ``init_state``."""
        self.spoiled = False
        self._lose_pending()
        self._fail_deferred()
        committed, prepared = self.provider.txids(self.namespace)
        if prepared == txid and committed != txid:
            self.provider.commit(self.namespace, txid)
            committed = txid
        if self.prepared_txid is not None:
            self._settle_prepared(self.prepared_txid == committed)
        self.provider.rollback(self.namespace)
        _, data = self.provider.load(self.namespace)
        self.carried = None
        if not committed and self.legacy is not None:
            data = self._recover_legacy(self.legacy, txid)
        self.state = KeyValueState.from_committed(data, self.dumps, self.loads,
                                                  self.value_dumps, self.value_loads)
        if self.carried:
            self.state.mark_all_changed()   # the next checkpoint writes them all anew
        self.init_state(self.state)
        self.ready = True

    def _recover_legacy(self, legacy: str, txid: int) -> dict[bytes, bytes]:
        """The committed map of ``legacy`` (recovered as its own namespace would be: its
        prepared checkpoint ``txid`` committed, any other discarded); its keys are to be
        carried over."""
        committed, prepared = self.provider.txids(legacy)
        if not committed and prepared is None:
            return {}
        if prepared == txid and committed != txid:
            self.provider.commit(legacy, txid)
        self.provider.rollback(legacy)
        _, data = self.provider.load(legacy)
        if data:
            log.info("state %r: carried over from %r (%d keys)", self.namespace, legacy,
                     len(data))
            self.carried = list(data)
        return data

    def _empty_legacy(self, legacy: str, keys: list[bytes]) -> None:
        """Delete the carried keys from ``legacy`` once they committed under ``namespace``.
        A failure is logged and left: the state is safe in its namespace."""
        try:
            committed, _ = self.provider.txids(legacy)
            self.provider.prepare(legacy, committed + 1, dict.fromkeys(keys))
            self.provider.commit(legacy, committed + 1)
        except StateProviderError as exc:
            log.warning("state %r: could not empty %r, where it was kept before: %s",
                        self.namespace, legacy, exc)

    def prepare(self, txid: int) -> None:
        """Store the changes since the last checkpoint as checkpoint ``txid``."""
        if self.spoiled:
            self.drop_spoiled()
            raise NotRecovered(f"state {self.namespace!r}: an input failed after changing it")
        if not self.ready or self.state is None:
            raise NotRecovered(f"state {self.namespace!r} is not recovered yet")
        if self.prepared_txid is not None:
            # a checkpoint is prepared and neither committed nor recovered: the spout never
            # does that; start over from the committed state
            self._lose_pending()
            raise NotRecovered(f"state {self.namespace!r}: checkpoint {self.prepared_txid} "
                               "is still prepared")
        try:
            self.provider.prepare(self.namespace, txid, self.state.take_changes())
        except Exception:
            self._lose_pending()
            raise
        self.prepared, self.prepared_n = self.pending, self.pending_n
        self.pending, self.pending_n = {}, 0
        self.prepared_txid = txid

    def commit(self, txid: int) -> None:
        """Apply checkpoint ``txid`` and ack the inputs it covers."""
        if not self.ready:
            raise NotRecovered(f"state {self.namespace!r} is not recovered yet")
        if self.prepared_txid != txid:
            raise NotRecovered(f"state {self.namespace!r}: asked to commit checkpoint {txid}, "
                               f"prepared is {self.prepared_txid}")
        self.provider.commit(self.namespace, txid)
        self._settle_prepared(True)
        if self.carried is not None and self.legacy is not None:
            keys, self.carried = self.carried, None
            self._empty_legacy(self.legacy, keys)
