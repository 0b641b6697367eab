"""Who may see and change which topology on nimbus (API.md section 14).

With ``nimbus.authentication`` off every caller may do everything, as before. With it on, the
user the gRPC layer authenticated (:func:`squall.security.grpc_auth.current_user`) owns the
topologies it submits (``owner`` in ``/storms``); a user of ``nimbus.admins`` may see and
change every topology and download every package (supervisors and standby nimbuses call with
an admin's credentials); any other user sees and changes only its own topologies. Refusals
are :class:`~squall.errors.AuthorizationError`; a topology the caller may not see is reported
as not running, listing only the caller's own.

Called on gRPC handler threads; reads ``/storms`` through the cluster state.
"""
from __future__ import annotations

import getpass
import logging
from collections.abc import Mapping
from typing import Any

from squall.daemon.nimbus_info import not_running
from squall.errors import AuthorizationError
from squall.security.settings import admins, authentication_mode
from squall.state.cluster_state import ClusterState

log = logging.getLogger(__name__)


class TopologyAccess:
    """Authorization of nimbus's API calls over the cluster ``state``."""

    def __init__(self, conf: Mapping[str, Any], state: ClusterState) -> None:
        self._enabled = authentication_mode(conf) != "none"
        self._admins = admins(conf)
        self._state = state

    @property
    def enabled(self) -> bool:
        return self._enabled

    def is_admin(self, user: str | None) -> bool:
        return not self._enabled or (user is not None and user in self._admins)

    def owner_for_submit(self, user: str | None) -> str:
        """The ``owner`` recorded for a topology ``user`` submits (the OS user running nimbus
        when authentication is off)."""
        if self._enabled:
            if not user:
                raise AuthorizationError("an unauthenticated caller cannot submit")
            return user
        try:
            return getpass.getuser()
        except Exception:  # no user name in a bare container
            return ""

    def may_see(self, user: str | None, storm: Mapping[str, Any]) -> bool:
        """Whether ``user`` may see (and change) the topology whose ``/storms`` record is
        ``storm``."""
        return self.is_admin(user) or (user is not None and storm.get("owner") == user)

    def check(self, user: str | None, name: str, action: str) -> None:
        """Allow ``user`` to ``action`` (``kill``, ``rebalance``, ...) the topology named
        ``name``, or raise: NotAliveError when it does not run or ``user`` may not see it,
        AuthorizationError when ``user`` sees it only by name but does not own it."""
        if self.is_admin(user):
            return
        # one in its kill wait too: its owner may kill it again (to change the wait)
        tid = self._state.find_topology_id(name, killed=True)
        storm = self._state.get_storm(tid) if tid else None
        if storm is None:
            self._not_running(user, name)
        assert storm is not None
        if storm.get("owner") != user:
            log.info("refused %s of topology %s to user %s (owner %s)", action, name, user,
                     storm.get("owner"))
            raise AuthorizationError(f"user {user!r} may not {action} topology {name!r}: "
                                     "it belongs to another user")

    def check_topology_id(self, user: str | None, topology_id: str, action: str) -> None:
        """Like :meth:`check` for a topology id (package downloads)."""
        if self.is_admin(user):
            return
        storm = self._state.get_storm(topology_id)
        if storm is None or storm.get("owner") != user:
            raise AuthorizationError(f"user {user!r} may not {action} topology "
                                     f"{topology_id!r}")

    def _not_running(self, user: str | None, name: str) -> None:
        raise not_running(name, [b for b in self._state.storms().values()
                                 if self.may_see(user, b)])
