"""The built-in serializers pass the serializer contract; a few of their own promises."""
from __future__ import annotations

import pytest

from squall import SerializationError
from squall.serializers.json import JsonSerializer
from squall.serializers.msgpack import MsgpackSerializer
from squall import ConfigError
from squall.testing.contracts.serializer import RichValuesContract, SerializerContract


class TestMsgpackContract(SerializerContract, RichValuesContract):
    @pytest.fixture
    def serializer_factory(self):  # type: ignore[no-untyped-def]
        return MsgpackSerializer


class TestJsonContract(SerializerContract, RichValuesContract):
    @pytest.fixture
    def serializer_factory(self):  # type: ignore[no-untyped-def]
        return JsonSerializer


def test_msgpack_batch_of_tree_ids() -> None:
    ser = MsgpackSerializer()
    entries = [[5, 1, "default", ["w"], 2**64 - 1, [2**64 - 2, 0]]]
    assert ser.loads(ser.dumps(entries)) == entries


def test_ints_beyond_64_bits_are_refused() -> None:
    # the message says what is wrong with the value, not "register int"
    with pytest.raises(SerializationError, match=r"the int 18446744073709551616 is beyond the "
                                                 r"64 bits msgpack carries"):
        MsgpackSerializer().dumps([2**64])
    with pytest.raises(SerializationError, match=r"the int -10{22}\.\.\. is beyond"):
        MsgpackSerializer().dumps([-10**60])


def test_json_is_readable_text() -> None:
    ser = JsonSerializer()
    assert ser.dumps(["a", 1, None]) == b'["a",1,null]'
    assert ser.loads(ser.dumps({"b": b"\x00\xff"})) == {"b": b"\x00\xff"}


def test_errors_name_the_problem() -> None:
    with pytest.raises(SerializationError, match="msgpack"):
        MsgpackSerializer().loads(b"\xc1")
    with pytest.raises(SerializationError, match="json"):
        JsonSerializer().dumps(object())


@pytest.mark.parametrize("register", [
    {"nowhere.at.all:Thing": ["a:b", "c:d"]},
    {"datetime:datetime": ["datetime:date"]},
    {"datetime:datetime": ["datetime:no_such", "datetime:date"]},
    ["datetime:datetime"],
])
def test_a_bad_registration_is_one_config_error(register) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match="topology.serializer.register"):
        MsgpackSerializer({"topology.serializer.register": register})


@pytest.mark.parametrize("serializer", [MsgpackSerializer, JsonSerializer])
def test_a_bytearray_travels_as_bytes_do(serializer) -> None:  # type: ignore[no-untyped-def]
    # json refused it ("cannot serialize an object of type bytearray") where msgpack sent it
    ser = serializer()
    raw = [bytearray(b"\x00\xffab"), {"k": bytearray()}, [bytearray(b"z")]]
    same = [b"\x00\xffab", {"k": b""}, [b"z"]]
    assert ser.dumps(raw) == ser.dumps(same)
    back = ser.loads(ser.dumps(raw))
    assert back == same and type(back[0]) is bytes
