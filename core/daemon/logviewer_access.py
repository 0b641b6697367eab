"""Who may read which log on a logviewer (API.md section 14): the UI's rules, for files.

With ``nimbus.authentication: none`` everyone reads everything, as before. Otherwise a request
names its user as the UI's API calls do, with ``Authorization: Bearer <token>`` (checked by the
UI's own :class:`squall.security.http_access.Access`), or, for a worker's logs, with a link the UI signed
for a user it authenticated (:mod:`squall.security.log_links`): a browser following a link
cannot send the header. A worker's logs (``log``, ``out``, ``metrics``, ``events``) are for the
topology's owner and ``nimbus.admins``, as the topology is on nimbus and in the UI; daemon logs
are for admins only, since every user's topologies appear in them.

The owner comes from ``/storms`` through ``owner_of`` and is remembered (a topology id's owner
never changes), so an owner keeps reading a killed topology's logs on a logviewer that served
them before, until the supervisor deletes them; logs of a topology whose owner is unknown are
for admins only. Called on the logviewer's request threads; ``owner_of`` may block on the
state store.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from squall.security.log_links import signed_user
from squall.security.settings import admins
from squall.security.http_access import Access, Forbidden, Unauthorized, User

__all__ = ["Forbidden", "LogAccess", "Unauthorized"]

#: topology owners remembered; past this the memory starts over (ids are never reused)
OWNERS_KEPT = 1024


class LogAccess:
    """Authorization of a logviewer's requests, from the supervisor's ``conf``;
    ``owner_of(topology_id)`` is the ``owner`` of ``/storms/<id>`` (None when there is none)."""

    def __init__(self, conf: Mapping[str, Any], owner_of: Callable[[str], str | None]) -> None:
        self._conf = dict(conf)
        self._access = Access(self._conf)
        self._admins = admins(self._conf)
        self._owner_of = owner_of
        self._owners: dict[str, str] = {}
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self._access.enabled

    def check_worker_log(self, authorization: str | None, query: Mapping[str, str],
                         topology_id: str) -> None:
        """Allow a request for a log of ``topology_id`` or raise Unauthorized (no header and
        no valid signed link in ``query``; 401) or Forbidden (the user does not own it; 403).
        May raise the state store's SquallError while it reads the owner."""
        if not self.enabled:
            return
        name = signed_user(self._conf, query, topology_id, time.time())
        if name is not None:
            user = User(name, None, admin=name in self._admins)
        else:
            user = self._access.user(authorization)
        if user.admin:
            return
        if not user.sees(self._owner(topology_id)):
            raise Forbidden(f"user {user.name!r} may not read the logs of topology "
                            f"{topology_id!r}: it belongs to another user")

    def readable_topologies(self, authorization: str | None,
                            topology_ids: set[str]) -> set[str]:
        """Those of ``topology_ids`` whose logs the caller may read (a listing, ``/list``);
        Unauthorized without a valid token (even for no ids: the header is checked first).
        May raise the state store's SquallError while it reads an owner."""
        if not self.enabled:
            return set(topology_ids)
        user = self._access.user(authorization)
        if user.admin:
            return set(topology_ids)
        return {tid for tid in topology_ids if user.sees(self._owner(tid))}

    def check_daemon_log(self, authorization: str | None) -> None:
        """Allow a request for a daemon's log (admins only) or raise Unauthorized or
        Forbidden."""
        if not self.enabled:
            return
        user = self._access.user(authorization)
        if not user.admin:
            raise Forbidden(f"user {user.name!r} may not read daemon logs: they are for "
                            f"nimbus.admins")

    def _owner(self, topology_id: str) -> str | None:
        with self._lock:
            known = self._owners.get(topology_id)
        if known is not None:
            return known
        owner = self._owner_of(topology_id)
        if owner:
            with self._lock:
                if len(self._owners) >= OWNERS_KEPT:
                    self._owners.clear()
                self._owners[topology_id] = owner
        return owner or None
