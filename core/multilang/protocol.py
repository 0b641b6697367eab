"""Storm's multi-lang protocol: how messages are framed and what the worker sends.

Two encodings, chosen by ``topology.multilang.serializer``:

* ``json`` (Storm's own): each message is one JSON value followed by a line ``end``
  (``{...}\\nend\\n``); a JSON text never holds a raw newline inside a string, so a line
  ``end`` only ever closes a message.
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
        that are not a message."""

    def encode_tuple(self, tup_id: str, component: str, stream: str, task: int,
                     values: Any) -> bytes:
        """The bytes of :func:`tuple_message` (``tup_id`` holds no character JSON escapes)."""


#: the longest message a subprocess may send (a longer one is a broken protocol: the
#: subprocess is killed and restarted), so a stream without terminators cannot grow without end
MAX_MESSAGE_BYTES = 256 << 20


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
        self._loads = json.loads
        self._heads: dict[tuple[str, str], str] = {}

    def encode(self, message: Any) -> bytes:
        return self._dumps(message).encode() + _END

    def feed(self, data: bytes) -> list[Any]:
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
                return []
            if self._parts:
                self._buf = b"".join(self._parts)
                self._parts, self._parts_len = [], 0
        buf = self._buf + data if self._buf else data
        if buf.startswith(b"end\n"):       # a message that is only its terminator line
            buf = b"\n" + buf
        parts = buf.split(_END)
        self._buf = parts.pop()
        if not parts:
            return []
        try:        # one decode for the whole read (a list of the messages)
            out: list[Any] = self._loads(b"[" + b",".join(parts) + b"]")
        except ValueError:
            out = self._each([p for p in parts if p.strip()])
        else:
            if len(out) != len(parts):  # a part holding two values, or a blank one
                out = self._each([p for p in parts if p.strip()])
        return out

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
            except ValueError as exc:
                raise MultilangError(f"not a JSON message: {part[:200]!r} ({exc})") from exc
        return out

    def encode_tuple(self, tup_id: str, component: str, stream: str, task: int,
                     values: Any) -> bytes:
        """:func:`tuple_message` encoded, without building the dict."""
        head = self._heads.get((component, stream))
        if head is None:
            dumps = self._dumps
            head = self._heads[(component, stream)] = \
                f'","comp":{dumps(component)},"stream":{dumps(stream)},"task":'
        return f'{{"id":"{tup_id}{head}{task},"tuple":{self._dumps(list(values))}}}'\
            .encode() + _END


class MsgpackCodec:
    """pystorm's msgpack encoding: msgpack values back to back."""

    name = "msgpack"

    def __init__(self) -> None:
        import msgpack

        self._packb = msgpack.Packer(use_bin_type=True).pack
        self._unpacker = msgpack.Unpacker(raw=False, strict_map_key=False)
        self._errors = (msgpack.ExtraData, msgpack.FormatError, msgpack.StackError,
                        ValueError)

    def encode(self, message: Any) -> bytes:
        return self._packb(message)

    def encode_tuple(self, tup_id: str, component: str, stream: str, task: int,
                     values: Any) -> bytes:
        return self._packb(tuple_message(tup_id, component, stream, task, values))

    def feed(self, data: bytes) -> list[Any]:
        self._unpacker.feed(data)
        try:
            return list(self._unpacker)
        except self._errors as exc:
            raise MultilangError(f"not a msgpack message ({exc})") from exc


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
