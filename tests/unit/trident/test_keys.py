"""Trident group keys compare as the fields grouping routes them, in a batch and in a state."""
from __future__ import annotations

import doctest
import enum
from collections import Counter

import pytest

from squall import TopologyError
from squall.api.groupings import fields_hash
from squall.testing import param_id
from squall.trident import keys
from squall.trident.keys import GroupKey, canonical
from squall.trident.runtime.evaluate import group_keys, projector


class Kind(enum.StrEnum):
    COW = "cow"


class Size(enum.IntEnum):
    BIG = 7


def test_doctests() -> None:
    assert doctest.testmod(keys).failed == 0


#: pairs of keys routed alike (a value as emitted, and as it arrives from another worker)
ALIKE = [((float("nan"),), (float("nan"),)), ((Kind.COW,), ("cow",)), ((Size.BIG,), (7,)),
         ((("a", 1),), (["a", 1],)), (({"a": [1]},), ({"a": (1,)},)),
         ((frozenset({1, "x"}),), ({"x", 1},)), ((b"\x00", None), (b"\x00", None))]
#: keys Python finds equal that the fields grouping sends apart
APART = [(1,), (1.0,), (True,), (0.0,), (-0.0,), (Kind.COW, 1), ("cow", True), ((1, 2),),
         ((1.0, 2),), ({"a": 1},), ({"a": True},)]


@pytest.mark.parametrize(("a", "b"), ALIKE, ids=param_id)
def test_keys_routed_alike_are_one_key(a: tuple, b: tuple) -> None:
    assert fields_hash(a) == fields_hash(b)
    assert canonical(a) == canonical(b) and hash(canonical(a)) == hash(canonical(b))
    assert GroupKey(a) == GroupKey(b) and len({GroupKey(a), GroupKey(b)}) == 1


def test_keys_routed_apart_are_apart() -> None:
    assert len({canonical(k) for k in APART}) == len(APART)
    assert len({GroupKey(k) for k in APART}) == len(APART)


def test_a_group_key_holds_and_gives_the_values_of_the_row() -> None:
    k = GroupKey((["l", 1], 2.5))
    assert k + (3,) == (["l", 1], 2.5, 3) and type(k + (3,)) is tuple
    assert list(k) == [["l", 1], 2.5]


def test_a_batch_groups_as_the_routing_does() -> None:
    nans = [(float("nan"), "n") for _ in range(3)]          # three objects, as if arrived
    src = nans + [(1, "a"), (1.0, "b"), (True, "c"), (Kind.COW, "d"), ("cow", "e")]
    counted = Counter(group_keys(projector([0]), src))
    assert sorted(counted.values()) == [1, 1, 1, 2, 3]
    assert {type(k[0]) for k in counted} == {float, int, bool, Kind}
    plain = group_keys(projector([0]), [("a", 1), (None, 2), (3, 3)])
    assert [type(k) for k in plain] == [tuple] * 3                 # no wrapping needed


def test_an_object_without_a_stable_encoding_is_refused_naming_its_type() -> None:
    class Opaque:
        pass
    with pytest.raises(TopologyError, match="Opaque"):
        canonical((Opaque(),))


def test_keys_index_a_dict_as_they_are_only_where_python_equality_is_the_routings() -> None:
    assert keys.equal_as_routed([("a", 1), (None, b"x")])
    assert keys.equal_as_routed([("a", True), (False,)])
    assert keys.equal_as_routed([("a", 1.5), (2.5,)])
    assert keys.equal_as_routed([(("a", (1, None)),), ((),)])
    for odd in ([(1,), (True,)], [(1,), (1.0,)], [(0.0,), (-0.0,)], [(float("nan"),)],
                [(Kind.COW,)], [(["a"],)], [((1, (True,)),)], [({"a"},)]):
        assert not keys.equal_as_routed(odd), odd
    floats = group_keys(projector([0]), [(1.5,), (1.5,), (0.0,), (-0.0,)])
    assert sorted(Counter(floats).values()) == [1, 1, 2]         # 0.0 and -0.0 apart
