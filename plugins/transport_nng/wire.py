"""The nng transport's wire headers, and messages moved through pynng's cffi layer.

``transport.py`` holds the protocol (sessions, windows, acks); this module holds the bytes of
its three headers, the split of a merged data message into its batches, and the three calls
that read or write an nng message with fewer C calls than pynng's ``Socket`` methods make
(each C call through cffi releases and retakes the GIL).
"""
from __future__ import annotations

import struct
from typing import Any

import pynng
from pynng._nng import ffi as _ffi, lib as _lib
from pynng.exceptions import check_err

from squall.transports.framing import SINGLE_HEAD, FrameError, decode, frame_length, single_task

#: the largest message a receiver accepts
MAX_MESSAGE = 256 << 20
#: data message header: kind, session, sequence number, lowest unacknowledged sequence number
_DATA = struct.Struct("!B8sQQ")
#: merged data message header: kind, session, sequence number of its first batch, lowest
#: unacknowledged sequence number, number of batches (their frames follow back to back)
_MERGED = struct.Struct("!B8sQQI")
#: acknowledgement: kind, session, highest sequence number delivered
_ACK = struct.Struct("!B8sQ")
_KIND_DATA, _KIND_MERGED, _KIND_ACK = ord("S"), ord("M"), ord("A")
_KIND_DATA_BYTE, _KIND_MERGED_BYTE = b"S", b"M"
#: bytes before the payload of a data message holding a one-message frame
_HEADS = _DATA.size + SINGLE_HEAD


def _recv_raw(sock: pynng.Socket, block: bool) -> tuple[bytes, int, Any]:
    """One message as ``(data, pipe id, decoded)``, in fewer C calls than ``recv_msg``.

    Workers send one-message frames, and those are copied straight out of nng's buffer:
    for a data message holding one, ``data`` is just the headers and ``decoded`` is its
    ``(task id, payload)``; for a merged data message whose frames are all valid, ``data``
    is its header and ``decoded`` holds each frame's messages, one list per frame.
    Otherwise ``data`` is the whole message and ``decoded`` is None."""
    msg_p = _ffi.new("nng_msg **")
    check_err(_lib.nng_recvmsg(sock.socket, msg_p, 0 if block else _lib.NNG_FLAG_NONBLOCK))
    msg = msg_p[0]
    try:
        size = _lib.nng_msg_len(msg)
        if not size:
            return b"", _lib.nng_msg_get_pipe(msg).id, None
        body = _ffi.cast("char *", _lib.nng_msg_body(msg))
        pipe = _lib.nng_msg_get_pipe(msg).id
        kind = body[0]
        if size >= _HEADS and kind == _KIND_DATA_BYTE:
            head = _ffi.buffer(body, _HEADS)[:]
            task = single_task(head[_DATA.size:], size - _DATA.size)
            if task is not None:
                return head, pipe, (task, _ffi.buffer(body + _HEADS, size - _HEADS)[:])
        elif size >= _MERGED.size and kind == _KIND_MERGED_BYTE:
            buf = _ffi.buffer(body, size)
            head = buf[:_MERGED.size]
            try:
                return head, pipe, _frames(buf, size, _MERGED.unpack(head)[4])
            except FrameError:      # the caller decodes the copy again and logs why
                pass
        return _ffi.buffer(body, size)[:], pipe, None
    finally:
        _lib.nng_msg_free(msg)


def _frames(buf: Any, size: int, count: int) -> list[list[tuple[int, bytes]]]:
    """The messages of each of the ``count`` frames that fill a merged message's ``buf``
    (``bytes``, or a cffi buffer over nng's) after its header, one list per frame, the
    payloads of one-message frames copied once; FrameError unless they fill it exactly."""
    out = []
    pos = _MERGED.size
    for _ in range(count):
        head = buf[pos:pos + SINGLE_HEAD]
        end = pos + frame_length(head)
        if end > size:
            raise FrameError(f"frame of {end - pos} bytes runs past the end ({size - pos} left)")
        task = single_task(head, end - pos)
        if task is not None:
            out.append([(task, buf[pos + SINGLE_HEAD:end])])
        else:
            out.append(decode(buf[pos:end]))
        pos = end
    if pos != size:
        raise FrameError(f"{size - pos} bytes after {count} frames")
    return out


def _send_parts(sock: pynng.Socket, parts: tuple[bytes, ...]) -> None:
    """Send ``parts`` as one message, copying them straight into nng's buffer; waits up to
    the socket's send timeout for room (then raises :class:`pynng.Timeout`)."""
    size = sum(map(len, parts))
    msg_p = _ffi.new("nng_msg **")
    check_err(_lib.nng_msg_alloc(msg_p, size))
    msg = msg_p[0]
    body, pos = _ffi.cast("char *", _lib.nng_msg_body(msg)), 0
    for part in parts:
        _ffi.memmove(body + pos, part, len(part))
        pos += len(part)
    rv = _lib.nng_sendmsg(sock.socket, msg, 0)
    if rv:                              # nng did not take the message: it is still ours
        _lib.nng_msg_free(msg)
        check_err(rv)


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
