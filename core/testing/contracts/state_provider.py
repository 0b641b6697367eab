"""The contract every ``squall.state_providers`` driver passes (API.md section 11).

Subclass :class:`StateProviderContract` in a test module and override the
``provider_factory`` fixture: a callable taking the provider's options (a conf dict, as
``topology.state.provider.config`` gives it) and returning a provider of ONE shared store
(two providers made by one factory see the same checkpoints, as a restarted worker does);
the factory closes what it made when the test ends::

    class TestMyProvider(StateProviderContract):
        @pytest.fixture
        def provider_factory(self):
            made = []
            def make(conf):
                provider = MyProvider({**my_options, **conf}); made.append(provider)
                return provider
            yield make
            for provider in made:
                provider.close()

What is checked (see :class:`squall.StateProvider`): a fresh namespace is empty at txid 0;
prepare is invisible until commit; commit applies puts and deletes atomically over the
committed map (a key a checkpoint leaves out keeps its value: the runtime prepares only what
changed, often nothing) and is idempotent for the committed txid; committing a txid that is
not prepared, an older one included, raises StateProviderError; rollback discards the
prepared checkpoint; a new prepare replaces the old; namespaces and key prefixes are
isolated; every byte value round-trips; a second provider (a restart) sees what the first
committed and prepared; close twice is fine.
"""
from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from squall.errors import StateProviderError
from squall.stateful.provider import StateProvider

__all__ = ["StateProviderContract"]

Factory = Callable[[dict[str, Any]], StateProvider]


