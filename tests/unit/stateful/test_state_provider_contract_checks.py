"""The state provider contract suite catches a provider that loses committed state: one whose
commit replaces the committed map with the checkpoint's changes (the runtime prepares only
what changed), and one that accepts the commit of an older txid."""
from __future__ import annotations

from typing import Any

import pytest

from squall import StateProvider
from squall.errors import StateProviderError
from squall.stateful.provider import Changes
from squall.testing.contracts.state_provider import StateProviderContract


class DictProvider(StateProvider):
    """A provider over a plain dict: namespace -> [committed txid, map, prepared or None]."""

    def __init__(self, conf: dict[str, Any]) -> None:
        super().__init__(conf)
        self.spaces: dict[str, list[Any]] = {}

    def _space(self, namespace: str) -> list[Any]:
        return self.spaces.setdefault(namespace, [0, {}, None])

    def load(self, namespace: str) -> tuple[int, dict[bytes, bytes]]:
        txid, data, _ = self._space(namespace)
        return txid, dict(data)

    def txids(self, namespace: str) -> tuple[int, int | None]:
        txid, _, prepared = self._space(namespace)
        return txid, (prepared[0] if prepared else None)

    def prepare(self, namespace: str, txid: int, changes: Changes) -> None:
        self._space(namespace)[2] = (txid, dict(changes))

    def commit(self, namespace: str, txid: int) -> None:
        space = self._space(namespace)
        if space[2] is None or space[2][0] != txid:
            if txid == space[0]:
                return
            raise StateProviderError(f"{namespace}: txid {txid} is not prepared")
        self.apply(space, space[2][1])
        space[0], space[2] = txid, None

    def apply(self, space: list[Any], changes: dict[bytes, bytes | None]) -> None:
        for key, value in changes.items():
            if value is None:
                space[1].pop(key, None)
            else:
                space[1][key] = value

    def rollback(self, namespace: str) -> None:
        self._space(namespace)[2] = None


class ReplacesOnCommit(DictProvider):
    """Commit makes the checkpoint's changes the whole committed map."""

    def apply(self, space: list[Any], changes: dict[bytes, bytes | None]) -> None:
        space[1] = {k: v for k, v in changes.items() if v is not None}


class AcceptsOlderTxids(DictProvider):
    """A commit of any txid up to the committed one does nothing, instead of raising."""

    def commit(self, namespace: str, txid: int) -> None:
        space = self._space(namespace)
        if (space[2] is None or space[2][0] != txid) and txid <= space[0]:
            return
        super().commit(namespace, txid)


NS = "topo/count/index-0"


def test_a_correct_provider_passes_the_new_checks() -> None:
    contract = StateProviderContract()
    contract.test_commit_applies_changes_over_the_committed_map(DictProvider({}), NS)
    contract.test_committing_an_older_txid_raises(DictProvider({}), NS)


def test_a_commit_that_replaces_the_committed_map_fails_the_contract() -> None:
    with pytest.raises(AssertionError):
        StateProviderContract().test_commit_applies_changes_over_the_committed_map(
            ReplacesOnCommit({}), NS)


def test_a_commit_of_an_older_txid_that_does_not_raise_fails_the_contract() -> None:
    with pytest.raises(pytest.fail.Exception, match="DID NOT RAISE"):
        StateProviderContract().test_committing_an_older_txid_raises(AcceptsOlderTxids({}), NS)
