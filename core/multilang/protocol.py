"""Storm's multi-lang protocol: how messages are framed and what the worker sends.

Two encodings, chosen by ``topology.multilang.serializer``:

* ``json`` (Storm's own): each message is one JSON value followed by a line ``end``
  (``{...}\\nend\\n``); a JSON text never holds a raw newline inside a string, so a line
  ``end`` only ever closes a message. Lines may end with ``\\r\\n`` too (as Storm's
  ``readLine`` reads them).
* ``msgpack`` (as pystorm offers it): each message is one msgpack value, back to back, with
  no terminator.

A :class:`Codec` encodes one message to bytes and decodes a stream of bytes into messages,
however the stream was cut into reads. Messages are dicts (commands, tuples, the handshake)
except the worker's answer to an emit, which is a list of task ids.

The worker's side of the conversation, as Storm's ``ShellBolt``/``ShellSpout`` speak it:

* handshake: ``{"conf", "pidDir", "context"}``, answered by ``{"pid": N}`` (the subprocess
  also creates an empty file named N in ``pidDir``);
* a bolt gets tuples ``{"id", "comp", "stream", "task", "tuple"}``, heartbeats (stream
  ``__heartbeat``, task -1, answered by ``sync``) and tick tuples (``__system``/``__tick``);
* a spout gets ``{"command": "next" | "ack" | "fail" | "activate" | "deactivate"}`` (ack and
  fail with ``"id"``), each answered by ``sync`` once the subprocess is done with it;
* from the subprocess: ``emit`` (``tuple``, optional ``stream``, ``anchors``, ``id``,
  ``task``, ``need_task_ids`` — true when absent), ``ack``, ``fail``, ``log`` (``msg``,
  ``level`` 0–4), ``error`` (``msg``), ``sync``, ``metrics`` (``name``, ``params``).
"""
from __future__ import annotations

import json
import logging
from typing import Any, Protocol

from squall.api.context import TopologyContext
from squall.errors import ConfigError, MultilangError

#: the stream and task of the heartbeat tuples a bolt's subprocess answers with ``sync``
HEARTBEAT_STREAM = "__heartbeat"
HEARTBEAT_TASK = -1
#: multi-lang log levels (0 trace ... 4 error) -> Python logging levels
LOG_LEVELS = {0: 5, 1: logging.DEBUG, 2: logging.INFO, 3: logging.WARNING, 4: logging.ERROR}
_END = b"\nend\n"


class Codec(Protocol):
    """One encoding of the protocol; one instance per subprocess (decoding keeps state)."""

    name: str

    def encode(self, message: Any) -> bytes:
        """The bytes of one message; TypeError/ValueError for a value it cannot hold."""

    def feed(self, data: bytes) -> list[Any]:
        """The messages completed by ``data`` (the next bytes read); MultilangError for bytes
        that are not a message (its decoder's own errors included), or a message longer
        than ``MAX_MESSAGE_BYTES``."""

    def pending(self) -> int:
        """How many bytes of a message not complete yet it holds (for a timeout's reason)."""

    def encode_tuple(self, tup_id: str, component: str, stream: str, task: int,
                     values: Any) -> bytes:
        """The bytes of :func:`tuple_message` (``tup_id`` holds no character JSON escapes)."""


#: the longest message a subprocess may send (a longer one is a broken protocol: the
#: subprocess is killed and restarted), so a stream without terminators cannot grow without end
MAX_MESSAGE_BYTES = 256 << 20
#: what json.loads raises for bytes that are no JSON value (a list nested past the
#: interpreter's recursion limit: RecursionError)
_JSON_ERRORS = (ValueError, TypeError, RecursionError)


