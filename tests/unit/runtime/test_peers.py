"""Who may send a worker control messages, and how often a bad sender is logged."""
from __future__ import annotations

import logging

import pytest

from squall.runtime.wire.peers import LimitedLog, PeerGate, parse_who


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_sender_is_logged_once_a_minute_with_the_count_held_back(
        caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    limited = LimitedLog(logging.getLogger("t.peers"), clock=clock)
    with caplog.at_level(logging.WARNING, logger="t.peers"):
        assert limited.warning("a", "bad %s", 1)
        for _ in range(50):
            assert not limited.warning("a", "bad %s", 2)
        assert limited.warning("b", "bad %s", 3)          # another sender: its own line
        clock.now = 61.0
        assert limited.warning("a", "bad %s", 4)
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["bad 1", "bad 3", "bad 4 (50 more like it in the last minute)"]


@pytest.mark.parametrize("who,key", [("h:1", ("h", 1)), ("10.0.0.1:6700", ("10.0.0.1", 6700)),
                                     ("h", None), (":1", None), ("h:x", None), (5, None),
                                     (None, None)])
def test_who_is_read_as_host_and_port(who: object, key: object) -> None:
    assert parse_who(who) == key


def test_only_workers_of_the_assignment_are_admitted(caplog: pytest.LogCaptureFixture) -> None:
    gate = PeerGate(lambda key: key == ("h", 2), LimitedLog(logging.getLogger("t.gate")), 1)
    with caplog.at_level(logging.WARNING, logger="t.gate"):
        assert gate.admit("credit", "h:2") == ("h", 2)
        for _ in range(10):
            assert gate.admit("congested", "evil:9") is None
        assert gate.admit("congested", "garbage") is None
    assert gate.dropped == 11
    assert len(caplog.records) == 2          # once per stranger
