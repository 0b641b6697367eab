"""KeyValueState: get/put/delete/items over encoded keys, and the changes a checkpoint takes."""
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
    assert s.get("cow") is None and s.get("cow", 0) == 0
    s.put("cow", 1)
    s.put(("a", 1), {"n": [1, 2]})            # any encodable key, compared by encoding
    assert s.get("cow") == 1 and s.get(["a", 1]) == {"n": [1, 2]}
    assert "cow" in s and len(s) == 2
    s.delete("cow")
    s.delete("never there")
    assert s.get("cow") is None
    assert list(s.items()) == [(["a", 1], {"n": [1, 2]})]


def test_changes_are_encoded_and_taken_once():
    s = fresh({SER.dumps("old"): SER.dumps(3)})
    assert s.get("old") == 3
    s.put("cow", 1)
    s.put("cow", 2)
    s.delete("old")
    assert s.take_changes() == {SER.dumps("cow"): SER.dumps(2), SER.dumps("old"): None}
    assert s.take_changes() == {}


def test_an_unencodable_value_fails_at_put():
    s = fresh()
    with pytest.raises(SerializationError):
        s.put("k", object())
    assert s.get("k") is None and s.take_changes() == {}
