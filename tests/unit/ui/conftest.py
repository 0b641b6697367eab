"""Fixtures of the UI's unit tests: a fake nimbus and UI servers over it (see ui_fakes)."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from ui_fakes import TOKENS, FakeNimbus, serve, topology_info

from squall.ui import UiServer


@pytest.fixture
def nimbus() -> FakeNimbus:
    fake = FakeNimbus()
    fake.topologies["wc"] = topology_info("wc", "alice")
    fake.topologies["other"] = topology_info("other", "bob", scale=2, logviewer=None)
    return fake


@pytest.fixture
def open_ui(nimbus: FakeNimbus) -> Iterator[tuple[UiServer, Any]]:
    """A UI without authentication over ``nimbus``."""
    yield from serve({}, nimbus)


@pytest.fixture
def secure_ui(nimbus: FakeNimbus) -> Iterator[tuple[UiServer, Any]]:
    """A UI with token authentication: alice and bob own a topology each, root is an admin."""
    yield from serve({"nimbus.authentication": "token", "nimbus.auth.tokens": TOKENS,
                      "nimbus.admins": ["root"], "squall.auth.token": "t-root"}, nimbus)