class StateProviderContract:
    """Base class of the state provider contract tests; override ``provider_factory``."""

    @pytest.fixture
    def provider_factory(self) -> Factory:
        raise NotImplementedError("override the provider_factory fixture")

    @pytest.fixture
    def provider(self, provider_factory: Factory) -> StateProvider:
        return provider_factory({})

    @pytest.fixture
    def ns(self) -> str:
        return f"topo-{uuid.uuid4().hex[:8]}/count/3"

    def test_a_fresh_namespace_is_empty_at_txid_zero(self, provider: StateProvider,
                                                     ns: str) -> None:
        assert provider.load(ns) == (0, {})
        assert provider.txids(ns) == (0, None)

    def test_prepared_changes_are_invisible_until_committed(self, provider: StateProvider,
                                                            ns: str) -> None:
        provider.prepare(ns, 1, {b"a": b"1", b"b": b"2"})
        assert provider.load(ns) == (0, {})
        assert provider.txids(ns) == (0, 1)
        provider.commit(ns, 1)
        assert provider.load(ns) == (1, {b"a": b"1", b"b": b"2"})
        assert provider.txids(ns) == (1, None)

    def test_commit_applies_puts_and_deletes(self, provider: StateProvider, ns: str) -> None:
        provider.prepare(ns, 1, {b"a": b"1", b"b": b"2"})
        provider.commit(ns, 1)
        provider.prepare(ns, 2, {b"a": None, b"b": b"3", b"c": b"4", b"missing": None})
        provider.commit(ns, 2)
        assert provider.load(ns) == (2, {b"b": b"3", b"c": b"4"})

    def test_commit_applies_changes_over_the_committed_map(self, provider: StateProvider,
                                                           ns: str) -> None:
        # the runtime prepares only the keys a checkpoint changed (an idle one prepares {}):
        # a commit that replaced the committed map with them would lose the rest
        provider.prepare(ns, 1, {b"a": b"1", b"b": b"2"})
        provider.commit(ns, 1)
        provider.prepare(ns, 2, {b"c": b"3"})
        provider.commit(ns, 2)
        assert provider.load(ns) == (2, {b"a": b"1", b"b": b"2", b"c": b"3"})
        provider.prepare(ns, 3, {})
        provider.commit(ns, 3)
        assert provider.load(ns) == (3, {b"a": b"1", b"b": b"2", b"c": b"3"})

    def test_an_empty_checkpoint_commits_its_txid(self, provider: StateProvider,
                                                  ns: str) -> None:
        provider.prepare(ns, 5, {})
        provider.commit(ns, 5)
        assert provider.load(ns) == (5, {})

    def test_committing_the_committed_txid_again_does_nothing(self, provider: StateProvider,
                                                              ns: str) -> None:
        provider.prepare(ns, 1, {b"a": b"1"})
        provider.commit(ns, 1)
        provider.commit(ns, 1)
        assert provider.load(ns) == (1, {b"a": b"1"})

    def test_committing_a_txid_not_prepared_raises(self, provider: StateProvider,
                                                   ns: str) -> None:
        with pytest.raises(StateProviderError):
            provider.commit(ns, 1)
        provider.prepare(ns, 2, {b"a": b"1"})
        with pytest.raises(StateProviderError):
            provider.commit(ns, 3)
        assert provider.load(ns) == (0, {})
        provider.commit(ns, 2)              # the provider still works
        assert provider.load(ns) == (2, {b"a": b"1"})

    def test_committing_an_older_txid_raises(self, provider: StateProvider, ns: str) -> None:
        provider.prepare(ns, 1, {b"a": b"1"})
        provider.commit(ns, 1)
        provider.prepare(ns, 2, {b"a": b"2"})
        provider.commit(ns, 2)
        with pytest.raises(StateProviderError):
            provider.commit(ns, 1)          # nothing prepared: only txid 2 may be committed
        provider.prepare(ns, 3, {b"a": b"3"})
        with pytest.raises(StateProviderError):
            provider.commit(ns, 1)          # 3 prepared
        assert provider.txids(ns) == (2, 3)
        assert provider.load(ns) == (2, {b"a": b"2"})
        provider.commit(ns, 3)              # the provider still works
        assert provider.load(ns) == (3, {b"a": b"3"})

    def test_rollback_discards_the_prepared_checkpoint(self, provider: StateProvider,
                                                       ns: str) -> None:
        provider.prepare(ns, 1, {b"a": b"1"})
        provider.commit(ns, 1)
        provider.prepare(ns, 2, {b"a": None, b"b": b"2"})
        provider.rollback(ns)
        assert provider.txids(ns) == (1, None)
        assert provider.load(ns) == (1, {b"a": b"1"})
        with pytest.raises(StateProviderError):
            provider.commit(ns, 2)
        provider.rollback(ns)               # nothing prepared: nothing happens

    def test_a_new_prepare_replaces_the_prepared_one(self, provider: StateProvider,
                                                     ns: str) -> None:
        provider.prepare(ns, 1, {b"a": b"1", b"b": b"2"})
        provider.prepare(ns, 2, {b"c": b"3"})
        assert provider.txids(ns) == (0, 2)
        provider.commit(ns, 2)
        assert provider.load(ns) == (2, {b"c": b"3"})

    def test_namespaces_are_isolated(self, provider: StateProvider, ns: str) -> None:
        other = ns + "0"
        provider.prepare(ns, 1, {b"a": b"1"})
        provider.commit(ns, 1)
        provider.prepare(other, 7, {b"a": b"2"})
        assert provider.load(other) == (0, {})
        provider.commit(other, 7)
        assert provider.load(ns) == (1, {b"a": b"1"})
        assert provider.load(other) == (7, {b"a": b"2"})

    def test_key_prefixes_are_isolated(self, provider_factory: Factory, ns: str) -> None:
        one = provider_factory({"key_prefix": f"one-{uuid.uuid4().hex[:6]}:"})
        two = provider_factory({"key_prefix": f"two-{uuid.uuid4().hex[:6]}:"})
        one.prepare(ns, 1, {b"a": b"1"})
        one.commit(ns, 1)
        assert two.load(ns) == (0, {})

    def test_every_byte_value_round_trips(self, provider: StateProvider, ns: str) -> None:
        data = {bytes(range(256)): bytes(range(255, -1, -1)), b"": b"", b"\x00": b"\x00",
                b"\x01x": b"\x00y", "naïve 漢字".encode(): b"\xff" * 10000}
        provider.prepare(ns, 1, data)
        provider.commit(ns, 1)
        assert provider.load(ns) == (1, data)

    def test_a_second_provider_sees_what_the_first_committed_and_prepared(
            self, provider_factory: Factory, ns: str) -> None:
        first = provider_factory({})
        first.prepare(ns, 1, {b"a": b"1"})
        first.commit(ns, 1)
        first.prepare(ns, 2, {b"a": b"2"})
        first.close()
        again = provider_factory({})          # a restarted worker
        assert again.txids(ns) == (1, 2)
        assert again.load(ns) == (1, {b"a": b"1"})
        again.commit(ns, 2)
        assert again.load(ns) == (2, {b"a": b"2"})

    def test_load_returns_a_copy(self, provider: StateProvider, ns: str) -> None:
        provider.prepare(ns, 1, {b"a": b"1"})
        provider.commit(ns, 1)
        _, data = provider.load(ns)
        data[b"b"] = b"2"
        assert provider.load(ns) == (1, {b"a": b"1"})

    def test_close_twice_is_fine(self, provider_factory: Factory) -> None:
        provider = provider_factory({})
        provider.close()
        provider.close()
