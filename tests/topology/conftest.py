"""Fixtures for topology tests: a LocalCluster stopped after each test."""
from __future__ import annotations

from typing import Any
from collections.abc import Iterator

import pytest

from squall import Bolt, LocalCluster


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    """A LocalCluster; leaving the test stops every topology it runs."""
    with LocalCluster() as c:
        yield c


def info_errors(cluster: LocalCluster, name: str, component: str) -> list[dict[str, Any]]:
    return cluster.get_topology_info(name)["errors"].get(component, [])


def install_driver(monkeypatch: pytest.MonkeyPatch, group: str, name: str,
                   factory: Any) -> None:
    """Make ``name`` an entry point of ``group`` that loads ``factory``, for the test's
    duration (on top of whatever else the test installed)."""
    from squall import drivers
    check, load = drivers.check, drivers.load
    monkeypatch.setattr(drivers, "check", lambda g, n: None if (g, n) == (group, name)
                        else check(g, n))
    monkeypatch.setattr(drivers, "load", lambda g, n: factory if (g, n) == (group, name)
                        else load(g, n))


class HoldFive(Bolt):
    """Holds tuples and acks them five at a time (auto_ack off): the spout must wait for the
    acks."""

    auto_ack = False

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.held: list[Any] = []

    def process(self, tup: Any) -> None:
        self.held.append(tup)
        if len(self.held) == 5:
            for t in self.held:
                self.ack(t)
            self.held = []
