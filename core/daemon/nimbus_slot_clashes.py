"""Slots two supervisors offer: one host and port registered by two live supervisors.

Two supervisors on one host (the same ``storm.local.hostname``, or machine name) given the same
``supervisor.slots.ports`` both register those ports, yet only one worker can bind each: a
worker placed on the second copy never starts ("Address already in use"), and its executors
would wait there while the topology looks active. So nimbus gives each such ``host:port`` to
one of the supervisors and leaves it out of the others' ports in every scheduler's view
(:meth:`SlotClashes.without`). The one that keeps it:

1. the supervisor whose worker beats on it (that worker holds the port);
2. else the one nimbus has executors placed on there;
3. else the one that started first (its registration's ``time_secs - uptime_secs``), then the
   lowest id.

Hosts are compared by what their names resolve to here
(:func:`~squall.daemon.addresses.host_key`: ``localhost``, ``127.0.0.1`` and this machine's
name are one host), each name resolved once while a live supervisor registers it
(:class:`Machines`); a name that does not resolve is compared as written. A clash on a host
known by several names shows them all (``127.0.0.1/localhost``).

A choice holds while that supervisor still offers the slot (start times are whole seconds: two
supervisors started together could swap places from one registration to the next). One error
line names the supervisors and the slots when a clash appears or changes, one info line when
none is left; :func:`clash_note` is the short form nimbus gives as the status reason of a
topology that runs on fewer workers than it asked for meanwhile.

Used on nimbus's monitor thread only, under nimbus's lock (as
:class:`~squall.daemon.nimbus_schedule.Scheduling`).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import replace
from typing import Any, NamedTuple

from squall.daemon.addresses import host_key
from squall.scheduling.cluster import SupervisorDetails, WorkerSlot

log = logging.getLogger(__name__)


class Clash(NamedTuple):
    """One ``host:port`` that several live supervisors offer."""

    host: str
    port: int
    #: the supervisor id that keeps the slot
    kept_by: str
    #: the other supervisors' ids (their copy of the slot is left out), sorted
    left_out: tuple[str, ...]


def start_times(registrations: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    """Supervisor id -> when it started (its clock, whole seconds), from its ``/supervisors``
    record (0 when the record does not say)."""
    out = {}
    for sid, info in registrations.items():
        try:
            out[sid] = float(info.get("time_secs") or 0) - float(info.get("uptime_secs") or 0)
        except (TypeError, ValueError):
            out[sid] = 0.0
    return out


def _groups(clashes: Iterable[Clash]) -> dict[tuple[str, str, tuple[str, ...]], list[int]]:
    """(host, keeper, others) -> their clashing ports, sorted."""
    out: dict[tuple[str, str, tuple[str, ...]], list[int]] = {}
    for c in clashes:
        out.setdefault((c.host, c.kept_by, c.left_out), []).append(c.port)
    return {key: sorted(ports) for key, ports in sorted(out.items())}


def clash_note(clashes: Collection[Clash]) -> str:
    """The status reason of a topology short of workers while ``clashes`` last (``""`` when
    there are none): ``supervisors A, B offer the same slots host:6700, 6701: B's are left
    out``."""
    parts = []
    for (host, kept, others), ports in _groups(clashes).items():
        parts.append(f"supervisors {', '.join((kept, *others))} offer the same slots "
                     f"{host}:{', '.join(map(str, ports))}: {', '.join(others)}'s are left out")
    return "; ".join(parts)


class Machines:
    """Which supervisor host names name one machine. ``key`` (:func:`host_key` by default)
    gives what a name resolves to; it is called once per name while live supervisors
    register that name (a name seen again after it was gone is resolved again)."""

    def __init__(self, key: Callable[[str], frozenset[str]] = host_key) -> None:
        self._key = key
        self._keys: dict[str, frozenset[str]] = {}

    def labels(self, hosts: Iterable[str]) -> dict[str, str]:
        """Each of ``hosts`` -> the label of its machine: the names of that machine among
        ``hosts``, sorted and joined by ``/`` (names whose keys meet name one machine)."""
        names = sorted(set(hosts))
        self._keys = {h: self._keys[h] if h in self._keys else self._key(h) for h in names}
        groups: list[tuple[set[str], set[str]]] = []     # (names, their keys)
        for name in names:
            keys = set(self._keys[name])
            joined = [g for g in groups if g[1] & keys]
            merged: tuple[set[str], set[str]] = ({name}, keys)
            for g in joined:
                merged[0].update(g[0])
                merged[1].update(g[1])
                groups.remove(g)
            groups.append(merged)
        return {name: "/".join(sorted(group)) for group, _ in groups for name in group}


class SlotClashes:
    """Which supervisor keeps each clashing slot, and what was said (see the module
    docstring). ``machines`` tells which host names name one machine."""

    def __init__(self, machines: Machines | None = None) -> None:
        #: (host, port) -> the supervisor id that keeps it
        self._kept: dict[tuple[str, int], str] = {}
        self._said: frozenset[Clash] = frozenset()
        self._machines = machines if machines is not None else Machines()

    def settle(self, supervisors: Iterable[SupervisorDetails], started: Mapping[str, float],
               placed: Collection[WorkerSlot], beating: Collection[WorkerSlot]) -> list[Clash]:
        """The clashes among ``supervisors`` (the live ones), by host and port, each with
        the supervisor that keeps it: ``started`` is :func:`start_times`, ``placed`` the slots
        executors are assigned to, ``beating`` those whose workers beat (see the module
        docstring for the order). Logs nothing."""
        supervisors = list(supervisors)
        machine = self._machines.labels(s.host for s in supervisors)
        claims: dict[tuple[str, int], set[str]] = {}
        for sup in supervisors:
            for port in sup.ports:
                claims.setdefault((machine[sup.host], int(port)), set()).add(sup.id)
        kept: dict[tuple[str, int], str] = {}
        clashes = []
        for (host, port), ids in sorted(claims.items()):
            if len(ids) < 2:
                continue
            keeper = self._kept.get((host, port))
            if keeper not in ids:
                keeper = min(ids, key=lambda sid: (WorkerSlot(sid, port) not in beating,
                                                   WorkerSlot(sid, port) not in placed,
                                                   started.get(sid, 0.0), sid))
            kept[(host, port)] = keeper
            clashes.append(Clash(host, port, keeper, tuple(sorted(ids - {keeper}))))
        self._kept = kept
        return clashes

    @staticmethod
    def without(supervisors: Iterable[SupervisorDetails],
                clashes: Collection[Clash]) -> list[SupervisorDetails]:
        """``supervisors`` less the slots ``clashes`` leave out of them."""
        left = {WorkerSlot(sid, c.port) for c in clashes for sid in c.left_out}
        if not left:
            return list(supervisors)
        return [replace(s, ports=tuple(p for p in s.ports if WorkerSlot(s.id, p) not in left))
                if any(WorkerSlot(s.id, p) in left for p in s.ports) else s
                for s in supervisors]

    def report(self, clashes: Collection[Clash]) -> None:
        """Say ``clashes`` once: an error line when they appear or change, an info line when
        none is left."""
        said = frozenset(clashes)
        if said == self._said:
            return
        if not said:
            log.info("no two live supervisors offer the same host:port any more")
        else:
            groups = [f"{kept} and {', '.join(others)} on host {host} both offer ports "
                      f"{', '.join(map(str, ports))} ({kept} keeps them, "
                      f"{', '.join(others)}'s are left out of scheduling)"
                      for (host, kept, others), ports in _groups(clashes).items()]
            log.error("supervisors offer the same slots: %s; only one worker can bind a "
                      "port, so give each supervisor on a host (storm.local.hostname) "
                      "supervisor.slots.ports of its own", "; ".join(groups))
        self._said = said

    def clear(self) -> None:
        """Forget the choices and what was said (a new leadership term)."""
        self._kept.clear()
        self._said = frozenset()
