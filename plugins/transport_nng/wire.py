"""The nng transport's wire headers, and messages moved through pynng's cffi layer.

``transport.py`` holds the protocol (sessions, windows, acks); this module holds the bytes of
its two headers and the three calls that read or write an nng message with fewer C calls than
pynng's ``Socket`` methods make (each C call through cffi releases and retakes the GIL).
"""
from __future__ import annotations

import struct

import pynng
from pynng._nng import ffi as _ffi, lib as _lib
from pynng.exceptions import check_err

from squall.runtime.framing import SINGLE_HEAD, single_task

#: data message header: kind, session, sequence number, lowest unacknowledged sequence number
_DATA = struct.Struct("!B8sQQ")
#: acknowledgement: kind, session, highest sequence number delivered
_ACK = struct.Struct("!B8sQ")
_KIND_DATA, _KIND_ACK = ord("S"), ord("A")
_KIND_DATA_BYTE = b"S"
#: bytes before the payload of a data message holding a one-message frame
_HEADS = _DATA.size + SINGLE_HEAD


def _recv_raw(sock: pynng.Socket, block: bool
              ) -> tuple[bytes, int, tuple[int, bytes] | None]:
    """One message as ``(data, pipe id, one)``, in fewer C calls than ``recv_msg``.

    For a data message holding a one-message frame (what workers send) only the headers are
    copied into ``data`` and ``one`` is ``(task id, payload)``, the payload copied straight out
    of nng's buffer; otherwise ``data`` is the whole message and ``one`` is None."""
    msg_p = _ffi.new("nng_msg **")
    check_err(_lib.nng_recvmsg(sock.socket, msg_p, 0 if block else _lib.NNG_FLAG_NONBLOCK))
    msg = msg_p[0]
    try:
        size = _lib.nng_msg_len(msg)
        if not size:
            return b"", _lib.nng_msg_get_pipe(msg).id, None
        body = _ffi.cast("char *", _lib.nng_msg_body(msg))
        pipe = _lib.nng_msg_get_pipe(msg).id
        if size >= _HEADS and body[0] == _KIND_DATA_BYTE:
            head = _ffi.buffer(body, _HEADS)[:]
            task = single_task(head[_DATA.size:], size - _DATA.size)
            if task is not None:
                return head, pipe, (task, _ffi.buffer(body + _HEADS, size - _HEADS)[:])
        return _ffi.buffer(body, size)[:], pipe, None
    finally:
        _lib.nng_msg_free(msg)


def _send_parts(sock: pynng.Socket, parts: tuple[bytes, ...]) -> bool:
    """Send ``parts`` as one message, non-blocking, copying them straight into nng's buffer;
    False if nng cannot take it now."""
    size = sum(map(len, parts))
    msg_p = _ffi.new("nng_msg **")
    check_err(_lib.nng_msg_alloc(msg_p, size))
    msg = msg_p[0]
    body, pos = _ffi.cast("char *", _lib.nng_msg_body(msg)), 0
    for part in parts:
        _ffi.memmove(body + pos, part, len(part))
        pos += len(part)
    rv = _lib.nng_sendmsg(sock.socket, msg, _lib.NNG_FLAG_NONBLOCK)
    if rv:                              # nng did not take the message: it is still ours
        _lib.nng_msg_free(msg)
        if rv == _lib.NNG_EAGAIN:
            return False
        check_err(rv)
    return True


def _send_raw(sock: pynng.Socket, pipe: int, data: bytes) -> None:
    """Send ``data`` to one pipe, non-blocking; dropped if nng cannot take it now."""
    msg_p = _ffi.new("nng_msg **")
    if _lib.nng_msg_alloc(msg_p, 0):
        return
    msg = msg_p[0]
    target = _ffi.new("nng_pipe *")
    target.id = pipe
    if (_lib.nng_msg_append(msg, data, len(data))
            or _lib.nng_msg_set_pipe(msg, target[0])
            or _lib.nng_sendmsg(sock.socket, msg, _lib.NNG_FLAG_NONBLOCK)):
        _lib.nng_msg_free(msg)
