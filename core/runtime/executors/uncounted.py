"""Which untracked tuples ``auto_ack`` has not counted yet: what lets a bolt's own ``ack`` or
``fail`` of an untracked tuple count it once.

A tracked tuple carries its own settled mark (its ``id`` and ``ackval`` zeroed by the first
ack or fail: :class:`squall.runtime.acks.AckLedger`). An untracked one (no acker, or an
unanchored emit) has nothing for the acker, so the runtime only counts it: ``auto_ack`` counts
a pass's untracked tuples in bulk when the pass ends (:meth:`BoltExecutor._run_plain` hands
them to ``process`` by a C loop, without a Python step per tuple), and a bolt that calls
``ack`` or ``fail`` itself marks the tuple (``ackval`` 1: an untracked tuple's ``ackval`` is
never XORed into). Its call counts the tuple only when nothing else will:

* a bolt that acks itself (``auto_ack = False``): the first ``ack`` or ``fail`` counts it;
* a bolt that acks automatically: only a call on a tuple auto_ack has not counted yet, one
  of :class:`Uncounted`'s (the tuple in ``process``, the batch in ``process_batch``); the
  pass then counts it no more (``own``, or its mark). A call on a tuple kept from an earlier
  call was counted when that call returned and counts nothing.

The runtime's own counting pays nothing per tuple for this: the pass sets :class:`Uncounted`
once (a per-tuple pass sets ``one`` per untracked tuple it hands over itself), and the
bolt's calls, rare for untracked tuples, do the work.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from squall.api.tuple import Tuple, TupleBatch
from squall.runtime.acks import SETTLED


class Uncounted:
    """The untracked tuples of the running call that ``auto_ack`` counts when it returns:
    ``one`` (the tuple in ``process`` on a per-tuple path), or a batch (a list, or a
    TupleBatch's Tuples as the bolt built them), or the tuples a C loop hands to
    ``process`` one by one (the one in process is found from the loop's iterator). Set
    and cleared by the thread that runs the component's calls; ``own`` counts the tuples
    of it the bolt settled itself (a bulk count takes them out)."""

    __slots__ = ("_ids", "_it", "_tuples", "one", "own")

    def __init__(self) -> None:
        self.one: Tuple | None = None
        self._tuples: Sequence[Any] | TupleBatch | None = None
        self._it: Iterator[Any] | None = None
        self._ids: set[int] | None = None
        self.own = 0

    def mapped(self, tuples: list[Tuple], it: Iterator[Tuple]) -> None:
        """``process`` is called on ``tuples`` in order by a C loop over ``it``: the tuple in
        process is the last one it took."""
        self._tuples = tuples
        self._it = it
        self.own = 0

    def batch(self, tuples: Sequence[Any] | TupleBatch) -> None:
        """``process_batch`` runs on ``tuples`` (a TupleBatch: the Tuples the bolt built)."""
        self._tuples = tuples
        self._ids = None
        self.own = 0

    def close(self) -> int:
        """The pass (or batch) that :meth:`mapped` or :meth:`batch` began ended: nothing is
        uncounted any more. Returns ``own``, the tuples of it the bolt settled itself. (A
        per-tuple path sets ``one`` and clears it itself.)"""
        self._tuples = self._it = None
        return self.own

    def holds(self, tup: Tuple) -> bool:
        """Whether ``tup`` is one of the tuples auto_ack has not counted yet."""
        if self.one is not None:
            return tup is self.one
        tuples = self._tuples
        if tuples is None:
            return False
        it = self._it
        if it is not None:
            left = it.__length_hint__()  # type: ignore[attr-defined]
            return tup is tuples[len(tuples) - left - 1]
        ids = self._ids
        if ids is None:
            if tuples.__class__ is TupleBatch:
                tuples = tuples.built      # type: ignore[union-attr]
                if tuples is None:          # the bolt read no Tuple of it yet
                    return False
            ids = self._ids = set(map(id, tuples))
        return id(tup) in ids


def settles(tup: Tuple, auto_ack: bool, uncounted: Uncounted) -> bool:
    """A bolt's own ``ack`` or ``fail`` of the untracked ``tup`` (see the module docstring):
    marks it settled, and returns whether the call counts it (False: it was counted already,
    by the bolt's earlier call or by auto_ack or auto_fail)."""
    if tup.ackval:
        return False
    tup.ackval = SETTLED
    if not auto_ack:
        return True
    if uncounted.holds(tup):
        uncounted.own += 1
        return True
    return False
