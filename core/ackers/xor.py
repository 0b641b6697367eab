"""The XOR acker: Storm's constant-memory tracking of tuple trees.

For each root id the acker keeps ``[xor of edge ids, spout task]``. A spout's init message
XORs in the edges of the tuples it emitted; every ack XORs in the acked tuple's own edge and
the edges of the children anchored to it, so each edge enters exactly twice and the value
returns to zero exactly when the whole tree is processed. Trees are kept in two generations
(rotated every ``topology.message.timeout.secs``) so forgotten trees are dropped after one to
two timeouts; the spout task fails them on its own timer. A reset of a tree's timeout moves
it back into the newer generation.
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

    def _entry(self, root: int) -> list[Any]:
        entry = self._new.get(root)
        if entry is None:
            entry = self._old.pop(root, None)
            if entry is None:
                entry = [0, -1, False]  # acks may arrive before the spout's init
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
        return expired

    def pending(self) -> int:
        return len(self._new) + len(self._old)
