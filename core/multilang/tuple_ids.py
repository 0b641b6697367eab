"""The tuples an in-process pystorm bolt got and has not acked or failed yet, found by id.

pystorm's ``ack``, ``fail`` and ``emit(..., anchors=...)`` take a tuple's ``id`` as well as the
tuple (a shell bolt only ever sees ids), where squall's take the :class:`~squall.Tuple`.
:class:`ReceivedTuples` maps an id back to the Tuple it names, for
:mod:`squall.multilang.streamparse`. A squall Tuple's ``id`` is its edge id, an int unique
among the tuples in flight; an untracked tuple's is ``None`` (nothing waits for its ack, so
``ack(None)``, ``fail(None)`` and an anchor ``None`` do nothing). An id that names no tuple
this bolt may still ack (never received, or acked or failed already) is reported as one error
line and ignored, as a shell bolt ignores it.

All of it runs on the bolt's own thread (the worker's loop, or the component's thread).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from squall.api.tuple import Tuple


class ReceivedTuples:
    """The ids a hosted bolt may name, and its host's ``ack``, ``fail`` and ``report_error``.

    ``held`` False (a bolt with pystorm's auto flags, which squall acks when ``process``
    returns): the one tuple in flight is ``current``, the one in ``process`` (set by the
    host before it calls ``process``). ``held`` True (a bolt that acks or fails its tuples
    itself): every tuple given to :meth:`receive` is kept by its id until it is acked or
    failed, through :meth:`ack` / :meth:`fail`, by its id or as the Tuple. A bolt that never
    acks nor fails a tracked tuple keeps it (as Storm's ShellBolt keeps its inputs); its tree
    times out and is replayed."""

    __slots__ = ("_fail", "_ack", "_by_id", "_report", "current")

    def __init__(self, ack: Callable[[Tuple], None], fail: Callable[[Tuple], None],
                 report: Callable[[str], None], held: bool) -> None:
        self._ack = ack
        self._fail = fail
        self._report = report
        self._by_id: dict[int, Tuple] | None = {} if held else None
        self.current: Tuple | None = None

    def receive(self, tup: Tuple) -> None:
        """Keep ``tup`` (a held bolt's, before its ``process``) until it is acked or failed."""
        key = tup.id
        if key and self._by_id is not None:
            self._by_id[key] = tup

    def ack(self, tup: Any) -> None:
        """pystorm's ``ack(tup)``: ``tup`` a Tuple or its id."""
        found = tup if tup.__class__ is Tuple else self.find(tup, "ack")
        if found is not None:
            self._forget(found)
            self._ack(found)

    def fail(self, tup: Any) -> None:
        """pystorm's ``fail(tup)``: ``tup`` a Tuple or its id."""
        found = tup if tup.__class__ is Tuple else self.find(tup, "fail")
        if found is not None:
            self._forget(found)
            self._fail(found)

    def anchors(self, anchors: Iterable[Any]) -> list[Tuple]:
        """The Tuples ``anchors`` (Tuples or their ids) name; an unknown id is reported and
        left out, so the emit goes on with the anchors that are known."""
        out = []
        for a in anchors:
            found = a if a.__class__ is Tuple else self.find(a, "an emit anchored to")
            if found is not None:
                out.append(found)
        return out

    def find(self, key: Any, what: str) -> Tuple | None:
        """The tuple in flight whose id is ``key``; ``None`` for ``None`` (untracked) and,
        reported as one error line, for an id that names none."""
        if key is None:
            return None
        by_id = self._by_id
        try:
            if by_id is not None:
                found = by_id.get(key)
            else:
                current = self.current
                found = current if current is not None and current.id == key else None
        except TypeError:           # an unhashable "id": a list, say
            found = None
        if found is None:
            self._report(f"MultilangError: {what} tuple id {key!r:.80}, which names no tuple "
                         "this bolt received and has not acked or failed yet; ignored")
        return found

    def _forget(self, tup: Tuple) -> None:
        by_id = self._by_id
        key = tup.id
        if by_id is not None and key and by_id.get(key) is tup:
            del by_id[key]
