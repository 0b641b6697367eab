"""The zookeeper store's outage guard: after an outage past the session timeout the client
reconnects as one that has seen nothing (zxid 0); shorter outages change nothing (no server
needed: a stand-in for the kazoo client)."""
from __future__ import annotations

import threading
from types import SimpleNamespace

from squall.state._zk_outage import OutageGuard
from squall.testing.waiting import wait_until


def _guard_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "squall-zookeeper-outage"]


def test_a_long_outage_reconnects_as_a_client_that_has_seen_nothing() -> None:
    client = SimpleNamespace(last_zxid=0x40)
    guard = OutageGuard(0.2, "127.0.0.1:2181")
    guard.start(client)
    try:
        guard.connection_changed("CONNECTED")
        guard.connection_changed("SUSPENDED")
        wait_until(lambda: client.last_zxid == 0, timeout=10)
        assert guard.resetting                   # a session expiry now is expected
        guard.connection_changed("LOST")        # what a server that lost the session answers
        guard.connection_changed("CONNECTED")
        reset = guard.take_reset()
        assert reset is not None and reset.seen_zxid == 0x40 and reset.down_for >= 0.2
        assert guard.take_reset() is None and not guard.resetting
        # the next outage is timed from its own start, and reset once
        client.last_zxid = 0x50
        guard.connection_changed("SUSPENDED")
        wait_until(lambda: client.last_zxid == 0, timeout=10)
        guard.connection_changed("CONNECTED")
        again = guard.take_reset()
        assert again is not None and again.seen_zxid == 0x50
    finally:
        guard.close()


def test_an_outage_shorter_than_the_session_timeout_changes_nothing() -> None:
    client = SimpleNamespace(last_zxid=0x40)
    guard = OutageGuard(60.0, "127.0.0.1:2181")
    guard.start(client)
    try:
        guard.connection_changed("SUSPENDED")
        assert not guard.resetting
        guard.connection_changed("CONNECTED")
        assert guard.take_reset() is None and client.last_zxid == 0x40
    finally:
        guard.close()


def test_a_reset_handed_back_is_taken_again() -> None:
    client = SimpleNamespace(last_zxid=7)
    guard = OutageGuard(0.05, "127.0.0.1:2181")
    guard.start(client)
    try:
        guard.connection_changed("SUSPENDED")
        wait_until(lambda: guard.resetting, timeout=10)
        guard.connection_changed("CONNECTED")
        reset = guard.take_reset()
        assert reset is not None
        guard.put_back(reset)                    # re-syncing failed: retried on reconnect
        assert guard.take_reset() == reset
    finally:
        guard.close()


def test_closing_ends_the_guard_thread_every_time() -> None:
    before = len(_guard_threads())
    for _ in range(20):
        guard = OutageGuard(0.05, "127.0.0.1:2181")
        guard.start(SimpleNamespace(last_zxid=1))
        guard.connection_changed("SUSPENDED")
        guard.close()
        guard.close()                            # idempotent
    assert len(_guard_threads()) == before
