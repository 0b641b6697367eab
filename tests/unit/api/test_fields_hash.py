"""The fields-grouping hash is stable and documented (API.md section 3), and the built-in
groupings pick tasks the way their docstrings say."""
from __future__ import annotations

import datetime as dt
import enum
import os
import subprocess
import sys
import zlib
from collections import Counter
from decimal import Decimal
from typing import Any

import pytest

from squall import GroupingDeclaration, TopologyError
from squall.api.groupings import (
    FieldsGrouping, GlobalGrouping, PartialKeyGrouping, ShuffleGrouping, fields_hash,
)
from squall.serializers.json import JsonSerializer
from squall.serializers.msgpack import MsgpackSerializer
from squall.serializers.types import ValueTypes
from squall.testing import param_id
from squall.testing.contracts.grouping import DeterministicGrouping, GroupingContract
from squall.testing.contracts.serializer import Point

#: the value documented in squall.api.groupings' module docstring
COW = 2580823964
PROBE = [["cow"], ["a", "b"], [1], [None, True, 1.5, b"x"], ["🐄", -7, 2**64 - 1],
         # a set's own order follows the salted hash; a dict's keys may not sort together
         [frozenset({"alpha", "beta", "gamma", "delta", 7})], [{1: "a", "b": {"x", "y"}}],
         # items that encode alike (1 and "1") in a set, whose order follows the salted hash
         [frozenset({1, "1", 2, "2", 3, "3", 4, "4", 5, "5", None, "null", "true", False})]]


def test_documented_constant() -> None:
    assert fields_hash(["cow"]) == COW == zlib.crc32(b"cow")
    assert fields_hash(("cow",)) == COW
    assert fields_hash(["a", "b"]) == zlib.crc32(b"a\x00b")       # NUL-joined encodings
    assert fields_hash([True]) == zlib.crc32(b"true")
    assert fields_hash([None]) == zlib.crc32(b"null")
    assert fields_hash([42]) == zlib.crc32(b"42")
    assert fields_hash([b"\x00\x01"]) == zlib.crc32(b"\x00\x01")


@pytest.mark.parametrize("seed", ["0", "12345", "random"])
def test_same_in_another_process_with_another_hash_seed(seed: str) -> None:
    code = ("from squall.api.groupings import fields_hash\n"
            f"print([fields_hash(v) for v in {PROBE!r}])")
    env = {**os.environ, "PYTHONHASHSEED": seed}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, timeout=60).stdout
    assert out.strip() == str([fields_hash(v) for v in PROBE])


def test_fields_grouping_picks_by_hash_over_sorted_targets() -> None:
    g = FieldsGrouping(["word"], ["n", "word"])
    g.prepare(None, ("src", "default"), [12, 10, 11])
    for word in ("cow", "moon", "jumped", "over", ""):
        expected = [10, 11, 12][fields_hash([word]) % 3]
        assert g.choose_tasks(1, [0, word]) == [expected]


def test_fields_grouping_on_two_fields_and_non_str_values() -> None:
    g = FieldsGrouping(["a", "b"], ["a", "x", "b"])
    g.prepare(None, ("src", "default"), [1, 2, 3, 4])
    for a, b in [("x", 1), (None, b"y"), (2.5, True)]:
        assert g.choose_tasks(9, [a, "ignored", b]) == [1 + fields_hash([a, b]) % 4]
    single = FieldsGrouping(["k"], ["k"])
    single.prepare(None, ("src", "default"), [5, 6, 7])
    assert single.choose_tasks(1, [7]) == [[5, 6, 7][fields_hash([7]) % 3]]


def test_partial_key_uses_at_most_two_tasks_per_key_and_balances() -> None:
    g = PartialKeyGrouping(["k"], ["k"])
    g.prepare(None, ("src", "default"), list(range(1, 9)))
    per_key: dict[str, set[int]] = {}
    load: Counter[int] = Counter()
    for i in range(4000):
        key = "hot" if i % 2 else f"k{i % 50}"
        task = g.choose_tasks(1, [key])
        assert len(task) == 1
        per_key.setdefault(key, set()).update(task)
        load.update(task)
    assert all(1 <= len(tasks) <= 2 for tasks in per_key.values())
    assert len(per_key["hot"]) == 2, "the hot key should be split over its two candidates"


def test_choose_many_agrees_with_choose_one_item_by_item() -> None:
    rows = [["cow", 1], ["moon", 2], ["cow", 3], [7, 4], [["un", "hashable"], 5], [None, 6],
            ["", 7]] * 3
    for fields, targets in ((["w"], [4, 2, 9]), (["w", "n"], [1, 2, 3]), (["w"], [5])):
        g = FieldsGrouping(fields, ["w", "n"])
        g.prepare(None, ("src", "default"), targets)
        assert g.choose_many(rows) == [g.choose_one(r) for r in rows]
        strings = [r for r in rows if r[0].__class__ is str]
        assert g.choose_many(strings) == [g.choose_one(r) for r in strings]   # cached now
    pk = PartialKeyGrouping(["w"], ["w", "n"])
    pk.prepare(None, ("src", "default"), [1, 2, 3])
    assert set(pk.choose_many(rows)) <= {1, 2, 3} and len(pk.choose_many(rows)) == len(rows)
    gl = GlobalGrouping()
    gl.prepare(None, ("src", "default"), [8, 3, 5])
    assert gl.choose_many(rows) == [3] * len(rows)