class JsonCodec:
    """Storm's JSON encoding: a JSON value, then a line ``end``."""

    name = "json"

    def __init__(self) -> None:
        self._buf = b""
        #: reads of a message not complete yet (joined once its terminator comes: joining at
        #: every read made a 40 MB message cost 12 s), and their length
        self._parts: list[bytes] = []
        self._parts_len = 0
        self._dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
        #: for a message holding a lone surrogate (a string a subprocess sent as "\ud800"),
        #: which UTF-8 cannot hold and JSON's \u escapes can
        self._ascii_dumps = json.JSONEncoder(separators=(",", ":")).encode
        self._loads = json.loads
        self._heads: dict[tuple[str, str], str] = {}
        #: the subprocess ends its lines with \r\n (seen in a read that completed no
        #: message: the \n path pays nothing for it), and a \r a read ended with
        self._crlf = False
        self._cr = False

    def encode(self, message: Any) -> bytes:
        try:
            return self._dumps(message).encode() + _END
        except UnicodeEncodeError:      # a lone surrogate: as an escape
            return self._ascii_dumps(message).encode() + _END

    def pending(self) -> int:
        if self._parts:
            return self._parts_len + self._cr
        return len(self._buf) + self._cr if self._buf.strip() or self._cr else 0

    def feed(self, data: bytes) -> list[Any]:
        if self._crlf:
            data = self._lf(data)
        if self._buf or self._parts:
            # a terminator in this read, or straddling the end of what came before?
            if _END not in self._tail() + data[:len(_END) - 1] and _END not in data:
                if not self._parts:
                    self._parts, self._parts_len = [self._buf], len(self._buf)
                    self._buf = b""
                self._parts.append(data)
                self._parts_len += len(data)
                if self._parts_len > MAX_MESSAGE_BYTES:
                    raise MultilangError(f"a message longer than {MAX_MESSAGE_BYTES} bytes "
                                         "(no end line)")
                return [] if self._crlf or b"\r" not in data else self._to_crlf()
            if self._parts:
                self._buf = b"".join(self._parts)
                self._parts, self._parts_len = [], 0
        buf = self._buf + data if self._buf else data
        if buf.startswith(b"end\n"):       # a message that is only its terminator line
            buf = b"\n" + buf
        parts = buf.split(_END)
        self._buf = parts.pop()
        if not parts:
            return [] if self._crlf or b"\r" not in data else self._to_crlf()
        try:        # one decode for the whole read (a list of the messages)
            out: list[Any] = self._loads(b"[" + b",".join(parts) + b"]")
        except _JSON_ERRORS:
            out = self._each([p for p in parts if p.strip()])
        else:
            if len(out) != len(parts):  # a part holding two values, or a blank one
                out = self._each([p for p in parts if p.strip()])
        return out

    def _to_crlf(self) -> list[Any]:
        r"""From now on, read \r\n line ends as \n (what it holds so far too): a read
        that completed no message had a \r (JSON allows one only as whitespace)."""
        held = b"".join(self._parts) if self._parts else self._buf
        self._buf, self._parts, self._parts_len = b"", [], 0
        self._crlf = True
        return self.feed(held)

    def _lf(self, data: bytes) -> bytes:
        r"""``data`` with its \r\n as \n (a \r at its end waits for the next read)."""
        if self._cr:
            data = b"\r" + data
            self._cr = False
        if data.endswith(b"\r"):
            data = data[:-1]
            self._cr = True
        return data.replace(b"\r\n", b"\n")

    def _tail(self) -> bytes:
        """The last ``len(_END) - 1`` bytes of what waits for its terminator (over as many
        reads as it takes: a read may be a byte)."""
        need = len(_END) - 1
        out = b""
        for part in reversed(self._parts or [self._buf]):
            out = part + out
            if len(out) >= need:
                break
        return out[-need:]

    def _each(self, parts: list[bytes]) -> list[Any]:
        out = []
        for part in parts:
            try:
                out.append(self._loads(part))
            except _JSON_ERRORS as exc:
                raise MultilangError(f"not a JSON message: {part[:200]!r} "
                                     f"({exc.__class__.__name__}: {exc})") from exc
        return out

    def encode_tuple(self, tup_id: str, component: str, stream: str, task: int,
                     values: Any) -> bytes:
        """:func:`tuple_message` encoded, without building the dict."""
        head = self._heads.get((component, stream))
        if head is None:
            dumps = self._dumps
            head = self._heads[(component, stream)] = \
                f'","comp":{dumps(component)},"stream":{dumps(stream)},"task":'
        try:
            return f'{{"id":"{tup_id}{head}{task},"tuple":{self._dumps(list(values))}}}'\
                .encode() + _END
        except UnicodeEncodeError:      # a lone surrogate: as an escape
            return self.encode(tuple_message(tup_id, component, stream, task, values))


