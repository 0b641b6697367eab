"""Fixtures for topology tests: a LocalCluster stopped after each test."""
from __future__ import annotations

from typing import Any
from collections.abc import Iterator

import pytest

from squall import LocalCluster


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    """A LocalCluster; leaving the test stops every topology it runs."""
    with LocalCluster() as c:
        yield c


def info_errors(cluster: LocalCluster, name: str, component: str) -> list[dict[str, Any]]:
    return cluster.get_topology_info(name)["errors"].get(component, [])
