"""Who may send to a grpc receiver under ``squall.transport.tls`` (API.md section 14).

grpc decides TLS client authentication inside its C core: a handshake it refuses reaches no
Python code, so a stranger would be dropped without a word from squall. A receiver of the
cluster therefore serves TLS with its own certificate only (senders still check it against
the cluster's CA) and authenticates every stream itself, with
:mod:`squall.security.peer_proof`, before it takes any batch from it:

* :class:`MembershipCheck` (receiver): the stream's headers carry a fresh challenge
  (``squall-challenge``, hex); the stream's first message must be the sender's proof (its
  certificate chain and its key's signature of the challenge, ``Batch.member_cert`` /
  ``member_proof``). A stream without a valid one is ended (``UNAUTHENTICATED``) before any
  of its batches reaches the inbox, and the refusal is logged once per peer address
  (:class:`squall.transports.refusals.RefusalLog`). A stream that sends nothing for
  ``_PROOF_WAIT`` seconds is refused too, so strangers cannot hold the server's threads.
* :class:`StreamProof` (sender, one per stream): the proof to open the stream with, once the
  receiver's headers are in; nothing when they carry no challenge (a receiver without
  ``squall.transport.tls``).

Threading: :meth:`MembershipCheck.admit` runs on the stream's server thread and blocks until
the first message (or the deadline); :class:`StreamProof` is filled by the sender's stream
thread and read by grpc's request thread.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import grpc

from squall.plugins.transport_grpc._proto import transport_pb2 as pb
from squall.security.peer_proof import Prover, Verifier, new_challenge
from squall.transports.refusals import RefusalLog, host_of

__all__ = ["CHALLENGE_KEY", "MembershipCheck", "StreamProof"]

log = logging.getLogger("squall.plugins.transport_grpc.transport")   # the transport's log

#: header of a receiver's stream carrying its challenge (hex)
CHALLENGE_KEY = "squall-challenge"
#: how long a receiver waits for a new stream's proof (seconds)
_PROOF_WAIT = 10.0


class MembershipCheck:
    """A receiver's check of each stream's proof against ``verifier``'s CA; ``where`` names
    the receiver in log lines (``refusals.where`` may change it later)."""

    def __init__(self, verifier: Verifier, where: str) -> None:
        self._verifier = verifier
        self.refusals = RefusalLog(log, where)

    @staticmethod
    def challenge() -> bytes:
        """A fresh challenge for one stream (send it as the ``CHALLENGE_KEY`` header)."""
        return new_challenge()

    def admit(self, requests: Iterator[pb.Batch], context: grpc.ServicerContext,
              challenge: bytes) -> bool:
        """Read the stream's first message from ``requests`` and check it against
        ``challenge``: True when it is a member's proof (the stream may go on), False when
        the stream is refused (logged) or ended before it said anything."""
        timed_out = threading.Event()

        def expire() -> None:
            timed_out.set()
            context.cancel()

        timer = threading.Timer(_PROOF_WAIT, expire)
        timer.daemon = True
        timer.start()
        try:
            first: pb.Batch | None = next(requests, None)
        except Exception:   # the call ended (cancelled, peer gone)
            first = None
        finally:
            timer.cancel()
        if first is None:
            if timed_out.is_set():
                self.refusals.refused(host_of(context.peer() or ""),
                                      f"it sent no proof of membership in {_PROOF_WAIT:g} s")
            return False
        reason = self._verifier.check(first.member_cert, first.member_proof, challenge)
        if reason is None:
            return True
        self.refusals.refused(host_of(context.peer() or ""), reason)
        return False


class StreamProof:
    """What one sender stream opens with: :meth:`headers` (the stream thread, once the
    receiver's headers are in or the call ended) settles it, :meth:`message` (grpc's request
    thread) waits for it."""

    def __init__(self, prover: Prover) -> None:
        self._prover = prover
        self._ready = threading.Event()
        self._message: pb.Batch | None = None

    def headers(self, headers: Mapping[str, Any] | None) -> None:
        """The receiver's headers (None when the call ended without them)."""
        try:
            text = (headers or {}).get(CHALLENGE_KEY)
            if text:
                challenge = bytes.fromhex(str(text))
                self._message = pb.Batch(member_cert=self._prover.chain,
                                         member_proof=self._prover.answer(challenge))
        except ValueError:              # not hex: not a squall receiver, nothing to prove
            pass
        finally:
            self._ready.set()

    def message(self) -> pb.Batch | None:
        """The proof to send first, None when there is none to send; waits until
        :meth:`headers` was called (the sender's stream thread always calls it once the
        call's headers are in or the call ended, the channel's closing included)."""
        self._ready.wait()
        return self._message
