"""Polling with a deadline, for tests that wait on other threads or processes."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class WaitTimeout(TimeoutError, AssertionError):
    """A condition was not reached in time (an AssertionError too, for test reports)."""


def wait_until(condition: Callable[[], T], timeout: float = 10.0, interval: float = 0.01,
               message: str | Callable[[], str] | None = None) -> T:
    """Call ``condition`` until it returns something truthy and return that value.

    Raises :class:`WaitTimeout` (a TimeoutError and an AssertionError) with ``message`` after
    ``timeout`` seconds; a callable ``message`` is called then, so it can describe the state at
    the deadline (logs written while waiting, say). Never use a bare sleep
    to wait for another thread: poll the observable condition with this instead.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            if callable(message):
                message = message()
            raise WaitTimeout(message or f"condition not met within {timeout:g}s")
        time.sleep(interval)
