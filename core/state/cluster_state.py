"""The cluster's shared state: API.md section 9's JSON layout on a :class:`StateStore`.

The store is already chrooted at ``storm.zookeeper.root``, so paths here start at ``/``:

=================================================  ===========================================
``/storms/<topology-id>``                          topology base: name, launch_time, status, ...
``/assignments/<topology-id>``                     code_dir, node_host, executor_node_port, ...
``/supervisors/<supervisor-id>``                   ephemeral: hostname, ports, resources, ...
``/workerbeats/<topology-id>/<node>-<port>``       a worker's executor stats, uptime, time (*)
``/errors/<topology-id>/<component>/e<seq>``       error text, time, host, port (newest 10)
``/nimbuses/<host:port>``                          ephemeral nimbus registration
``/leader-lock``                                   the nimbus leader election
``/logconfigs/<topology-id>``                      log levels set at run time (``loggers``)
``/trident/<topology-name>/coordinators/<group>``  a Trident batch group's record (**)
``/trident/<topology-name>/spouts/<stream>``       its partitioned spouts' metadata
=================================================  ===========================================

Values are UTF-8 JSON objects; (*) a worker beat over
:data:`~squall.spi.state.MAX_VALUE_BYTES` is stored zlib-compressed (:func:`encode_beat`,
:func:`decode_beat`). Every method may be called from any thread and raises
:class:`~squall.errors.StateError` when the store fails; a node holding something that is not a
JSON object reads as ``None`` (logged), so one corrupt node never stops a daemon.

(**) Written by the group's coordinator (:mod:`squall.trident.runtime.coordinator`):
``committed`` (its last committed txid), ``topology_id`` (the run that wrote it), ``streams``
(its spouts' stream names) and ``outlives`` (whether one of its states outlives the topology).
What Trident keeps is under the topology's *name*, for a topology submitted again to resume;
a group whose states all die with the topology (memory states) is dropped when the topology
is killed (:meth:`ClusterState.drop_trident`), so its next run starts at txid 1.
"""
from __future__ import annotations

import json
import logging
import zlib
from collections.abc import Mapping
from typing import Any

from squall.errors import StateError
from squall.spi.state import (
    MAX_VALUE_BYTES,
    LeaderElection,
    StateStore,
    WatchCallback,
    node_name_problem,
)

log = logging.getLogger(__name__)

STORMS = "/storms"
ASSIGNMENTS = "/assignments"
SUPERVISORS = "/supervisors"
WORKERBEATS = "/workerbeats"
ERRORS = "/errors"
NIMBUSES = "/nimbuses"
LEADER_LOCK = "/leader-lock"
LOGCONFIGS = "/logconfigs"
TRIDENT = "/trident"
ROOTS = (STORMS, ASSIGNMENTS, SUPERVISORS, WORKERBEATS, ERRORS, NIMBUSES, LEADER_LOCK,
         LOGCONFIGS)
#: errors kept per component
ERRORS_KEPT = 10
ERROR_PREFIX = "e"


def encode(value: Mapping[str, Any]) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode("utf-8")


def decode(data: bytes | None, path: str = "?") -> dict[str, Any] | None:
    if data is None:
        return None
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        log.warning("state node %s does not hold UTF-8 JSON; ignored", path)
        return None
    if not isinstance(value, dict):
        log.warning("state node %s holds a %s, not a JSON object; ignored", path,
                    type(value).__name__)
        return None
    return value


def encode_beat(beat: Mapping[str, Any]) -> bytes:
    """A worker beat's node value: its JSON, or the zlib compression of that JSON when the
    JSON is over :data:`MAX_VALUE_BYTES` (:func:`decode_beat` reads both). StateError when
    the compressed beat is still too large."""
    data = encode(beat)
    if len(data) <= MAX_VALUE_BYTES:
        return data
    packed = zlib.compress(data, 6)
    if len(packed) > MAX_VALUE_BYTES:
        executors = beat.get("executors")
        count = len(executors) if isinstance(executors, Mapping) else "?"
        raise StateError(
            f"worker beat of {count} executors is {len(data)} bytes ({len(packed)} compressed), "
            f"over the {MAX_VALUE_BYTES}-byte state value limit: run the topology on more "
            "workers (topology.workers) or with fewer executors per worker")
    return packed


