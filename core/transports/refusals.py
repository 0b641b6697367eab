"""The log line of a transport receiver that refused a peer (``squall.transport.tls``).

Every transport that authenticates its peers (API.md section 14) says the same thing when it
refuses one: ``<where> refused a peer at <address>: <reason> (...)``, a WARNING the first time
for an address, DEBUG for later refusals of it (a stranger that keeps redialing does not fill
the log). A peer whose address could not be read (``?``: its connection closed first, as a
redialing stranger's may) gets a WARNING only if no refusal was logged before (it is most
likely one already named). The zmq transport's ZAP handler, the grpc receiver and the nng
listener use it.

Threading: :meth:`RefusalLog.refused` may be called from any thread (nng's and ZeroMQ's own
threads included); it never blocks on anything but a short lock and the logging call.
"""
from __future__ import annotations

import logging
import threading

from squall.security import FirstSeen

__all__ = ["RefusalLog", "host_of"]

#: the address of a peer whose address could not be read
UNKNOWN = "?"


def host_of(peer: str) -> str:
    """The host part of a peer address as transports name it: ``ipv4:127.0.0.1:5555`` (grpc),
    ``127.0.0.1:5555`` (nng), ``ipv6:[::1]:5555`` or ``[::1]:5555`` give ``127.0.0.1`` and
    ``::1``; anything else is returned as it is (``?`` when empty).

    >>> host_of("ipv4:127.0.0.1:50051"), host_of("[::1]:7"), host_of("10.0.0.2")
    ('127.0.0.1', '::1', '10.0.0.2')
    """
    for scheme in ("ipv4:", "ipv6:"):
        if peer.startswith(scheme):
            peer = peer[len(scheme):]
    if peer.startswith("["):
        return peer[1:].split("]", 1)[0]
    host, sep, port = peer.rpartition(":")
    return host if sep and host and port.isdigit() else (peer or "?")


class RefusalLog:
    """Logs refused peers through ``logger``, once per address at WARNING; ``where`` (e.g.
    ``"grpc receiver on port 6700"``) starts every line and may be changed later."""

    def __init__(self, logger: logging.Logger, where: str) -> None:
        self.logger, self.where = logger, where
        self.count = 0
        self._refused = FirstSeen()
        self._lock = threading.Lock()
        self._warned = False

    def refused(self, address: str, reason: str) -> None:
        """Count one refusal of the peer at ``address`` (its host, see :func:`host_of`) and
        log ``reason`` (what it lacked, e.g. ``"it presented no certificate"``)."""
        with self._lock:
            self.count += 1
            named = self._warned
            self._warned = True
        if self._refused.first(address) and not (address == UNKNOWN and named):
            self.logger.warning("%s refused a peer at %s: %s (its tuples are dropped; further "
                                "refusals of this peer are not logged)",
                                self.where, address, reason)
        else:
            self.logger.debug("%s refused %s again: %s", self.where, address, reason)