class MsgpackCodec:
    """pystorm's msgpack encoding: msgpack values back to back."""

    name = "msgpack"

    def __init__(self) -> None:
        import msgpack

        self._packb = msgpack.Packer(use_bin_type=True).pack
        # the buffer's limit is the message's (msgpack's default is 100 MiB): a longer
        # message is BufferFull as the read that passes the limit is fed
        self._unpacker = msgpack.Unpacker(raw=False, strict_map_key=False,
                                          max_buffer_size=MAX_MESSAGE_BYTES)
        self._full = msgpack.BufferFull
        # a map with a list for a key is a TypeError (unhashable), deep nesting a
        # RecursionError or StackError
        self._errors = (msgpack.ExtraData, msgpack.FormatError, msgpack.StackError,
                        ValueError, TypeError, RecursionError)
        self._fed = 0

    def encode(self, message: Any) -> bytes:
        return self._packb(message)

    def encode_tuple(self, tup_id: str, component: str, stream: str, task: int,
                     values: Any) -> bytes:
        return self._packb(tuple_message(tup_id, component, stream, task, values))

    def pending(self) -> int:
        # the bytes of the reads since the last that completed a message (the unpacker
        # does not say how much of a read the messages it completed took)
        return self._fed

    def feed(self, data: bytes) -> list[Any]:
        try:
            self._unpacker.feed(data)
            out = list(self._unpacker)
        except self._full as exc:
            raise MultilangError(f"a message longer than {MAX_MESSAGE_BYTES} bytes") from exc
        except self._errors as exc:
            raise MultilangError(f"not a msgpack message ({exc.__class__.__name__}: "
                                 f"{exc})") from exc
        self._fed = 0 if out else self._fed + len(data)
        return out


CODECS: dict[str, type[JsonCodec] | type[MsgpackCodec]] = {"json": JsonCodec,
                                                           "msgpack": MsgpackCodec}


def codec_class(name: Any) -> type[JsonCodec] | type[MsgpackCodec]:
    """The codec ``topology.multilang.serializer`` names; ConfigError for another name."""
    cls = CODECS.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ConfigError(f"topology.multilang.serializer must be one of "
                          f"{', '.join(sorted(CODECS))}, got {name!r}")
    return cls


def handshake_context(context: TopologyContext) -> dict[str, Any]:
    """The ``context`` of the handshake, with the keys Storm's JSON serializer sends."""
    inputs = context.input_fields()
    return {
        "taskid": context.task_id,
        "componentid": context.component_id,
        "task->component": {str(t): c for t, c in sorted(context.task_to_component().items())},
        "stream->outputfields": {s: list(f) for s, f in context.outputs().items()},
        "streams": sorted(context.outputs()),
        "source->stream->fields": {c: {s: list(f) for s, f in streams.items()}
                                   for c, streams in inputs.items()},
    }


def tuple_message(tup_id: str, component: str, stream: str, task: int,
                  values: Any) -> dict[str, Any]:
    """A tuple as a bolt's subprocess receives it."""
    return {"id": tup_id, "comp": component, "stream": stream, "task": task,
            "tuple": list(values)}
