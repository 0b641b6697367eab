"""Both built-in state providers pass the state provider contract
(squall.testing.contracts.state_provider)."""
from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from squall.runtime.memory_stores import MemoryStores
from squall.stateful.memory import MemoryStateProvider
from squall.stateful.provider import StateProvider
from squall.testing.contracts.state_provider import StateProviderContract
from squall.testing.redis_fixtures import redis_conf, redis_server  # noqa: F401

Factory = Callable[[dict[str, Any]], StateProvider]


def _factory(make_one: Factory) -> Iterator[Factory]:
    made: list[StateProvider] = []

    def make(conf: dict[str, Any]) -> StateProvider:
        provider = make_one(conf)
        made.append(provider)
        return provider

    yield make
    for provider in made:
        provider.close()


class TestMemoryStateProvider(StateProviderContract):
    @pytest.fixture
    def provider_factory(self) -> Iterator[Factory]:
        stores = MemoryStores()           # one worker's: its providers share them
        prefix = f"contract-{uuid.uuid4().hex}:"
        yield from _factory(lambda conf: MemoryStateProvider({"key_prefix": prefix, **conf},
                                                             stores))


@pytest.mark.integration
class TestRedisStateProvider(StateProviderContract):
    @pytest.fixture
    def provider_factory(self, redis_conf: dict[str, Any]  # noqa: F811
                         ) -> Iterator[Factory]:
        from squall.stateful.redis import RedisStateProvider
        yield from _factory(lambda conf: RedisStateProvider(
            {**redis_conf, **conf,
             "key_prefix": redis_conf["key_prefix"] + str(conf.get("key_prefix", ""))}))
