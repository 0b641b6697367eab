"""The signals that stop squall's foreground processes in order (``squall nimbus``,
``supervisor``, ``ui``, ``drpc``, ``dev-zookeeper``, ``local``): SIGTERM, and SIGHUP, which a
process gets when its terminal closes (a ``squall dev-zookeeper &`` of a shell that exits).
Left to its default, SIGHUP ends the process at once, without stopping what it started (the
ZooKeeper server, shell subprocesses) or removing its files. A process that ignores SIGHUP
(started with ``nohup``) keeps ignoring it.
"""
from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

Handler = Callable[[int, Any], Any]


def _stop_signals() -> list[signal.Signals]:
    """SIGTERM, and SIGHUP where the platform has it and this process does not ignore it."""
    signals = [signal.SIGTERM]
    hangup = getattr(signal, "SIGHUP", None)
    if hangup is not None and signal.getsignal(hangup) is not signal.SIG_IGN:
        signals.append(hangup)
    return signals


def on_stop_signals(handler: Handler) -> Callable[[], None]:
    """Call ``handler(signum, frame)`` on SIGTERM and SIGHUP (see the module docstring) from
    now on; returns what puts the previous handlers back. Call both from the main thread
    (where Python runs signal handlers); ``handler`` may raise to leave a blocking call."""
    previous = {sig: signal.signal(sig, handler) for sig in _stop_signals()}

    def restore() -> None:
        for sig, old in previous.items():      # None: not set from Python
            signal.signal(sig, signal.SIG_DFL if old is None else old)
    return restore
