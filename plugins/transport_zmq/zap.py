"""A ZAP handler (ZeroMQ's authentication protocol, RFC 27) admitting only allowed CURVE keys.

With ``squall.transport.tls: true`` every bound zmq socket of a worker has one, on the
receiver's own context: a peer whose CURVE public key is not one of the cluster's is refused
during the handshake, so none of its messages reaches the receiver. A refused peer address is
logged once (a WARNING, :class:`squall.transports.refusals.RefusalLog`), later refusals from
it at DEBUG.

Threading: one thread per handler answers the requests; :meth:`ZapAllowList.stop` (any thread)
ends it within 0.2 s and closes its socket, which must happen before the context terminates.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

import zmq

from squall.transports.refusals import RefusalLog

__all__ = ["ZapAllowList"]

log = logging.getLogger(__name__)
ZAP_ENDPOINT = "inproc://zeromq.zap.01"
_POLL_MS = 200


class ZapAllowList:
    """Answers the ZAP requests of ``ctx``: CURVE clients whose raw 32-byte public key is in
    ``allowed`` pass, every other request is refused. ``where`` names the socket in logs."""

    def __init__(self, ctx: zmq.Context, allowed: Iterable[bytes], where: str) -> None:
        self._allowed = frozenset(allowed)
        self.refusals = RefusalLog(log, where)
        self._stop = threading.Event()
        self._sock = ctx.socket(zmq.REP)
        self._sock.linger = 0
        self._sock.bind(ZAP_ENDPOINT)
        self._thread = threading.Thread(target=self._run, name="squall-zmq-zap", daemon=True)
        self._thread.start()

    @property
    def where(self) -> str:
        return self.refusals.where

    @where.setter
    def where(self, where: str) -> None:
        self.refusals.where = where

    def _run(self) -> None:
        sock = self._sock
        try:
            while not self._stop.is_set():
                if not sock.poll(_POLL_MS):
                    continue
                request = sock.recv_multipart()
                sock.send_multipart(self._answer(request))
        except zmq.ZMQError as exc:
            if not self._stop.is_set():
                log.warning("ZAP handler of %s stopped: %s", self.where, exc)
        finally:
            sock.close(linger=0)

    def _answer(self, request: list[bytes]) -> list[bytes]:
        if len(request) < 6:
            return [b"1.0", b"", b"500", b"malformed ZAP request", b"", b""]
        version, request_id, _domain, address, _identity, mechanism = request[:6]
        key = request[6] if mechanism == b"CURVE" and len(request) > 6 else b""
        if key in self._allowed:
            return [version, request_id, b"200", b"OK", b"worker", b""]
        self.refusals.refused(address.decode(errors="replace") or "?",
                              f"its {mechanism.decode(errors='replace')} key is not one of "
                              "this cluster's workers")
        return [version, request_id, b"400", b"not a key of this cluster", b"", b""]

    def stop(self) -> None:
        """End the handler thread and close its socket (waits for it)."""
        self._stop.set()
        if threading.current_thread() is not self._thread:
            self._thread.join(2 * _POLL_MS / 1000 + 1)
