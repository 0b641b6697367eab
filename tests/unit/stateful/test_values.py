"""The encoding of a stateful task's values (squall.stateful.values): with msgpack a tuple
comes back a tuple, nested too, and values written before still read."""
from __future__ import annotations

import collections
import datetime as dt
import decimal
import enum

import pytest

from squall.errors import SerializationError
from squall.serializers.json import JsonSerializer
from squall.serializers.msgpack import MsgpackSerializer
from squall.stateful.values import value_codec

SER = MsgpackSerializer({})


class Level(enum.IntEnum):
    HIGH = 3


Point = collections.namedtuple("Point", "x y")


def round_trip(value):
    dumps, loads = value_codec(SER)
    return loads(dumps(value))


@pytest.mark.parametrize("value", [
    (1, "x"), ((1, 2), [3, (4, (5,))]), {"nested": (1, 2), "list": [1, 2]}, (), [()],
    {(1, "a"): (2, 3)}, {"when": (dt.date(2024, 1, 2), decimal.Decimal("1.5"))},
    "plain", 7, None, b"\x00", [1, [2]],
], ids=repr)
def test_a_value_comes_back_with_its_tuples(value):
    back = round_trip(value)
    assert back == value and repr(back) == repr(value)


def test_subclasses_of_native_types_come_back_as_the_serializer_gives_them():
    assert round_trip(Point(1, 2)) == (1, 2)
    assert round_trip(Level.HIGH) == 3
    assert round_trip(collections.OrderedDict(a=(1,))) == {"a": (1,)}
    assert round_trip(collections.Counter(a=2)) == {"a": 2}


def test_values_written_by_the_serializer_still_read():
    dumps, loads = value_codec(SER)
    for value in ({(1, "a"): [2, 3]}, [1, [2]], {"d": dt.date(2024, 1, 2)}, "x"):
        assert loads(SER.dumps(value)) == SER.loads(SER.dumps(value))


def test_what_msgpack_cannot_encode_is_a_serialization_error():
    dumps, loads = value_codec(SER)
    with pytest.raises(SerializationError):
        dumps(object())
    with pytest.raises(SerializationError):
        dumps((2 ** 70,))
    with pytest.raises(SerializationError):
        loads(b"\xc1")


def test_other_serializers_are_used_as_they_are():
    ser = JsonSerializer({})
    assert value_codec(ser) == (ser.dumps, ser.loads)
