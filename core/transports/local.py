"""The in-process transport (entry point ``local``) that LocalCluster uses.

A process-wide registry maps ``(topology_id, port)`` to the inbox of the bound receiving
connection. ``bind(topology_id, 0)`` hands out a fake port not in use. A sending connection
looks the inbox up on every ``send`` and appends the batch there (payloads are ``bytes``, which
are immutable, so nothing is copied); ``host`` is ignored.

Bounds (``squall.transport.send.buffer.messages``, default 10000 messages):

* an inbox holding more than that many unread messages makes ``send`` raise
  :class:`~squall.errors.TransportError` instead of blocking;
* a send to a port nobody has bound (yet, or any more) is parked in a per-port pending buffer of
  the same size and handed to the next ``bind`` of that port; a full pending buffer raises.

So a message handed to ``send`` is either delivered to a receiver or reported by a raise; messages
still unread when a receiver closes are dropped with it (as with a dying worker).
"""
from __future__ import annotations

import collections
import itertools
import threading
from collections.abc import Mapping
from typing import Any

from squall.errors import TransportError
from squall.spi.transport import Connection, Message, Transport

__all__ = ["LocalTransport"]

_Key = tuple[str, int]
_REGISTRY_LOCK = threading.Lock()
_INBOXES: dict[_Key, _Inbox] = {}
_PENDING: dict[_Key, collections.deque[list[Message]]] = {}
_PENDING_COUNT: dict[_Key, int] = {}
_PORTS = itertools.count(61000)
DEFAULT_BUFFER = 10000


class _Inbox:
    """The queue behind one bound port; all methods are thread-safe."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.batches: collections.deque[list[Message]] = collections.deque()
        self.count = 0
        self.closed = False
        self.cond = threading.Condition(threading.Lock())

    def put(self, batch: list[Message]) -> bool:
        """Append a batch; False if closed. Raises TransportError when over the limit."""
        with self.cond:
            if self.closed:
                return False
            if self.count and self.count + len(batch) > self.limit:
                raise TransportError(
                    f"receiver queue full ({self.count} unread messages, limit {self.limit})")
            self.batches.append(batch)
            self.count += len(batch)
            self.cond.notify()
        return True

    def take(self, timeout: float | None) -> list[Message]:
        with self.cond:
            if not self.count and not self.closed:
                self.cond.wait_for(lambda: self.count or self.closed, timeout)
            if self.closed or not self.count:
                return []
            batches, self.batches = self.batches, collections.deque()
            self.count = 0
        if len(batches) == 1:
            return batches[0]
        out: list[Message] = []
        for batch in batches:
            out.extend(batch)
        return out

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self.batches.clear()
            self.count = 0
            self.cond.notify_all()


class LocalReceiver(Connection):
    """The bound end: ``recv`` returns every message queued so far (one list), ``[]`` on timeout
    or once closed. Call ``recv`` from one thread; ``close`` from any thread wakes it up."""

    def __init__(self, key: _Key, inbox: _Inbox) -> None:
        self.topology_id, self.port = key
        self._key = key
        self._inbox = inbox

    def send(self, messages: list[Message]) -> None:
        raise TransportError("a bound (receiving) connection cannot send")

    def recv(self, timeout: float | None = None) -> list[Message]:
        return self._inbox.take(timeout)

    def close(self) -> None:
        with _REGISTRY_LOCK:
            if _INBOXES.get(self._key) is self._inbox:
                del _INBOXES[self._key]
        self._inbox.close()


class LocalSender(Connection):
    """The connecting end: ``send`` never blocks; it raises TransportError when the receiver's
    queue (or the pending buffer of an unbound port) is full, or after ``close``."""

    def __init__(self, key: _Key, limit: int) -> None:
        self.topology_id, self.port = key
        self._key = key
        self._limit = limit
        self._closed = False

    def send(self, messages: list[Message]) -> None:
        if self._closed:
            raise TransportError("send on a closed connection")
        if not messages:
            return
        batch = list(messages)
        for item in batch:
            if type(item[1]) is not bytes or type(item[0]) is not int:
                raise TransportError(f"a message must be (int task id, bytes), got {item!r:.80}")
        inbox = _INBOXES.get(self._key)
        if inbox is not None and inbox.put(batch):
            return
        with _REGISTRY_LOCK:
            inbox = _INBOXES.get(self._key)
            if inbox is not None and inbox.put(batch):
                return
            queued = _PENDING_COUNT.get(self._key, 0)
            if queued and queued + len(batch) > self._limit:
                raise TransportError(
                    f"no receiver bound on local port {self._key[1]} and {queued} messages "
                    f"already wait for it (limit {self._limit})")
            _PENDING.setdefault(self._key, collections.deque()).append(batch)
            _PENDING_COUNT[self._key] = queued + len(batch)

    def recv(self, timeout: float | None = None) -> list[Message]:
        raise TransportError("a connecting (sending) connection cannot receive")

    def close(self) -> None:
        self._closed = True


class LocalTransport(Transport):
    """In-process transport; every instance in the process shares the same port registry."""

    name = "local"
    in_process = True

    def __init__(self, conf: Mapping[str, Any] | None = None) -> None:
        super().__init__(conf)
        self.limit = int(self.conf.get("squall.transport.send.buffer.messages") or DEFAULT_BUFFER)
        self._bound: list[LocalReceiver] = []

    def bind(self, topology_id: str, port: int) -> Connection:
        inbox = _Inbox(self.limit)
        with _REGISTRY_LOCK:
            if port == 0:
                port = next(p for p in _PORTS if (topology_id, p) not in _INBOXES)
            key = (topology_id, int(port))
            if key in _INBOXES:
                raise TransportError(f"local port {port} of {topology_id!r} is already bound")
            for batch in _PENDING.pop(key, ()):
                inbox.batches.append(batch)
                inbox.count += len(batch)
            _PENDING_COUNT.pop(key, None)
            _INBOXES[key] = inbox
        receiver = LocalReceiver(key, inbox)
        self._bound.append(receiver)
        return receiver

    def connect(self, topology_id: str, host: str, port: int) -> Connection:
        return LocalSender((topology_id, int(port)), self.limit)

    def close(self) -> None:
        bound, self._bound = self._bound, []
        for receiver in bound:
            receiver.close()
