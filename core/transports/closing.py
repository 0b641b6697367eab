"""Closing many connections at once: each may linger to flush what it still holds (up to its
transport's linger), so they close side by side, and a worker with several slow or departed
peers takes one linger to stop, not one per peer."""
from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

from squall.spi.transport import Connection

__all__ = ["close_all"]

log = logging.getLogger(__name__)


def _close(conn: Connection) -> None:
    try:
        conn.close()
    except Exception:       # a connection that fails to close is gone all the same
        log.debug("closing a connection failed", exc_info=True)


def close_all(conns: Iterable[Connection]) -> None:
    """Close every connection of ``conns`` (errors logged at DEBUG), side by side; returns
    once all are closed."""
    conns = list(conns)
    if len(conns) <= 1:
        for conn in conns:
            _close(conn)
        return
    threads = [threading.Thread(target=_close, args=(conn,), daemon=True,
                                name="squall-close") for conn in conns]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
