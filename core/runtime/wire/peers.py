"""Who may talk to a worker, and how often a misbehaving sender is logged.

A worker's transport port is reachable by anything on the network, so what arrives there is
judged before it changes anything: a control message (task 0) is taken only from a *peer*, a
worker of the same assignment, named by the ``who`` it carries (``host:port``);
:class:`PeerGate` decides that. Whatever is dropped (a control message from a stranger, a
frame that does not check out: see :mod:`.inbox`) is logged at most once per sender per
minute (:class:`LimitedLog`), so a flood of garbage cannot flood the log.

Everything here runs on the worker's loop thread.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

Key = tuple[str, int]
#: seconds between two log lines about the same sender
LOG_EVERY_SECS = 60.0


class LimitedLog:
    """Warnings keyed by sender, one per key per ``every`` seconds; the ones held back in
    between are counted and the count is added to the next line."""

    def __init__(self, logger: logging.Logger, every: float = LOG_EVERY_SECS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.logger = logger
        self.every = every
        self.clock = clock
        #: key -> (when last logged, lines held back since)
        self._last: dict[Any, tuple[float, int]] = {}

    def warning(self, key: Any, msg: str, *args: Any) -> bool:
        """Log ``msg % args`` unless ``key`` was logged less than ``every`` seconds ago;
        returns whether it was logged."""
        now = self.clock()
        last = self._last.get(key)
        if last is not None and now - last[0] < self.every:
            self._last[key] = (last[0], last[1] + 1)
            return False
        if len(self._last) > 4096:          # many senders: forget the old ones
            self._last = {k: v for k, v in self._last.items() if now - v[0] < self.every}
        held = last[1] if last is not None else 0
        if held:
            msg += " (%d more like it in the last minute)"
            args = (*args, held)
        self.logger.warning(msg, *args)
        self._last[key] = (now, 0)
        return True


def parse_who(who: Any) -> Key | None:
    """``host:port`` as a key; None if it is not one."""
    if who.__class__ is not str:
        return None
    host, sep, port = who.rpartition(":")
    if not sep or not host or not port.isdigit():
        return None
    return host, int(port)


class PeerGate:
    """Admits control messages from the workers of the assignment only.

    ``is_peer(key)`` says whether a ``(host, port)`` runs tasks of this topology now (the
    outbox's view of the assignment); ``log`` takes the warnings about strangers."""

    def __init__(self, is_peer: Callable[[Key], bool], log: LimitedLog, port: int) -> None:
        self.is_peer = is_peer
        self.log = log
        self.port = port
        #: control messages dropped because their sender is no peer
        self.dropped = 0
        #: ``who`` strings already read (most messages come from a few peers)
        self._keys: dict[Any, Key | None] = {}

    def admit(self, kind: str, who: Any) -> Key | None:
        """The sender's key when it is a peer; else None (dropped and logged, once per
        sender per minute)."""
        keys = self._keys
        if who.__class__ is str and who in keys:
            key = keys[who]
        else:
            key = parse_who(who)
            if key is not None and len(keys) < 1024:
                keys[who] = key
        if key is not None and self.is_peer(key):
            return key
        self.dropped += 1
        self.log.warning(("stranger", str(who)[:60]),
                         "worker %s dropped a %.20r control message from %.60r: not a worker of "
                         "this topology's assignment", self.port, kind, who)
        return None
