"""Every built-in state store passes the state store contract."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from squall.spi.state import StateStore
from squall.state.memory import MemoryServer, MemoryStateStore
from squall.state.zookeeper import ZooKeeperStateStore
from squall.testing.contracts.state_store import StateStoreContract
from squall.testing.zookeeper_fixtures import zk_conf, zookeeper  # noqa: F401


def _factory(make_one: Callable[[], StateStore]) -> Iterator[Callable[[], StateStore]]:
    made: list[StateStore] = []

    def make() -> StateStore:
        store = make_one()
        store.start()
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


class TestMemoryStateStore(StateStoreContract):
    @pytest.fixture
    def store_factory(self) -> Iterator[Callable[[], StateStore]]:
        server = MemoryServer()
        yield from _factory(lambda: MemoryStateStore({}, server=server))


@pytest.mark.integration
class TestZooKeeperStateStore(StateStoreContract):
    @pytest.fixture
    def store_factory(self, zk_conf: dict[str, Any]  # noqa: F811
                      ) -> Iterator[Callable[[], StateStore]]:
        yield from _factory(lambda: ZooKeeperStateStore(zk_conf))
