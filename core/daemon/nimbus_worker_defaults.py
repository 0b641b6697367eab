"""Supervisors whose workers would not understand each other: different default transports or
serializers under one topology.

A worker's conf is its supervisor's with the topology's on top, so a topology that chooses no
``squall.transport`` (or ``squall.serializer``) runs each worker on its own supervisor's. Placed
on supervisors configured differently, its workers cannot connect, or cannot decode what they
receive, and it shows ``active`` while it processes nothing. So each supervisor advertises in its
registration what its workers use by default (:func:`advertised`, under :data:`FIELD`), and
nimbus's scheduling pass compares, for each topology choosing neither, what the supervisors
hosting its workers advertise (:func:`find_clashes`): a clash is logged once as an ERROR naming
the supervisors, the values and the fix, and becomes the topology's status reason
(:class:`WorkerDefaults`). A topology that chooses its own is unaffected: its choice reaches every
worker. A registration advertising nothing (a supervisor of an older squall) is left out.

Runs on nimbus's monitor thread (the leader's scheduling pass); not thread-safe.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

log = logging.getLogger(__name__)

#: the keys whose value every worker of a topology must share
KEYS = ("squall.transport", "squall.serializer")
#: the registration field holding what a supervisor's workers use by default
FIELD = "worker_defaults"


def advertised(conf: Mapping[str, Any]) -> dict[str, str]:
    """What a supervisor with ``conf`` advertises: each of :data:`KEYS` -> the driver name its
    workers use when a topology chooses none (its conf's, else the default)."""
    from squall import config
    defaults = config.defaults()
    return {key: str(conf.get(key) or defaults[key]) for key in KEYS}


class Clash(NamedTuple):
    """Supervisors hosting one topology's workers that advertise different values of ``key``."""

    key: str
    #: value -> the supervisors advertising it (``ID on HOST``, sorted), by first supervisor
    values: tuple[tuple[str, tuple[str, ...]], ...]

    def describe(self) -> str:
        """``... use different squall.transport: zmq (s1 on h1), nng (s2 on h2)``."""
        shown = ", ".join(f"{value} ({', '.join(sids)})" for value, sids in self.values)
        return f"the supervisors running its workers use different {self.key}: {shown}"

    def fix(self) -> str:
        return (f"set the same {self.key} in every supervisor's config, or choose one in the "
                f"topology (squall submit -c {self.key}=NAME)")


def find_clashes(chosen: Iterable[str], nodes: Iterable[str],
                 registrations: Mapping[str, Mapping[str, Any]]) -> list[Clash]:
    """The clashes among the supervisors ``nodes`` (ids in ``registrations``, the
    ``/supervisors`` records) for the :data:`KEYS` the topology does not set itself
    (``chosen``: the keys of its own conf)."""
    own = set(chosen)
    out = []
    for key in KEYS:
        if key in own:
            continue
        by_value: dict[str, list[str]] = {}
        for sid in sorted(set(nodes)):
            registration = registrations.get(sid) or {}
            value = (registration.get(FIELD) or {}).get(key)
            host = registration.get("hostname")
            if isinstance(value, str) and value:
                by_value.setdefault(value, []).append(f"{sid} on {host}" if host else sid)
        if len(by_value) > 1:
            ordered = sorted(by_value.items(), key=lambda kv: kv[1])
            out.append(Clash(key, tuple((value, tuple(sids)) for value, sids in ordered)))
    return out


def reason(clashes: Iterable[Clash]) -> str:
    """The status reason for ``clashes`` (``""`` for none)."""
    return "; ".join(f"{c.describe()}, so its workers cannot exchange tuples: {c.fix()}"
                     for c in clashes)


class WorkerDefaults:
    """Per topology, the clashes of its supervisors' defaults: :meth:`check` each pass,
    :meth:`forget` when it is killed. ``directory(topology id)`` is the topology's package
    directory (the code store's), whose conf file holds its own conf, without nimbus's keys."""

    def __init__(self, directory: Callable[[str], Path]) -> None:
        self._directory = directory
        #: topology id -> the keys its own conf sets (read once: a package never changes)
        self._chosen: dict[str, frozenset[str]] = {}
        #: topology id -> the clashes logged for it
        self._said: dict[str, set[Clash]] = {}

    def _keys_chosen(self, topology_id: str) -> frozenset[str]:
        got = self._chosen.get(topology_id)
        if got is None:
            from squall.daemon import packaging
            from squall.errors import TopologyError
            try:
                conf = packaging.read_json(self._directory(topology_id) / packaging.CONF_FILE)
            except TopologyError:
                return frozenset(KEYS)     # unreadable: nothing to say (scheduling says it)
            got = self._chosen[topology_id] = frozenset(k for k in KEYS if k in conf)
        return got

    def check(self, topology_id: str, name: str, nodes: Iterable[str],
              registrations: Mapping[str, Mapping[str, Any]]) -> str:
        """The status reason of topology ``topology_id`` placed on supervisors ``nodes``
        (``""`` when they agree); a new clash is logged once as an ERROR."""
        clashes = find_clashes(self._keys_chosen(topology_id), nodes, registrations)
        said = self._said.setdefault(topology_id, set())
        for clash in clashes:
            if clash not in said:
                log.error("topology %s (%s): %s, so its workers cannot exchange tuples and it "
                          "processes nothing: %s", name, topology_id, clash.describe(),
                          clash.fix())
        if said and not clashes:
            log.info("topology %s (%s): its supervisors agree on %s now", name, topology_id,
                     " and ".join(sorted({c.key for c in said})))
        self._said[topology_id] = set(clashes)
        return reason(clashes)

    def forget(self, topology_id: str) -> None:
        """Drop what is remembered of ``topology_id`` (it was killed)."""
        self._chosen.pop(topology_id, None)
        self._said.pop(topology_id, None)