def test_shuffle_choose_many_continues_the_same_round_robin() -> None:
    g = ShuffleGrouping()
    g.prepare(None, ("src", "default"), [1, 2, 3])
    picks = g.choose_many([[0]] * 5) + [g.choose_one([0])] + g.choose_many([[0]] * 6)
    assert Counter(picks) == {1: 4, 2: 4, 3: 4}
    assert picks[:3] == picks[3:6] == picks[6:9] == picks[9:]


class TestFieldsGroupingContract(DeterministicGrouping, GroupingContract):
    @pytest.fixture
    def grouping_factory(self):  # type: ignore[no-untyped-def]
        return lambda: FieldsGrouping(["w"], ["w", "n", "flag"])


class Kind(enum.StrEnum):
    COW = "cow"


class Size(enum.IntEnum):
    BIG = 7


class Word(str):
    def __str__(self) -> str:
        return "not the value"


class Ratio(float):
    pass


class Raw(bytes):
    pass


#: values the serializers carry as another type (a subclass as its base type, an aware
#: datetime with a fixed offset): each must route as the value that arrives
CARRIED_AS_ANOTHER_TYPE: list[Any] = [
    Kind.COW, Size.BIG, Word("moon"), Ratio(2.5), Raw(b"\x00"), [Kind.COW, (Size.BIG, 1)],
    {Kind.COW: Size.BIG}, frozenset({Kind.COW, "x"}),
    dt.datetime(2024, 5, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=2), "CEST")),
    Decimal("1.50"), dt.date(2024, 1, 1), True, False, None, 1.0,
]


@pytest.mark.parametrize("serializer", [MsgpackSerializer({}), JsonSerializer({})],
                         ids=["msgpack", "json"])
@pytest.mark.parametrize("value", CARRIED_AS_ANOTHER_TYPE, ids=param_id)
def test_a_value_hashes_as_the_value_it_arrives_as_after_the_serializer(
        serializer: Any, value: Any) -> None:
    arrived = serializer.loads(serializer.dumps([value]))[0]
    assert fields_hash([value]) == fields_hash([arrived])
    assert fields_hash(["k", value]) == fields_hash(["k", arrived])


def test_subclasses_hash_as_their_base_type_and_bool_stays_apart_from_int() -> None:
    assert fields_hash([Kind.COW]) == fields_hash(["cow"]) == zlib.crc32(b"cow")
    assert fields_hash([Word("moon")]) == fields_hash(["moon"])
    assert fields_hash([Size.BIG]) == fields_hash([7]) == zlib.crc32(b"7")
    assert fields_hash([Ratio(2.5)]) == fields_hash([2.5])
    assert fields_hash([True]) == zlib.crc32(b"true") != fields_hash([1])
    assert fields_hash([{1: "a", "1": "b"}]) == fields_hash([{"1": "b", 1: "a"}])


REGISTER = {"topology.serializer.register": {
    "squall.testing.contracts.serializer:Point": [
        "squall.testing.contracts.serializer:point_to_list",
        "squall.testing.contracts.serializer:point_from_list"]}}


def test_a_registered_type_hashes_as_the_serializer_carries_it() -> None:
    types = ValueTypes(REGISTER)
    # the default repr holds an address: equal objects, one hash, whatever their address
    points = [Point(3, 4) for _ in range(20)]
    assert len({fields_hash([p], types) for p in points}) == 1
    assert fields_hash([Point(3, 4)], types) != fields_hash([Point(4, 3)], types)
    for grouping in (FieldsGrouping(), PartialKeyGrouping()):
        grouping.configure(GroupingDeclaration(("p",), ("p", "n"), REGISTER))
        grouping.prepare(None, ("src", "default"), [1, 2, 3, 4, 5])
        chosen = {grouping.choose_one([Point(1, 2), n]) for n in range(10)}
        assert len(chosen) <= (1 if type(grouping) is FieldsGrouping else 2)
    single = FieldsGrouping()
    single.configure(GroupingDeclaration(("p",), ("p", "n"), REGISTER))
    single.prepare(None, ("src", "default"), [1, 2, 3, 4, 5])
    assert single.choose_one([Point(1, 2), 0]) == 1 + fields_hash([Point(1, 2)], types) % 5


class Opaque:
    """Neither registered nor with a repr of its own."""


def test_an_object_without_a_stable_encoding_is_refused_naming_its_type() -> None:
    g = FieldsGrouping(["k"], ["k"])
    g.prepare(None, ("src", "default"), [1, 2])
    with pytest.raises(TopologyError, match="Opaque.*topology.serializer.register"):
        g.choose_one([Opaque()])
    with pytest.raises(TopologyError, match="Point"):      # its registration not in the conf
        fields_hash([Point(1, 2)])
    assert g.choose_one(["still routes"]) in (1, 2)
