"""The refused-peer log line every authenticating transport shares."""
from __future__ import annotations

import doctest
import logging

import pytest

from squall.transports import refusals
from squall.transports.refusals import RefusalLog, host_of


def test_doctests() -> None:
    assert doctest.testmod(refusals).failed == 0


@pytest.mark.parametrize(("peer", "host"), [("ipv4:127.0.0.1:5000", "127.0.0.1"),
                                            ("ipv6:[::1]:5000", "::1"),
                                            ("10.1.2.3:6700", "10.1.2.3"),
                                            ("10.1.2.3", "10.1.2.3"), ("", "?"),
                                            ("unix:/tmp/x", "unix:/tmp/x")])
def test_host_of(peer: str, host: str) -> None:
    assert host_of(peer) == host


def test_one_warning_per_address(caplog: pytest.LogCaptureFixture) -> None:
    log = RefusalLog(logging.getLogger("squall.test.refusals"), "x receiver on port 1")
    caplog.set_level(logging.DEBUG, "squall.test.refusals")
    log.refused("127.0.0.1", "it presented no certificate")
    log.where = "x receiver on port 2"
    log.refused("127.0.0.1", "it presented no certificate")
    log.refused("10.0.0.9", "its key is wrong")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "x receiver on port 1 refused a peer at 127.0.0.1: it presented no certificate (its "
        "tuples are dropped; further refusals of this peer are not logged)",
        "x receiver on port 2 refused a peer at 10.0.0.9: its key is wrong (its tuples are "
        "dropped; further refusals of this peer are not logged)"]
    assert log.count == 3
    assert sum(r.levelno == logging.DEBUG for r in caplog.records) == 1


def test_a_peer_whose_address_could_not_be_read_is_named_only_when_nothing_was(
        caplog: pytest.LogCaptureFixture) -> None:
    # a stranger redialing: its second connection closed before its address was read, and
    # "refused a peer at ?" was a second warning for one peer
    log = RefusalLog(logging.getLogger("squall.test.refusals"), "x receiver on port 1")
    caplog.set_level(logging.DEBUG, "squall.test.refusals")
    log.refused("127.0.0.1", "its certificate is not signed by this cluster's CA")
    log.refused("?", "its certificate is not signed by this cluster's CA")
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        "x receiver on port 1 refused a peer at 127.0.0.1: its certificate is not signed by "
        "this cluster's CA (its tuples are dropped; further refusals of this peer are not "
        "logged)"]
    first = RefusalLog(logging.getLogger("squall.test.refusals"), "y receiver on port 2")
    first.refused("?", "it presented no certificate")
    assert "y receiver on port 2 refused a peer at ?: it presented no certificate" in \
        caplog.records[-1].getMessage()
    assert log.count == 2
