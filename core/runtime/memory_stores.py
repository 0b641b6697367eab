"""Where the in-process state backends keep their data: the ``memory`` state provider's
checkpoints and Trident's ``MemoryMapState`` maps.

Their owner decides how long that state lives: a worker process builds its
:class:`~squall.runtime.worker.Worker` with a fresh one, so the state goes with the process;
a LocalCluster makes one per topology it runs, shared by that topology's workers and kept
across their restarts and rebalances, and clears it when the topology is killed (so every
topology's at its shutdown); a second LocalCluster starts with nothing. Components reach
it as ``context.memory_stores``. Each backend keeps its data in a part of its own
(:meth:`MemoryStores.part`), so this module knows none of them.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["MemoryStores"]

T = TypeVar("T")


class MemoryStores:
    """The memory backends' data of one owner (see the module docstring). Thread-safe."""

    __slots__ = ("_lock", "_parts")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._parts: dict[str, Any] = {}

    def part(self, name: str, make: Callable[[], T]) -> T:
        """The part ``name`` (a backend's own name), made by ``make()`` on first use. Called
        from any thread when a component or executor opens a backend, never per tuple."""
        with self._lock:
            got = self._parts.get(name)
            if got is None:
                got = self._parts[name] = make()
            return got  # type: ignore[no-any-return]

    def clear(self) -> None:
        """Drop every part (the owner's topology was killed); a part asked for later starts
        empty."""
        with self._lock:
            self._parts.clear()
