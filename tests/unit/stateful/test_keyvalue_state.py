"""KeyValueState: get/put/delete/items, and the encoded changes a checkpoint takes."""
from __future__ import annotations

import pytest

from squall.errors import SerializationError
from squall.serializers.msgpack import MsgpackSerializer
from squall.stateful.state import KeyValueState

SER = MsgpackSerializer({})


def fresh(committed=None) -> KeyValueState:
    return KeyValueState.from_committed(committed or {}, SER.dumps, SER.loads)


def test_get_put_delete_items():
    s = fresh()
    assert s.get("cow") is None and s.get("cow", 0) == 0 and s.get("cow", default=5) == 5
    s.put("cow", 1)
    s.put(("a", 1), {"n": [1, 2]})
    s.put(7, "seven")
    assert s.get("cow") == 1 and s.get(("a", 1)) == {"n": [1, 2]} and s.get(7) == "seven"
    assert "cow" in s and ("a", 1) in s and len(s) == 3
    s.delete("cow")
    s.delete("never there")
    assert s.get("cow") is None
    assert sorted(map(repr, s.items())) == ["(('a', 1), {'n': [1, 2]})", "(7, 'seven')"]


def test_changes_are_encoded_and_taken_once():
    s = fresh({SER.dumps("old"): SER.dumps(3), SER.dumps(["k", 2]): SER.dumps([1])})
    assert s.get("old") == 3 and s.get(("k", 2)) == [1]   # a list key comes back a tuple
    s.put("cow", 1)
    s.put("cow", 2)
    s.delete("old")
    s.delete(("k", 2))
    assert s.take_changes() == {SER.dumps("cow"): SER.dumps(2), SER.dumps("old"): None,
                                SER.dumps(("k", 2)): None}
    assert s.take_changes() == {}


def test_a_value_changed_in_place_is_saved_as_it_is_at_the_checkpoint():
    s = fresh()
    seen: list[str] = []
    s.put("words", seen)
    seen.append("cow")
    assert s.take_changes() == {SER.dumps("words"): SER.dumps(["cow"])}


@pytest.mark.parametrize("value", [object(), 2 ** 70, {"k": object()}])
def test_an_unencodable_value_fails_at_put(value):
    s = fresh()
    with pytest.raises(SerializationError):
        s.put("k", value)
    assert s.get("k") is None and s.take_changes() == {}


def test_an_unhashable_or_unencodable_key_fails_at_put():
    s = fresh()
    with pytest.raises(TypeError):
        s.put({"a": 1}, 1)
    with pytest.raises(TypeError):
        s.put(["a", 1], 1)
    with pytest.raises(SerializationError):
        s.put(object(), 1)
    assert len(s) == 0
