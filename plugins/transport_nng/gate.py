"""The nng listener's admission of peers under ``squall.transport.tls`` (API.md section 14).

nng gives Python no word of a TLS handshake that fails. So a listener of the cluster does not
let the handshake fail: it asks every peer for a certificate (mbedTLS's *optional* client
authentication: the certificate is requested and checked against the cluster's CA, and the
outcome is recorded instead of ending the handshake), and :class:`MembershipGate`, nng's
pre-connect pipe callback, reads that outcome (nng's ``tls-verified`` pipe option) before the
pipe joins the socket. A pipe whose peer presented no certificate, or one the CA did not sign,
is closed there: nng never adds it to the socket, so not one message of that peer reaches
``recv``, and the refusal is logged once per peer address
(:class:`squall.transports.refusals.RefusalLog`). The gate fails closed: a pipe whose outcome
cannot be read is refused too.

Threading: :meth:`MembershipGate.admit` runs on nng's own thread, once per new pipe, under
pynng's pipe lock; it calls nng and the log, nothing that waits on squall's threads.
"""
from __future__ import annotations

import logging

import pynng
from pynng._nng import ffi as _ffi, lib as _lib

from squall.transports.refusals import RefusalLog, host_of

__all__ = ["MembershipGate"]

log = logging.getLogger("squall.plugins.transport_nng.transport")   # the transport's log

_VERIFIED = b"tls-verified"
_PEER_CN = b"tls-peer-cn"


def _verified(pipe: pynng.Pipe) -> bool:
    """nng's verdict on the peer's certificate (False when it cannot be read)."""
    out = _ffi.new("bool *")
    return _lib.nng_pipe_get_bool(pipe.pipe, _VERIFIED, out) == 0 and bool(out[0])


def _peer_name(pipe: pynng.Pipe) -> str | None:
    """The common name of the certificate the peer presented; None when it presented none."""
    out = _ffi.new("char **")
    if _lib.nng_pipe_get_string(pipe.pipe, _PEER_CN, out) != 0 or out[0] == _ffi.NULL:
        return None
    try:
        return str(_ffi.string(out[0]).decode(errors="replace"))
    finally:
        _lib.nng_strfree(out[0])


class MembershipGate:
    """Admits to a listening socket only the pipes whose peer's certificate nng verified
    against the cluster's CA; ``where`` names the receiver in log lines (``refusals.where``
    may change it later)."""

    def __init__(self, where: str) -> None:
        self.refusals = RefusalLog(log, where)

    def admit(self, pipe: pynng.Pipe) -> None:
        """nng's pre-connect callback: close ``pipe`` unless its peer is a member."""
        try:
            if _verified(pipe):
                return
            name = _peer_name(pipe)
            reason = ("it presented no certificate" if name is None else
                      f"its certificate (CN={name}) is not signed by this cluster's CA")
        except Exception as exc:    # fail closed: a pipe we cannot judge is not admitted
            reason = f"its certificate could not be checked ({exc})"
        try:
            address = host_of(str(pipe.remote_address))
        except Exception:           # (pynng.NNGException, or a pipe already gone)
            address = "?"
        try:
            pipe.close()
        except pynng.NNGException:  # gone already: nothing of it reaches the socket either
            pass
        self.refusals.refused(address, reason)