def decode_beat(data: bytes | None, path: str = "?") -> dict[str, Any] | None:
    """A worker beat written by :func:`encode_beat` (JSON or zlib-compressed JSON)."""
    if data and not data.startswith(b"{"):
        try:
            data = zlib.decompress(data)
        except zlib.error:
            log.warning("state node %s holds neither JSON nor a compressed beat; ignored", path)
            return None
    return decode(data, path)


def beat_key(node: str, port: int) -> str:
    """``/workerbeats`` child name of a worker: ``<node>-<port>``."""
    return f"{node}-{int(port)}"


def parse_beat_key(key: str) -> tuple[str, int]:
    """``"sup-1-6700"`` -> ``("sup-1", 6700)`` (the port is after the last dash)."""
    node, _, port = key.rpartition("-")
    return node, int(port)


def trident_outlives(record: Mapping[str, Any] | None) -> bool:
    """Whether what a Trident batch group's ``record`` stands for outlives its topology: not
    when the record says that none of the group's states does (a record without the
    field, or none, is kept: what wrote it is not known)."""
    return not isinstance(record, Mapping) or record.get("outlives", True) is not False


def _safe(name: str, what: str) -> str:
    problem = node_name_problem(name)
    if problem is not None:
        raise StateError(f"invalid {what} {name!r} for a state path: it {problem}")
    return name


