"""Free capacity of a set of supervisors, with a heap to find the roomiest one fast.

The pool mirrors the cluster's free ports and free resources for one scheduling pass. Plans are
made against the pool (``take``), can be rolled back (``checkpoint`` / ``rollback``) and are
then committed to the :class:`~squall.scheduling.cluster.Cluster` by the scheduler. Finding a
supervisor is O(log n) amortised when the roomiest fits: a lazy max-heap keyed by
(free ports, free cpu, free memory, free net, free disk), stale entries skipped by version.
"""
from __future__ import annotations

import heapq
from collections.abc import Iterable

from squall.scheduling.cluster import Cluster
from squall.scheduling.resources import Resources

__all__ = ["Pool"]


_Heap = list[tuple[tuple[int, ...], str, int]]


class Pool:
    """Free ports and resources of every supervisor of ``cluster``, searched through views.

    A view is a sorted group of supervisor ids (e.g. those on a topology's isolated hosts)
    with its own heap; a change to a supervisor updates every view holding it.
    """

    def __init__(self, cluster: Cluster) -> None:
        self.free: dict[str, Resources] = {}
        self.ports: dict[str, list[int]] = {}
        self._version: dict[str, int] = {}
        self._views: dict[tuple[str, ...], _Heap] = {}
        self._member: dict[str, list[_Heap]] = {}
        self._saved: dict[str, tuple[Resources, list[int]]] | None = None
        for sup in cluster.supervisors():
            sid = sup.id
            self.free[sid] = cluster.available_resources(sid)
            self.ports[sid] = [slot.port for slot in cluster.available_slots(sid)]
            self._version[sid] = 0
            self._member[sid] = []

    def view(self, ids: Iterable[str]) -> tuple[str, ...]:
        """Register (once) and return the view over supervisor ``ids``."""
        key = tuple(sorted(ids))
        if key not in self._views:
            heap = [self._entry(sid) for sid in key]
            heapq.heapify(heap)
            self._views[key] = heap
            for sid in key:
                self._member[sid].append(heap)
        return key

    def _entry(self, sid: str) -> tuple[tuple[int, ...], str, int]:
        f = self.free[sid]
        key = (-len(self.ports[sid]), -f.cpu, -f.memory, -f.net, -f.disk)
        return key, sid, self._version[sid]

    def _touch(self, sid: str) -> None:
        self._version[sid] += 1
        entry = self._entry(sid)
        for heap in self._member[sid]:
            heapq.heappush(heap, entry)

    # -- planning -----------------------------------------------------------------------------

    def find(self, view: tuple[str, ...], demand: Resources, avoid: set[str]) -> str | None:
        """The roomiest supervisor of ``view`` with a free port that fits ``demand``,
        preferring one not in ``avoid`` (nodes the topology already uses); None if none fits."""
        heap = self._views[view]
        popped = []
        chosen = fallback = None
        while heap:
            entry = heapq.heappop(heap)
            key, sid, version = entry
            if version != self._version[sid]:
                continue
            popped.append(entry)
            if key[0] == 0:
                break  # every remaining supervisor has no free port either
            if not demand.fits_in(self.free[sid]):
                continue
            if sid in avoid:
                fallback = fallback or sid
                continue
            chosen = sid
            break
        for entry in popped:
            heapq.heappush(heap, entry)
        return chosen or fallback

    def take(self, sid: str, demand: Resources, new_worker: bool) -> int | None:
        """Use ``demand`` on ``sid`` and, for a new worker, its lowest free port (returned)."""
        self._save(sid)
        port = self.ports[sid].pop(0) if new_worker else None
        self.free[sid] = self.free[sid] - demand
        self._touch(sid)
        return port

    def release(self, sid: str, demand: Resources, port: int | None) -> None:
        """Give back what a freed worker used (committed to the cluster by the caller)."""
        self._save(sid)
        if port is not None:
            self.ports[sid] = sorted(self.ports[sid] + [port])
        self.free[sid] = self.free[sid] + demand
        self._touch(sid)

    def fits(self, sid: str, demand: Resources) -> bool:
        return demand.fits_in(self.free[sid])

    # -- transactions -------------------------------------------------------------------------

    def checkpoint(self) -> None:
        self._saved = {}

    def _save(self, sid: str) -> None:
        if self._saved is not None and sid not in self._saved:
            self._saved[sid] = (self.free[sid], list(self.ports[sid]))

    def rollback(self) -> None:
        for sid, (free, ports) in (self._saved or {}).items():
            self.free[sid], self.ports[sid] = free, ports
            self._touch(sid)
        self._saved = None

    def commit(self) -> None:
        self._saved = None

    # -- reporting ----------------------------------------------------------------------------

    def totals(self, ids: Iterable[str], need_port: bool) -> tuple[Resources, int]:
        """Summed non-negative free resources and free ports over ``ids`` (only supervisors
        with a free port count when ``need_port``)."""
        total, ports = Resources(), 0
        for sid in ids:
            if need_port and not self.ports[sid]:
                continue
            f = self.free[sid]
            total = total + Resources(max(f.cpu, 0), max(f.memory, 0), max(f.net, 0),
                                      max(f.disk, 0))
            ports += len(self.ports[sid])
        return total, ports

    def largest(self, ids: Iterable[str], need_port: bool) -> Resources:
        """Per dimension, the most any single supervisor in ``ids`` has free."""
        best = [0, 0, 0, 0]
        for sid in ids:
            if need_port and not self.ports[sid]:
                continue
            f = self.free[sid]
            for i, v in enumerate((f.cpu, f.memory, f.net, f.disk)):
                best[i] = max(best[i], v)
        return Resources(*best)
