"""Supervisors whose workers would not understand each other: different default transports,
serializers or transport security under one topology.

A worker's conf is its supervisor's with the topology's on top, so a topology that chooses no
``squall.transport`` (or ``squall.serializer``) runs each worker on its own supervisor's, and
``squall.transport.tls`` (which no topology may set) is always its supervisor's. Placed on
supervisors configured differently, its workers cannot connect, or cannot decode what they
receive, and it shows ``active`` while it processes nothing. So each supervisor advertises in its
registration what its workers use by default (:func:`advertised`, under :data:`FIELD`): squall's
:data:`KEYS` and the keys plugins add with ``squall_add_worker_shared_keys`` (a transport's
security switch). Nimbus's scheduling pass compares, for each topology, what the supervisors
hosting its workers advertise for the keys its own conf does not set (:func:`find_clashes`): a
clash is logged once as an ERROR naming the supervisors, the values and the fix, and becomes the
topology's status reason (:class:`WorkerDefaults`). A key a supervisor does not advertise (a
supervisor of an older squall, a plugin it lacks) leaves it out of that key's comparison.

Runs on nimbus's monitor thread (the leader's scheduling pass); not thread-safe.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

log = logging.getLogger(__name__)

#: the drivers every worker of a topology must share (a topology may choose its own)
DRIVER_KEYS = ("squall.transport", "squall.serializer")
#: squall's own keys whose value every worker of a topology must share (plugins add theirs)
KEYS = (*DRIVER_KEYS, "squall.transport.tls")
#: where a transport's own keys live: ``squall.transport.NAME.``
_TRANSPORT_PREFIX = "squall.transport."
#: the registration field holding what a supervisor's workers use by default
FIELD = "worker_defaults"


def shared_keys() -> tuple[str, ...]:
    """:data:`KEYS` and the keys plugins return from ``squall_add_worker_shared_keys``.
    PluginLoadError naming a plugin whose hook raises or returns something else than str keys."""
    from squall.errors import PluginLoadError
    from squall.plugin_manager import get_plugin_manager
    hook = "squall_add_worker_shared_keys"
    out = list(KEYS)
    for impl in getattr(get_plugin_manager().hook, hook).get_hookimpls():
        try:
            keys = list(impl.function() or ())
        except Exception as exc:     # a plugin's bug: one line naming it
            raise PluginLoadError(f"plugin {impl.plugin_name!r} failed in {hook}: "
                                  f"{exc!r}") from exc
        if not all(isinstance(key, str) and key for key in keys):
            raise PluginLoadError(f"plugin {impl.plugin_name!r}: {hook} returned "
                                  f"{keys!r:.80}, not config keys")
        out.extend(key for key in keys if key not in out)
    return tuple(out)


def _comparable(value: Any) -> bool:
    return isinstance(value, (str, bool, int, float)) and value != ""


def advertised(conf: Mapping[str, Any]) -> dict[str, Any]:
    """What a supervisor with ``conf`` advertises: each of :func:`shared_keys` -> the value its
    workers use when a topology sets none (its conf's, else the default; a key with neither,
    or with a value that is not a bool, number or str, is left out)."""
    from squall import config
    defaults = config.defaults()
    out = {}
    for key in shared_keys():
        value = conf.get(key)
        if value is None or value == "":
            value = defaults.get(key)
        if _comparable(value):
            out[key] = value
    return out


def _shown(value: Any) -> str:
    """``zmq``, ``true``: a value as the user writes it in YAML."""
    return value if isinstance(value, str) else json.dumps(value)


class Clash(NamedTuple):
    """Supervisors hosting one topology's workers that advertise different values of ``key``."""

    key: str
    #: value -> the supervisors advertising it (``ID on HOST``, sorted), by first supervisor
    values: tuple[tuple[Any, tuple[str, ...]], ...]

    def describe(self) -> str:
        """``... use different squall.transport: zmq (s1 on h1), nng (s2 on h2)``."""
        shown = ", ".join(f"{_shown(value)} ({', '.join(sids)})" for value, sids in self.values)
        return f"the supervisors running its workers use different {self.key}: {shown}"

    def fix(self) -> str:
        from squall.daemon.nimbus_topologies import topology_conf
        same = f"set the same {self.key} in every supervisor's config"
        if not topology_conf({self.key: None}):    # a machine's key: no topology sets it
            return same
        word = "NAME" if self.key in DRIVER_KEYS else "VALUE"
        return f"{same}, or choose one in the topology (squall submit -c {self.key}={word})"


def find_clashes(own: Mapping[str, Any], nodes: Iterable[str],
                 registrations: Mapping[str, Mapping[str, Any]]) -> list[Clash]:
    """The clashes among the supervisors ``nodes`` (ids in ``registrations``, the
    ``/supervisors`` records) for the keys they advertise that the topology's own conf ``own``
    does not set: squall's :data:`KEYS` first, then the others by name. A key of transport
    ``NAME`` (``squall.transport.NAME.*``) is compared among the supervisors whose workers run
    ``NAME`` only (the topology's choice, else what each advertises)."""
    advertising: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for sid in sorted(set(nodes)):
        registration = registrations.get(sid) or {}
        values = registration.get(FIELD)
        if isinstance(values, Mapping):
            host = registration.get("hostname")
            advertising[sid] = (f"{sid} on {host}" if host else sid, values)
    keys = {key for _, values in advertising.values() for key in values}
    ordered_keys = [k for k in KEYS if k in keys] + sorted(keys.difference(KEYS))
    out = []
    for key in ordered_keys:
        if key in own:
            continue
        by_value: dict[Any, list[str]] = {}
        for shown_sid, values in advertising.values():
            value = values.get(key)
            if not _comparable(value):
                continue
            transport = own.get("squall.transport") or values.get("squall.transport")
            owner = key[len(_TRANSPORT_PREFIX):].split(".", 1)
            if (key.startswith(_TRANSPORT_PREFIX) and len(owner) == 2
                    and owner[0] != transport):
                continue        # another transport's key: not what these workers run
            # True == 1 in a dict: keyed with the type, so a bool never merges with a number
            by_value.setdefault((type(value).__name__, value), []).append(shown_sid)
        if len(by_value) > 1:
            ordered = sorted(by_value.items(), key=lambda kv: kv[1])
            out.append(Clash(key, tuple((value, tuple(sids))
                                        for (_, value), sids in ordered)))
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
        #: topology id -> its own conf (read once: a package never changes)
        self._own: dict[str, Mapping[str, Any]] = {}
        #: topology id -> the clashes logged for it
        self._said: dict[str, set[Clash]] = {}

    def _own_conf(self, topology_id: str) -> Mapping[str, Any] | None:
        got = self._own.get(topology_id)
        if got is None:
            from squall.daemon import packaging
            from squall.errors import TopologyError
            try:
                conf = packaging.read_json(self._directory(topology_id) / packaging.CONF_FILE)
            except TopologyError:
                return None      # unreadable: nothing to say (scheduling says it)
            if not isinstance(conf, dict):
                return None
            got = self._own[topology_id] = conf
        return got

    def check(self, topology_id: str, name: str, nodes: Iterable[str],
              registrations: Mapping[str, Mapping[str, Any]]) -> str:
        """The status reason of topology ``topology_id`` placed on supervisors ``nodes``
        (``""`` when they agree); a new clash is logged once as an ERROR."""
        own = self._own_conf(topology_id)
        clashes = [] if own is None else find_clashes(own, nodes, registrations)
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
        self._own.pop(topology_id, None)
        self._said.pop(topology_id, None)
