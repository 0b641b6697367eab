"""Topology packages kept on more than one nimbus (Storm's code replication).

Every nimbus publishes the packages it holds in its ``/nimbuses/<host:port>`` registration
(``packages``: topology ids), and fetches the packages it lacks from the others: a standby so
that it can take over, a leader when it took over before a package reached it. A submit
returns once ``topology.min.replication.count`` nimbuses hold the new package (the leader
counts), or after ``topology.max.replication.wait.time.sec`` (-1: no limit); until then the
topology is not scheduled, so a leader killed right after a submit leaves its package on a
standby. A package that no live nimbus holds is said in the topology's ``status_reason``
instead of being looked for silently. A package damaged here (see
:mod:`~squall.daemon.nimbus_code`) is not published, and is replaced by a good copy when
another nimbus holds one. A nimbus that cannot store a download (its disk full) says so once,
as its own fault: the package is not reported missing everywhere.

Called from the monitor thread (:meth:`Replication.sync`) and gRPC handler threads
(:meth:`Replication.wait_for`); blocks on the state store, the file system and downloads.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from squall.daemon.nimbus_code import CodeStore
from squall.errors import SquallError
from squall.state.cluster_state import ClusterState

log = logging.getLogger(__name__)
#: how often a waiting submit reads the registrations again
POLL_SECS = 0.2
#: ``status_reason`` of a topology whose package no live nimbus holds
NO_CODE = "no live nimbus holds its code package (the nimbus it was submitted to is gone): " \
          "kill it and submit it again"


class Replication:
    """This nimbus's side of package replication. ``registration`` is the rest of its
    ``/nimbuses`` record (host, port, start time); ``leader`` names the leader now."""

    def __init__(self, state: ClusterState, code: CodeStore, address: str,
                 registration: Mapping[str, Any], leader: Callable[[], str],
                 client_conf: Mapping[str, Any]) -> None:
        self._state = state
        self._code = code
        self._address = address
        self._registration = dict(registration)
        self._leader = leader
        self._client_conf = dict(client_conf)
        self._published: list[str] | None = None
        self._lock = threading.Lock()
        #: topologies whose package this nimbus looked for everywhere and did not find
        self.unfound: set[str] = set()

    def publish(self) -> None:
        """Register this nimbus with the packages it holds now (when that changed)."""
        with self._lock:
            held = self._code.packages()
            if held == self._published:
                return
            self._state.register_nimbus(self._address, {**self._registration,
                                                          "packages": held})
            self._published = held

    def holders(self, topology_id: str) -> int:
        """How many live nimbuses hold ``topology_id``'s package (by their registrations)."""
        return sum(1 for info in self._state.nimbuses().values()
                   if topology_id in (info.get("packages") or ()))

    def sync(self, topology_ids: Iterable[str]) -> None:
        """Fetch every package of ``topology_ids`` this nimbus lacks, or holds damaged, from
        a nimbus that has it (the leader first), then publish. What no one has goes to
        :attr:`unfound` (a damaged one stays as it is: its status reason says why)."""
        wanted = list(topology_ids)
        missing = self._code.missing(wanted)
        damaged = sorted(set(self._code.damaged()) & set(wanted))
        if missing or damaged:
            others = self._state.nimbuses()
            leader = self._leader()
            for tid in missing + damaged:
                sources = [a for a, info in sorted(others.items())
                           if a != self._address and tid in (info.get("packages") or ())]
                if leader in sources:
                    sources.remove(leader)
                    sources.insert(0, leader)
                if tid in damaged and not sources:
                    continue
                got = self._fetch(tid, sources)
                if got is None:
                    break           # this nimbus cannot store any (said once)
                if got:
                    self.unfound.discard(tid)
                elif tid not in self.unfound and tid in missing:
                    self.unfound.add(tid)
                    log.error("no live nimbus holds the package of topology %s (asked %s)",
                              tid, ", ".join(sources) or "none had it")
        self.unfound &= set(self._code.missing(self.unfound))
        self.publish()

    def _fetch(self, topology_id: str, sources: list[str]) -> bool | None:
        """Download ``topology_id``'s package from the first of ``sources`` that gives it and
        store it: True when stored, False when none gave it, None when it came but this
        nimbus cannot store it (logged once by the code store)."""
        from squall.daemon import packaging
        from squall.daemon.nimbus_client import NimbusClient
        for address in sources:
            client = NimbusClient(self._client_conf, addresses=[address], timeout=60,
                                  election_wait=0)
            try:
                files = {file: client.download(topology_id, file)
                         for file in packaging.PACKAGE_FILES}
            except (SquallError, OSError) as exc:
                log.warning("nimbus %s could not give the package of %s: %s", address,
                            topology_id, exc)
                continue
            finally:
                client.close()
            try:
                self._code.install_downloaded(topology_id, files.__getitem__)
            except SquallError:
                return None
            log.info("downloaded the package of %s from nimbus %s", topology_id, address)
            return True
        return False

    def wait_for(self, topology_id: str, conf: Mapping[str, Any],
                 stop: threading.Event | None = None) -> int:
        """Block until ``topology.min.replication.count`` nimbuses hold the package or
        ``topology.max.replication.wait.time.sec`` passed (-1: no limit); returns the
        holders."""
        wanted = int(conf.get("topology.min.replication.count") or 1)
        limit = float(conf.get("topology.max.replication.wait.time.sec") or 0)
        deadline = None if limit < 0 else time.monotonic() + limit
        self.publish()
        while True:
            count = self.holders(topology_id)
            if count >= wanted:
                return count
            if deadline is not None and time.monotonic() >= deadline:
                log.warning("the package of %s is on %d nimbus(es) of the %d wanted after "
                            "%.0f s; scheduling it anyway", topology_id, count, wanted, limit)
                return count
            if stop is not None and stop.wait(POLL_SECS):
                return count
            if stop is None:
                time.sleep(POLL_SECS)
