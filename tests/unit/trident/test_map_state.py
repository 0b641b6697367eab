"""Map state kinds: what each stores, and how a replayed txid is applied."""
from __future__ import annotations

import enum
import uuid
from decimal import Decimal

import pytest

from squall.runtime.memory_stores import MemoryStores
from squall.trident import MemoryMapState, RedisMapState
from squall.trident.state import memory


def add(n: int):
    return lambda old: (old or 0) + n


#: the stores of the worker these states are made in
STORES = MemoryStores()


def _state(kind: str):
    factory = getattr(MemoryMapState, kind)(f"u-{uuid.uuid4().hex}")
    return factory, factory.make_state(STORES)


def test_default_memory_map_state_is_transactional() -> None:
    assert MemoryMapState().kind == "transactional"


def test_redis_map_state_called_with_its_options_is_the_transactional_one() -> None:
    factory = RedisMapState(host="127.0.0.1", port=6390, db=2, key_prefix="p:")
    assert factory.to_json() == RedisMapState.transactional(
        host="127.0.0.1", port=6390, db=2, key_prefix="p:").to_json()
    assert factory.to_json() == {"backend": "redis", "kind": "transactional", "options": {
        "host": "127.0.0.1", "port": 6390, "db": 2, "key_prefix": "p:", "password": None,
        "timeout": 2.0}}
    assert RedisMapState().options["port"] == 6379


def test_transactional_skips_a_replayed_txid() -> None:
    factory, s = _state("transactional")
    s.begin_commit(1)
    assert s.multi_update([("a",), ("b",)], [add(2), add(5)]) == [2, 5]
    s.commit(1)
    s.begin_commit(2)
    assert s.multi_update([("a",)], [add(3)]) == [5]
    s.commit(2)
    s.begin_commit(2)                       # txid 2 again: already applied
    assert s.multi_update([("a",), ("c",)], [add(3), add(1)]) == [5, 1]
    s.commit(2)
    assert memory.stored(STORES, factory.state_id) == {("a",): [2, 5], ("b",): [1, 5], ("c",): [2, 1]}
    assert s.multi_get([("a",), ("zz",)]) == [5, None]


def test_opaque_reapplies_a_replayed_txid_to_the_previous_value() -> None:
    factory, s = _state("opaque")
    s.begin_commit(1)
    s.multi_update([("a",)], [add(2)])
    s.commit(1)
    s.begin_commit(2)
    assert s.multi_update([("a",)], [add(3)]) == [5]
    s.commit(2)
    assert memory.stored(STORES, factory.state_id)[("a",)] == [2, 2, 5]
    s.begin_commit(2)                       # txid 2 replayed with other rows
    assert s.multi_update([("a",)], [add(10)]) == [12]
    s.commit(2)
    assert memory.stored(STORES, factory.state_id)[("a",)] == [2, 2, 12]
    assert s.multi_get([("a",)]) == [12]


def test_non_transactional_applies_every_time() -> None:
    factory, s = _state("non_transactional")
    for _ in range(2):
        s.begin_commit(1)
        s.multi_update([("a",)], [add(2)])
        s.commit(1)
    assert memory.stored(STORES, factory.state_id) == {("a",): 4}


def test_writes_outside_a_commit_are_refused() -> None:
    _, s = _state("transactional")
    with pytest.raises(RuntimeError, match="inside a commit"):
        s.multi_put([("a",)], [1])


def test_a_key_holding_a_list_is_the_key_holding_that_tuple() -> None:
    # a row that crossed workers carries lists where its tuples were
    factory, s = _state("transactional")
    s.begin_commit(1)
    s.multi_update([((1, 2), "a")], [add(2)])
    s.commit(1)
    assert s.multi_get([([1, 2], "a"), ((1, 2), "a")]) == [2, 2]
    assert memory.stored(STORES, factory.state_id) == {((1, 2), "a"): [1, 2]}


def test_a_nan_key_is_found_again_as_another_nan_object() -> None:
    # a NaN that crossed workers is a new object, and NaN != NaN
    factory, s = _state("transactional")
    for txid in (1, 2, 3):
        s.begin_commit(txid)
        s.multi_update([(float("nan"), "a")], [add(1)])
        s.commit(txid)
    assert s.multi_get([(float("nan"), "a")]) == [3]
    assert len(memory.stored(STORES, factory.state_id)) == 1


def test_keys_are_apart_or_alike_as_the_fields_grouping_routes_them() -> None:
    class Kind(enum.StrEnum):
        COW = "cow"

    _, s = _state("non_transactional")
    s.begin_commit(1)
    # 1, 1.0 and True go to different tasks; a StrEnum arrives as its str, a tuple as a list
    s.multi_update([(1,), (1.0,), (True,), (0.0,), (-0.0,), (Kind.COW,), (("t", 1),)],
                   [add(1), add(2), add(3), add(4), add(5), add(6), add(7)])
    s.multi_update([("cow",), (["t", 1],)], [add(10), add(10)])
    s.commit(1)
    assert s.multi_get([(1,), (1.0,), (True,), (0.0,), (-0.0,), ("cow",), (["t", 1],)]) == [
        1, 2, 3, 4, 5, 16, 17]
    assert s.multi_get([(Decimal("1"),), (b"1",), ("1",)]) == [None, None, None]


def test_stored_gives_each_key_with_the_values_it_was_written_with() -> None:
    factory, s = _state("non_transactional")
    s.begin_commit(1)
    s.multi_put([(2.5, ["l", 1])], [9])
    s.commit(1)
    [(key, value)] = memory.stored(STORES, factory.state_id).items()
    assert key == (2.5, ("l", 1)) and type(key[0]) is float and value == 9
