"""Nimbus leadership: one candidacy in the ``/leader-lock`` election (API.md section 9).

Only the leader accepts writes and schedules; a standby refuses writes with
:class:`NotLeaderError` naming the leader, which the gRPC service turns into
``FAILED_PRECONDITION`` and the client follows. :meth:`Leadership.run` is the election thread's
body; the other methods are read from any thread and block on the state store at most.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from squall.errors import SquallError, StateError
from squall.spi.state import LeaderElection

log = logging.getLogger(__name__)


class NotLeaderError(SquallError):
    """This nimbus is a standby; ``leader`` is the leader's ``host:port`` ('' if unknown)."""

    def __init__(self, leader: str) -> None:
        self.leader = leader
        super().__init__(f"this nimbus is not the leader; the leader is {leader or 'unknown'}")


class Leadership:
    """The candidacy of the nimbus at ``address`` (``host:port``) in ``election``."""

    def __init__(self, election: LeaderElection, address: str) -> None:
        self._election = election
        self._address = address

    @property
    def is_leader(self) -> bool:
        """Whether this nimbus leads now (False after the session that elected it was lost)."""
        return self._election.is_leader

    def leader_address(self) -> str:
        """The leader's ``host:port``; '' when there is none or the store cannot say."""
        try:
            found = self._election.contenders()
        except StateError:
            return ""
        return found[0] if found else ""

    def require(self) -> None:
        """Return when this nimbus leads; raise :class:`NotLeaderError` naming the leader
        otherwise."""
        if not self.is_leader:
            raise NotLeaderError(self.leader_address())

    def run(self, stop: threading.Event, on_lead: Callable[[], None]) -> None:
        """Contend until ``stop`` is set or :meth:`cancel` is called (the election thread).
        ``on_lead`` is called each time this nimbus becomes the leader; a lost session makes
        it contend again, a failing store is retried every second."""
        def lead() -> None:
            log.info("nimbus %s is the leader", self._address)
            on_lead()
            while not stop.is_set() and self._election.is_leader:
                stop.wait(0.2)
            log.info("nimbus %s is no longer the leader", self._address)

        while not stop.is_set():
            try:
                if not self._election.run(lead):
                    return
            except StateError as exc:
                log.warning("leader election failed: %s; retrying", exc)
                stop.wait(1.0)

    def cancel(self) -> None:
        """Withdraw from the election (a waiting :meth:`run` returns). Idempotent."""
        self._election.cancel()
