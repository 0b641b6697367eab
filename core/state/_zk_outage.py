"""How the ``zookeeper`` store gets back to a ZooKeeper that lost (or rolled back) its data.

A ZooKeeper server refuses a client that has seen a newer transaction id (zxid) than the
server holds ("client must try another server"), and kazoo keeps the last zxid it saw across
reconnections. After ZooKeeper is restarted with its data directory wiped, or restored from an
older snapshot, every store would be refused for good. :class:`OutageGuard` times each outage
of the store's connection; once it has lasted longer than the session timeout (the session
would have expired by then), it makes the next attempts say they have seen nothing (zxid 0).

What that changes: nothing, for a server that still has the session (a quorum lost for a
while, a restart that kept the data): it takes the session back as before, nothing is created
twice. A server that lost it answers "session expired", and the store goes through its
session-loss path (new session, root and ephemeral nodes re-created, watches re-set, reconnect
listeners called). The store asks :meth:`OutageGuard.take_reset` after reconnecting whether
that happened, to log one warning and to tell whether ZooKeeper's state went backwards.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reset:
    """One outage after which the client reconnected as having seen nothing."""

    seen_zxid: int     #: the newest zxid the client had seen before (0: unknown)
    down_for: float    #: seconds from the connection's loss to the reconnection


class OutageGuard:
    """Watches the connection state of one kazoo client (see the module docstring).

    :meth:`connection_changed` is kazoo's state listener (its connection thread; it never
    blocks); the reset itself runs on the guard's thread, started by :meth:`start` and ended by
    :meth:`close`. Thread-safe.
    """

    def __init__(self, limit: float, hosts: str) -> None:
        self._limit = limit
        self._hosts = hosts
        self._cond = threading.Condition()
        self._client: Any = None
        self._down_since: float | None = None
        self._reset_seen: int | None = None   # set when this outage's reset is done
        self._done: Reset | None = None        # a reset whose reconnection the store has not
        self._closed = False                    # handled yet
        self._thread: threading.Thread | None = None

    def start(self, client: Any) -> None:
        """Guard ``client`` (connected) from now on."""
        with self._cond:
            self._client = client
            if self._thread is not None or self._closed:
                return
            self._thread = threading.Thread(target=self._run, daemon=True,
                                            name="squall-zookeeper-outage")
        self._thread.start()

    def close(self) -> None:
        """Stop the guard's thread (waits for it briefly). Idempotent."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(5)

    def connection_changed(self, state: str) -> None:
        """kazoo's state listener: ``CONNECTED``, ``SUSPENDED`` or ``LOST``."""
        now = time.monotonic()
        with self._cond:
            if state == "CONNECTED":
                if self._down_since is not None and self._reset_seen is not None:
                    self._done = Reset(self._reset_seen, now - self._down_since)
                self._down_since, self._reset_seen = None, None
            elif self._down_since is None:
                self._down_since = now
            self._cond.notify_all()

    @property
    def resetting(self) -> bool:
        """Whether the current outage lasted long enough for a reset (a session expiry then
        is the expected outcome, not news)."""
        with self._cond:
            return self._reset_seen is not None

    def take_reset(self) -> Reset | None:
        """The reset behind the last reconnection, once (None when there was none)."""
        with self._cond:
            done, self._done = self._done, None
            return done

    def put_back(self, reset: Reset) -> None:
        """Hand a taken reset back (the store could not finish re-syncing; it retries)."""
        with self._cond:
            if self._done is None:
                self._done = reset

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                since = self._down_since
                if since is None or self._reset_seen is not None:
                    self._cond.wait()
                    continue
                left = since + self._limit - time.monotonic()
                if left > 0:
                    self._cond.wait(left)
                    continue
                self._reset_seen = self._reset(self._client, time.monotonic() - since)

    def _reset(self, client: Any, down_for: float) -> int:
        # while disconnected kazoo only reads last_zxid (for its next connect request); it
        # sets it again from the first reply once connected
        seen = int(getattr(client, "last_zxid", 0) or 0)
        client.last_zxid = 0
        log.info("no connection to ZooKeeper at %s for %.0fs (past the session timeout): "
                 "reconnecting as a client that has seen nothing (a ZooKeeper that lost its "
                 "data refuses one that has seen more)", self._hosts, down_for)
        return seen
