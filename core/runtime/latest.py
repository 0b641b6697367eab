"""A setting other threads change without waiting and the loop thread applies.

The worker process's main thread writes the worker's ZooKeeper beats and must not wait for a
loop held in a component's call (nimbus would take the silence for a dead worker). It hands
the status (active or not) and the debug sampling it reads from ZooKeeper to the loop through
a :class:`Latest`: :meth:`Latest.set` returns at once, and the loop applies the latest value
at the start of its next pass, however many changes were made before it got there.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from squall.runtime.loop import Loop

T = TypeVar("T")


class Latest(Generic[T]):
    """One setting the loop thread applies with ``apply(value)``; thread-safe.

    :meth:`set` hands the change to the loop (:meth:`Loop.submit`) unless an earlier change
    still waits there, and never waits for it. What runs on the loop applies the value set
    last before it ran, once: changes made in between collapse (deactivate then activate
    ends active), and a change made while an apply runs is applied by the next pass. With no
    loop running (not started, stopped, or called on the loop thread) it applies on the
    caller's thread, as :meth:`Loop.call` does. ``apply`` must accept the same value twice
    (a change back to a value being applied)."""

    def __init__(self, loop: Loop, apply: Callable[[T], None]) -> None:
        self._loop = loop
        self._apply = apply
        self._lock = threading.Lock()
        self._value: T | None = None
        #: an apply waits in the loop's commands and will read ``_value`` when it runs
        self._queued = False

    def set(self, value: T) -> None:
        """Have the loop apply ``value`` (the latest set wins); does not wait."""
        loop = self._loop
        here = not loop.running or loop.on_loop_thread()
        with self._lock:
            self._value = value
            if self._queued and not here:
                return
            self._queued = True
        if here:        # also when one was queued to a loop that stopped before running it
            self._run()
        else:
            loop.submit(self._run)

    def _run(self) -> None:
        with self._lock:
            self._queued = False
            value = self._value
        self._apply(value)     # type: ignore[arg-type]   # set before anything is queued
