"""The XOR acker: Storm's constant-memory tracking of tuple trees.

For each root id the acker keeps ``[xor of edge ids, spout task]``. A spout's init message
XORs in the edges of the tuples it emitted; every ack XORs in the acked tuple's own edge and
the edges of the children anchored to it, so each edge enters exactly twice and the value
returns to zero exactly when the whole tree is processed. Trees are kept in two generations
(rotated every ``topology.message.timeout.secs``) so forgotten trees are dropped after one to
two timeouts; the spout task fails them on its own timer. A reset of a tree's timeout moves
it back into the newer generation.

Acks may arrive before their tree's init, so an ack of a root not tracked makes an entry
without a spout task; so do the acks of a tree's other tuples that arrive after it failed (or
after it completed), for a tree no init will come for any more. Rotations drop those with the
rest; with ``topology.enable.message.timeouts: false`` nothing rotates, and :meth:`sweep`
drops them instead, once one to two sweeps (message timeouts) old: memory stays bounded by
what fails in that time.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from squall.spi.acker import Acker, Completion


class XorAcker(Acker):
    name = "xor"

    def __init__(self, conf: Mapping[str, Any] | None = None) -> None:
        super().__init__(conf)
        self._new: dict[int, list[Any]] = {}
        self._old: dict[int, list[Any]] = {}
        #: roots whose entry an ack or fail made, without an init, since the last sweep, and
        #: in the sweep before (:meth:`sweep`; a rotation forgets them)
        self._strays: set[int] = set()
        self._strays_old: set[int] = set()

    def _entry(self, root: int) -> list[Any]:
        entry = self._new.get(root)
        if entry is None:
            entry = self._old.pop(root, None)
            if entry is None:
                entry = [0, -1, False]  # acks may arrive before the spout's init
                self._strays.add(root)
            self._new[root] = entry
        return entry

    def init(self, root: int, value: int, spout_task: int) -> Completion | None:
        new = self._new
        if value and root not in new and root not in self._old:
            new[root] = [value, spout_task, False]      # the usual case: a tree not seen yet
            return None
        entry = self._entry(root)
        entry[0] ^= value
        entry[1] = spout_task
        if entry[2]:
            del self._new[root]
            return (spout_task, False)
        if entry[0] == 0:
            del self._new[root]
            return (spout_task, True)
        return None

    def ack(self, root: int, value: int) -> Completion | None:
        entry = self._new.get(root)     # _entry's first step, inline: most acks find it
        if entry is None:
            entry = self._entry(root)
        x = entry[0] = entry[0] ^ value
        if x == 0 and entry[1] >= 0:
            del self._new[root]
            return (entry[1], True)
        return None

    def fail(self, root: int) -> Completion | None:
        entry = self._entry(root)
        if entry[1] < 0:           # init not seen yet: the init completes it as failed
            entry[2] = True
            return None
        del self._new[root]
        return (entry[1], False)

    def reset_timeout(self, root: int) -> int | None:
        entry = self._new.get(root)
        if entry is None:
            entry = self._old.pop(root, None)
            if entry is None:
                return None         # not tracked: no init or ack seen, or gone
            self._new[root] = entry
        return entry[1] if entry[1] >= 0 else None

    def rotate(self) -> list[tuple[int, int]]:
        expired = [(root, e[1]) for root, e in self._old.items()]
        self._old, self._new = self._new, {}
        self._strays.clear()        # expired with the rest, in their turn
        self._strays_old.clear()
        return expired

    def sweep(self) -> None:
        strays = self._strays_old
        for root in strays:
            entry = self._new.get(root)
            if entry is not None and entry[1] < 0:     # still no init: none will come
                del self._new[root]
        strays.clear()
        self._strays_old, self._strays = self._strays, strays

    def pending(self) -> int:
        return len(self._new) + len(self._old)