class ClusterState:
    """Typed access to the cluster layout on ``store`` (see the module docstring)."""

    def __init__(self, store: StateStore, conf: Mapping[str, Any] | None = None) -> None:
        self.store = store
        self.conf = dict(conf or {})

    def setup(self) -> None:
        """Create the top-level nodes that are missing (every daemon calls it at start)."""
        for path in ROOTS:
            if not self.store.exists(path):
                try:
                    self.store.create(path, b"")
                except StateError:
                    if not self.store.exists(path):   # lost a race with another daemon: fine
                        raise

    # -- generic ------------------------------------------------------------------------------
    def _read(self, path: str, watch: WatchCallback | None = None) -> dict[str, Any] | None:
        return decode(self.store.get(path, watch=watch), path)

    def _write(self, path: str, value: Mapping[str, Any], *, ephemeral: bool = False) -> None:
        self.store.put(path, encode(value), ephemeral=ephemeral)

    # -- /storms ------------------------------------------------------------------------------
    def topology_ids(self, watch: WatchCallback | None = None) -> list[str]:
        return self.store.children(STORMS, watch=watch)

    def get_storm(self, topology_id: str, watch: WatchCallback | None = None
                  ) -> dict[str, Any] | None:
        return self._read(f"{STORMS}/{_safe(topology_id, 'topology id')}", watch)

    def set_storm(self, topology_id: str, base: Mapping[str, Any]) -> None:
        self._write(f"{STORMS}/{_safe(topology_id, 'topology id')}", base)

    def update_storm(self, topology_id: str, **changes: Any) -> dict[str, Any] | None:
        """Merge ``changes`` into the topology base; ``None`` (nothing written) if absent."""
        base = self.get_storm(topology_id)
        if base is None:
            return None
        base.update(changes)
        self.set_storm(topology_id, base)
        return base

    def remove_storm(self, topology_id: str) -> None:
        self.store.delete(f"{STORMS}/{_safe(topology_id, 'topology id')}", recursive=True)

    def storms(self) -> dict[str, dict[str, Any]]:
        """topology id -> base, for every readable topology."""
        out = {}
        for tid in self.topology_ids():
            base = self.get_storm(tid)
            if base is not None:
                out[tid] = base
        return out

    def find_topology_id(self, name: str, *, killed: bool = False) -> str | None:
        """The id of the live topology called ``name`` (``None`` if there is none); with
        ``killed``, also one in its kill wait (nimbus keeps one record per name at a time)."""
        for tid, base in self.storms().items():
            if base.get("name") == name and (killed or base.get("status") != "killed"):
                return tid
        return None

    # -- /assignments -------------------------------------------------------------------------
    def assignment_ids(self, watch: WatchCallback | None = None) -> list[str]:
        return self.store.children(ASSIGNMENTS, watch=watch)

    def get_assignment(self, topology_id: str, watch: WatchCallback | None = None
                       ) -> dict[str, Any] | None:
        return self._read(f"{ASSIGNMENTS}/{_safe(topology_id, 'topology id')}", watch)

    def set_assignment(self, topology_id: str, assignment: Mapping[str, Any]) -> None:
        self._write(f"{ASSIGNMENTS}/{_safe(topology_id, 'topology id')}", assignment)

    def remove_assignment(self, topology_id: str) -> None:
        self.store.delete(f"{ASSIGNMENTS}/{_safe(topology_id, 'topology id')}", recursive=True)

    def assignments(self) -> dict[str, dict[str, Any]]:
        out = {}
        for tid in self.assignment_ids():
            a = self.get_assignment(tid)
            if a is not None:
                out[tid] = a
        return out

    # -- /supervisors -------------------------------------------------------------------------
    def supervisor_ids(self, watch: WatchCallback | None = None) -> list[str]:
        return self.store.children(SUPERVISORS, watch=watch)

    def get_supervisor(self, supervisor_id: str) -> dict[str, Any] | None:
        return self._read(f"{SUPERVISORS}/{_safe(supervisor_id, 'supervisor id')}")

    def register_supervisor(self, supervisor_id: str, info: Mapping[str, Any]) -> None:
        """Create or refresh the supervisor's ephemeral node."""
        self._write(f"{SUPERVISORS}/{_safe(supervisor_id, 'supervisor id')}", info,
                    ephemeral=True)

    def unregister_supervisor(self, supervisor_id: str) -> None:
        """Remove the supervisor's node (it cannot take work now)."""
        self.store.delete(f"{SUPERVISORS}/{_safe(supervisor_id, 'supervisor id')}")

    def supervisors(self) -> dict[str, dict[str, Any]]:
        out = {}
        for sid in self.supervisor_ids():
            info = self.get_supervisor(sid)
            if info is not None:
                out[sid] = info
        return out

    # -- /workerbeats -------------------------------------------------------------------------
    def write_worker_beat(self, topology_id: str, node: str, port: int,
                          beat: Mapping[str, Any]) -> None:
        """Write a worker's beat: UTF-8 JSON, or its zlib compression when the JSON is over
        :data:`MAX_VALUE_BYTES` (a worker of about a thousand executors or more).

        Raises :class:`~squall.errors.StateError` when even the compressed beat is too large
        (the message names its size and executor count) or the store fails."""
        path = (f"{WORKERBEATS}/{_safe(topology_id, 'topology id')}/"
                f"{_safe(beat_key(node, port), 'worker')}")
        self.store.put(path, encode_beat(beat))

    def worker_beats(self, topology_id: str) -> dict[str, dict[str, Any]]:
        """``"<node>-<port>"`` -> the worker's last beat (compressed beats read back as
        JSON ones)."""
        base = f"{WORKERBEATS}/{_safe(topology_id, 'topology id')}"
        out = {}
        for key in self.store.children(base):
            path = f"{base}/{key}"
            beat = decode_beat(self.store.get(path), path)
            if beat is not None:
                out[key] = beat
        return out

    def remove_worker_beat(self, topology_id: str, node: str, port: int) -> None:
        self.store.delete(f"{WORKERBEATS}/{_safe(topology_id, 'topology id')}/"
                          f"{beat_key(node, port)}")

    def remove_worker_beats(self, topology_id: str) -> None:
        self.store.delete(f"{WORKERBEATS}/{_safe(topology_id, 'topology id')}", recursive=True)

    def worker_beat_keys(self, topology_id: str) -> list[str]:
        """``"<node>-<port>"`` of every worker beat of ``topology_id``."""
        return self.store.children(f"{WORKERBEATS}/{_safe(topology_id, 'topology id')}")

    def beat_topology_ids(self) -> list[str]:
        return self.store.children(WORKERBEATS)

    # -- /errors ------------------------------------------------------------------------------
    def report_error(self, topology_id: str, component: str, entry: Mapping[str, Any]) -> None:
        """Append an error (``error``, ``time_secs``, ``host``, ``port``, ...) and keep only the
        newest :data:`ERRORS_KEPT` of that component."""
        base = (f"{ERRORS}/{_safe(topology_id, 'topology id')}/"
                f"{_safe(component, 'component id')}")
        self.store.create(f"{base}/{ERROR_PREFIX}", encode(entry), sequence=True)
        names = self._error_names(base)
        for old in names[:-ERRORS_KEPT]:
            self.store.delete(f"{base}/{old}")

    def _error_names(self, base: str) -> list[str]:
        names = [n for n in self.store.children(base)
                 if n.startswith(ERROR_PREFIX) and n[len(ERROR_PREFIX):].isdigit()]
        return sorted(names, key=lambda n: int(n[len(ERROR_PREFIX):]))

    def errors(self, topology_id: str) -> dict[str, list[dict[str, Any]]]:
        """component -> its kept errors, oldest first."""
        base = f"{ERRORS}/{_safe(topology_id, 'topology id')}"
        out: dict[str, list[dict[str, Any]]] = {}
        for component in self.store.children(base):
            entries = []
            for name in self._error_names(f"{base}/{component}"):
                entry = self._read(f"{base}/{component}/{name}")
                if entry is not None:
                    entries.append(entry)
            out[component] = entries
        return out

    def remove_errors(self, topology_id: str) -> None:
        self.store.delete(f"{ERRORS}/{_safe(topology_id, 'topology id')}", recursive=True)

    def error_topology_ids(self) -> list[str]:
        return self.store.children(ERRORS)

    # -- /nimbuses, /leader-lock --------------------------------------------------------------
    def register_nimbus(self, host_port: str, info: Mapping[str, Any]) -> None:
        self._write(f"{NIMBUSES}/{_safe(host_port, 'nimbus address')}", info, ephemeral=True)

    def nimbuses(self) -> dict[str, dict[str, Any]]:
        out = {}
        for name in self.store.children(NIMBUSES):
            info = self._read(f"{NIMBUSES}/{name}")
            if info is not None:
                out[name] = info
        return out

    def leader_election(self, identifier: str) -> LeaderElection:
        """A candidacy in the nimbus election under ``/leader-lock``."""
        return self.store.leader_election(LEADER_LOCK, identifier)

    # -- /logconfigs --------------------------------------------------------------------------
    def get_log_config(self, topology_id: str, watch: WatchCallback | None = None
                       ) -> dict[str, Any] | None:
        """The topology's run-time log levels (see :mod:`squall.daemon.log_levels`)."""
        return self._read(f"{LOGCONFIGS}/{_safe(topology_id, 'topology id')}", watch)

    def set_log_config(self, topology_id: str, record: Mapping[str, Any]) -> None:
        self._write(f"{LOGCONFIGS}/{_safe(topology_id, 'topology id')}", record)

    def log_config_topology_ids(self) -> list[str]:
        return self.store.children(LOGCONFIGS)

    def remove_log_config(self, topology_id: str) -> None:
        self.store.delete(f"{LOGCONFIGS}/{_safe(topology_id, 'topology id')}", recursive=True)

    # -- /trident -----------------------------------------------------------------------------
    def trident_names(self) -> list[str]:
        """The topology names Trident keeps something under."""
        return self.store.children(TRIDENT)

    def drop_trident(self, name: str) -> None:
        """Drop what Trident keeps for the topology called ``name`` that does not outlive it:
        the record of each batch group none of whose states outlives the topology, with its
        streams' spout metadata, and the whole ``/trident/<name>`` once no group is left. Call
        it once no topology of that name runs."""
        base = f"{TRIDENT}/{_safe(name, 'topology name')}"
        groups = f"{base}/coordinators"
        for group in self.store.children(groups):
            record = self._read(f"{groups}/{group}")
            if record is None or trident_outlives(record):
                continue
            streams = record.get("streams")
            for stream in streams if isinstance(streams, list) else []:
                if isinstance(stream, str) and not node_name_problem(stream):
                    self.store.delete(f"{base}/spouts/{stream}", recursive=True)
            self.store.delete(f"{groups}/{group}", recursive=True)
            log.info("dropped the Trident record of %s's %s (its states died with it)", name,
                     group)
        if self.store.exists(base) and not self.store.children(groups):
            self.store.delete(base, recursive=True)

    # -- whole topology -----------------------------------------------------------------------
    def remove_topology(self, topology_id: str) -> None:
        """Forget everything about a topology (kill's last step): assignment, base, beats,
        errors, log levels, and what Trident keeps for it that does not outlive it
        (:meth:`drop_trident`)."""
        name = (self.get_storm(topology_id) or {}).get("name")
        self.remove_assignment(topology_id)
        self.remove_storm(topology_id)
        self.remove_worker_beats(topology_id)
        self.remove_errors(topology_id)
        self.remove_log_config(topology_id)
        if isinstance(name, str) and not node_name_problem(name):
            self.drop_trident(name)
