"""The transport SPI: moves batches of ``(task_id, payload)`` byte messages between workers.

A transport never serializes tuples; the worker hands it bytes it already encoded (one payload
per batch of tuples for a destination worker). Implementations are registered in the
``squall.transports`` entry-point group and chosen with ``squall.transport``; their options live
under ``squall.transport.<name>.``.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

Message = tuple[int, bytes]


class Connection(ABC):
    """One end of a link between two workers.

    A connection returned by :meth:`Transport.bind` receives; one returned by
    :meth:`Transport.connect` sends. Messages sent on one connection arrive in order and
    byte-exact. Methods may be called from any single thread at a time per connection.

    Every connection has an ``int`` attribute ``port``: for a bound one the port actually
    listened on (useful after ``bind(topology_id, 0)``), for a connecting one the peer's port.
    ``squall.testing.contracts.transport.TransportContract`` checks all of this.
    """

    @abstractmethod
    def send(self, messages: list[Message]) -> None:
        """Queue a batch for delivery and return without waiting for the peer.

        Must not block the caller indefinitely when the peer is slow or gone: the transport
        keeps a bounded buffer and, when it cannot deliver, raises :class:`~squall.errors.TransportError`
        (the worker then fails the tuples back to the acker so spouts replay them).
        """

    @abstractmethod
    def recv(self, timeout: float | None = None) -> list[Message]:
        """Return the next batch of received messages; ``[]`` once ``timeout`` seconds pass.

        ``timeout=None`` waits until something arrives or the connection is closed (then ``[]``).
        Garbage that is not a message of this transport is logged and skipped, never raised.
        """

    @abstractmethod
    def close(self) -> None:
        """Release the connection. Idempotent; pending sends get a short linger to flush."""

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Transport(ABC):
    """A factory of connections (Storm's IContext). ``Transport({})`` works with defaults."""

    name: str = ""
    #: True when connections never leave this process (ports name receivers, hosts are not
    #: resolved): the only kind LocalCluster, which runs every worker in one process, accepts
    in_process: bool = False
    #: the largest batch a sending connection's ``send`` takes, in bytes as
    #: :func:`squall.transports.framing.encode` frames it (``HEADER.size``, 8 bytes per
    #: message, the payloads); None: no limit. A worker sends a larger batch as several, and
    #: fails a tuple that alone would not fit, as an error of the component that emitted it.
    #: ``send`` still raises :class:`~squall.errors.TransportError` for a batch over it.
    max_frame_bytes: int | None = None

    def __init__(self, conf: Mapping[str, Any] | None = None) -> None:
        self.conf: dict[str, Any] = dict(conf or {})

    def option(self, key: str, default: Any = None) -> Any:
        """Read ``squall.transport.<name>.<key>`` from the conf."""
        return self.conf.get(f"squall.transport.{self.name}.{key}", default)

    @abstractmethod
    def bind(self, topology_id: str, port: int) -> Connection:
        """Listen on ``port`` (0 picks a free one; see the connection's ``port`` attribute)."""

    @abstractmethod
    def connect(self, topology_id: str, host: str, port: int) -> Connection:
        """Return a sending connection to a worker; connects lazily and reconnects by itself."""

    def close(self) -> None:
        """Release shared resources (contexts, threads). Idempotent."""

    def __enter__(self) -> Transport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
