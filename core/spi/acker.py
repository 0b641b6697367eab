"""The acker SPI (``squall.ackers``, chosen with ``squall.acker``).

An acker instance is the state of one acker task. The runtime feeds it the system streams
``__ack_init``, ``__ack_ack`` and ``__ack_fail`` (routed to acker tasks by root id) and calls
:meth:`rotate` every ``topology.message.timeout.secs`` (:meth:`sweep` instead with
``topology.enable.message.timeouts: false``). Each method returns ``None`` or a
completion ``(spout_task, ok)`` that the runtime sends back to the spout task on
``__ack_ack`` / ``__ack_fail``. A bolt's ``reset_timeout`` reaches :meth:`reset_timeout`
(``__ack_reset``), which returns the spout task the runtime then tells to restart its own
timeout of the tree.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

Completion = tuple[int, bool]


class Acker(ABC):
    name: str = ""

    def __init__(self, conf: Mapping[str, Any] | None = None) -> None:
        self.conf: dict[str, Any] = dict(conf or {})

    @abstractmethod
    def init(self, root: int, value: int, spout_task: int) -> Completion | None:
        """A spout emitted a tracked tuple tree ``root`` whose edges XOR to ``value``."""

    @abstractmethod
    def ack(self, root: int, value: int) -> Completion | None:
        """A tuple of the tree was acked; ``value`` XORs its own edge and its children's."""

    @abstractmethod
    def fail(self, root: int) -> Completion | None:
        """A tuple of the tree failed; the tree fails at once."""

    def reset_timeout(self, root: int) -> int | None:
        """A bolt asked to restart tree ``root``'s timeout: keep it as long from now as a tree
        just started, and return its spout task (told to restart its own timeout of the
        tree), or None for a tree not tracked (its init not seen yet, or gone: nothing to
        restart). Optional: this default restarts nothing, and the tree keeps its
        timeout."""
        return None

    @abstractmethod
    def rotate(self) -> list[tuple[int, int]]:
        """Expire trees older than two rotations; return their ``(root, spout_task)``."""

    def sweep(self) -> None:
        """Called instead of :meth:`rotate` with ``topology.enable.message.timeouts: false``,
        every ``topology.message.timeout.secs``, on the acker's thread: no tree expires then,
        but what acks or fails left for a root whose init has not come (the acks of a
        failed tree's other tuples, arriving after its fail) may be dropped once older than
        a sweep, as a rotation would. Optional: this default keeps everything."""

    @abstractmethod
    def pending(self) -> int:
        """How many trees are being tracked."""
