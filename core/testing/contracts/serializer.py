"""The serializer contract suite: what every ``squall.serializers`` driver must do.

Use it by subclassing in a pytest module and overriding the ``serializer_factory`` fixture::

    from squall.testing.contracts.serializer import SerializerContract

    class TestMySerializer(SerializerContract):
        @pytest.fixture
        def serializer_factory(self):
            return MySerializer              # any callable conf -> Serializer

The checks use only ``dumps`` / ``loads`` (see :class:`squall.Serializer`):

* ``None``, bools, ints from ``-2**63`` to ``2**64 - 1`` (tuple-tree ids are unsigned 64-bit),
  floats (including infinities), str (unicode beyond the BMP), bytes (empty and every byte
  value), lists and tuples (decoded as lists, nested ones too), nested dicts with str keys
  round-trip equal, with their types (a bool stays a bool, bytes stay bytes, an int stays an
  int);
* a batch shaped like the runtime's (10 000 entries ``[task, src, stream, values, id, roots]``)
  round-trips;
* ``dumps`` returns ``bytes``; the same object encodes the same way twice;
* an object it cannot encode (``object()``, also deep inside containers) raises
  :class:`~squall.errors.SerializationError`, and so does ``loads`` of bytes that are not a
  valid encoding (:attr:`garbage`); the serializer keeps working afterwards;
* what ``dumps`` accepts, ``loads`` reads back as it was: a dict whose keys are not str
  (tuples, ints, None, bools, floats, bytes, or the keys JSON-like formats reserve) and a
  value nested 5000 deep either come back equal, each key with its type, or are refused by
  ``dumps`` with SerializationError (the receiving worker could not read them: a value the
  sender refuses fails only its own tuple).

:class:`RichValuesContract` (used the same way) checks the values squall's own serializers add
(:mod:`squall.serializers.types`): datetime (naive and aware), date, time, timedelta, Decimal,
UUID, set, frozenset, nested in containers and in each other, and a type registered through
``topology.serializer.register``; as dict keys, they come back or are refused by ``dumps``.
"""
from __future__ import annotations

import datetime as dt
import math
import uuid
from decimal import Decimal
from typing import Any
from collections.abc import Callable

import pytest

from squall.errors import SerializationError
from squall.spi.serializer import Serializer
from squall.testing.ids import param_id

__all__ = ["RichValuesContract", "SerializerContract", "normalize"]

SCALARS: list[Any] = [
    None, True, False, 0, 1, -1, 127, 128, 255, 256, 65535, 65536, 2**31 - 1, -2**31,
    2**32, 2**63 - 1, -2**63, 2**63, 2**64 - 1, 0.0, -0.0, 1.5, -2.25, 1e300, 5e-324,
    float("inf"), float("-inf"), "", "cow", "naïve café", "漢字", "emoji 🐄🌊", "nul\x00in",
    b"", b"\x00", bytes(range(256)), b"\xff" * 1000,
]


def normalize(obj: Any) -> Any:
    """``obj`` with tuples turned into lists (serializers may decode either)."""
    if isinstance(obj, (list, tuple)):
        return [normalize(x) for x in obj]
    if isinstance(obj, dict):
        return {k: normalize(v) for k, v in obj.items()}
    return obj


#: dicts with keys other than str: each comes back with its keys' types, or ``dumps`` refuses it
ODD_KEYS: list[Any] = [
    {(1, 2): "x"}, {(1, (2, "b")): [1, 2]}, {1: "a"}, {-7: "a", "b": 1}, {None: "n"},
    {True: "t"}, {1.5: "f"}, {b"k": 1}, {"__bytes__": "aGk="}, {"__squall__": ["set", [1]]},
    [{"fine": 1}, {"deep": {2: "two"}}],
]


def _same_keys(a: Any, b: Any) -> bool:
    """Equal (tuples as lists in values), every dict key of the same type and value."""
    if isinstance(a, dict):
        return isinstance(b, dict) and {(type(k), k) for k in a} == {(type(k), k) for k in b} \
            and all(_same_keys(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(
            _same_keys(x, y) for x, y in zip(a, b, strict=True))
    return _same(a, b)


def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def _same(a: Any, b: Any) -> bool:
    """Equal with the same types (True != 1 here, b"x" != "x"), floats bit-for-bit."""
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(
            _same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return bool(a == b)


class SerializerContract:
    """Base class of the serializer contract tests; override ``serializer_factory``."""

    #: bytes that are not a valid encoding for this serializer; override if one of them
    #: happens to decode for yours
    garbage: list[bytes] = [b"\xc1", b"\x92\x01", b"{not json", b"\xff\xfe\xfd\x00\x81"]

    @pytest.fixture
    def serializer_factory(self) -> Callable[[dict[str, Any]], Serializer]:
        raise NotImplementedError("override the serializer_factory fixture")

    @pytest.fixture
    def ser(self, serializer_factory: Callable[[dict[str, Any]], Serializer]) -> Serializer:
        return serializer_factory({})

    def roundtrip(self, ser: Serializer, obj: Any) -> Any:
        data = ser.dumps(obj)
        assert isinstance(data, bytes), f"dumps returned {type(data).__name__}, not bytes"
        return ser.loads(data)

    @pytest.mark.parametrize("value", SCALARS, ids=lambda v: f"{type(v).__name__}:{param_id(v)}"[:40])
    def test_scalar_roundtrip(self, ser: Serializer, value: Any) -> None:
        got = self.roundtrip(ser, value)
        assert _same(got, value), f"{value!r} came back as {got!r}"

    def test_nan_roundtrip(self, ser: Serializer) -> None:
        got = self.roundtrip(ser, float("nan"))
        assert isinstance(got, float) and math.isnan(got)

    def test_containers_roundtrip(self, ser: Serializer) -> None:
        value = {
            "list": [1, "two", 3.0, None, True, b"six"],
            "tuple": ("a", 2, ("nested", (b"deep",))),
            "empty": {"list": [], "dict": {}, "str": ""},
            "nested": {"a": {"b": {"c": {"d": [2**64 - 1, -2**63, {"e": "🐄"}]}}}},
            "unicode key ü": "value",
        }
        got = self.roundtrip(ser, value)
        assert _same(normalize(got), normalize(value))

    def test_tuples_decode_as_lists(self, ser: Serializer) -> None:
        """The runtime's wire entries hold tuples (a tuple's roots) and are read as lists: a
        serializer that gives tuples back would have every such batch dropped."""
        got = self.roundtrip(ser, ("the", ("cow", 7), [(1, 2)]))
        assert got == ["the", ["cow", 7], [[1, 2]]]
        assert got.__class__ is list and got[1].__class__ is list
        assert got[2][0].__class__ is list

    def test_runtime_batch_of_10k(self, ser: Serializer) -> None:
        batch = [[i % 7 + 1, 3, "default" if i % 3 else "words", [f"word{i}", i, i * 0.5],
                  (i * 2654435761) % 2**64, [(i * 40503) % 2**64]] for i in range(10_000)]
        got = self.roundtrip(ser, batch)
        assert len(got) == len(batch)
        assert _same(normalize(got), normalize(batch))

    def test_deterministic_encoding(self, ser: Serializer) -> None:
        value = [1, "a", {"k": [b"x", 2.5]}]
        assert ser.dumps(value) == ser.dumps(value)

    def test_instances_interoperate(self, serializer_factory: Callable[..., Serializer]) -> None:
        a, b = serializer_factory({}), serializer_factory({})
        value = [[1, 2, "x", b"y", 2**64 - 1]]
        assert _same(normalize(b.loads(a.dumps(value))), normalize(value))

    @pytest.mark.parametrize("bad", [object(), [1, object()], {"k": [{"deep": object()}]}],
                             ids=["object", "object-in-list", "object-in-dict"])
    def test_unencodable_raises_serialization_error(self, ser: Serializer, bad: Any) -> None:
        with pytest.raises(SerializationError):
            ser.dumps(bad)
        assert self.roundtrip(ser, ["still", "works"]) in (["still", "works"],
                                                           ("still", "works"))

    @pytest.mark.parametrize("value", ODD_KEYS, ids=lambda v: repr(v)[:40])
    def test_dict_keys_come_back_with_their_types_or_are_refused(self, ser: Serializer,
                                                                 value: Any) -> None:
        """A value ``dumps`` writes and ``loads`` cannot read (a tuple key read back as an
        unhashable list) made the receiving worker drop the whole batch it came in; one
        that comes back changed (JSON's ``1`` key as ``"1"``) reached a bolt changed."""
        try:
            data = ser.dumps(value)
        except SerializationError:
            return              # refused at the sender: only its tuple fails
        got = ser.loads(data)
        assert _same_keys(got, value), f"{value!r} came back as {got!r}"

    def test_a_value_nested_too_deep_is_refused_or_read_back(self, ser: Serializer) -> None:
        value = _nested(5000)
        try:
            data = ser.dumps(value)
        except SerializationError:
            assert self.roundtrip(ser, [[1]]) == [[1]]
            return
        assert ser.loads(data) == value

    def test_garbage_raises_serialization_error(self, ser: Serializer) -> None:
        for data in self.garbage:
            with pytest.raises(SerializationError):
                ser.loads(data)
        assert self.roundtrip(ser, 42) == 42


class Point:
    """A user type for the registration check (``topology.serializer.register``)."""

    def __init__(self, x: int, y: int) -> None:
        self.x, self.y = x, y

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Point) and (self.x, self.y) == (other.x, other.y)

    __hash__ = None  # type: ignore[assignment]


def point_to_list(p: Point) -> list[int]:
    return [p.x, p.y]


def point_from_list(v: list[int]) -> Point:
    return Point(*v)


RICH: list[Any] = [
    dt.datetime(2026, 11, 25, 18, 0, 1, 250),
    dt.datetime(2026, 11, 25, 18, 0, 1, tzinfo=dt.timezone(dt.timedelta(hours=-5, minutes=-30))),
    dt.date(1999, 12, 31), dt.time(23, 59, 58, 7), dt.timedelta(days=-2, seconds=5),
    Decimal("3.14159265358979323846"), Decimal("-0.00"), uuid.UUID(int=2**128 - 1),
    {1, "a", (2, ("b", 3))}, frozenset({b"x", 4.5}), set(),
]


class RichValuesContract:
    """Extra values a serializer carries across workers; override ``serializer_factory``."""

    @pytest.fixture
    def serializer_factory(self) -> Callable[[dict[str, Any]], Serializer]:
        raise NotImplementedError("override the serializer_factory fixture")

    @pytest.mark.parametrize("value", RICH, ids=lambda v: f"{type(v).__name__}:{param_id(v)}"[:40])
    def test_rich_value_roundtrip(self, serializer_factory: Callable[..., Serializer],
                                  value: Any) -> None:
        ser = serializer_factory({})
        got = ser.loads(ser.dumps(value))
        assert type(got) is type(value) and got == value, f"{value!r} came back as {got!r}"
        if isinstance(value, dt.datetime):
            assert got.utcoffset() == value.utcoffset()

    def test_rich_values_nested(self, serializer_factory: Callable[..., Serializer]) -> None:
        ser = serializer_factory({})
        value = {"when": [dt.date(2020, 2, 29), {"ids": frozenset({uuid.UUID(int=7)})}],
                 "amounts": (Decimal("1.5"), [Decimal("2")])}
        got = ser.loads(ser.dumps(value))
        assert normalize(got) == normalize(value)

    @pytest.mark.parametrize("value", [
        {dt.date(2020, 2, 29): 1}, {uuid.UUID(int=7): "u"}, {frozenset({(1, 2)}): "fs"},
        {(dt.date(2020, 2, 29), Decimal("1.5")): "t"}, {"nested": {(1, dt.time(7)): [1]}},
    ], ids=lambda v: repr(v)[:40])
    def test_rich_values_as_dict_keys_come_back_or_are_refused(
            self, serializer_factory: Callable[..., Serializer], value: Any) -> None:
        ser = serializer_factory({})
        try:
            data = ser.dumps(value)
        except SerializationError:
            return
        got = ser.loads(data)
        assert _same_keys(got, value), f"{value!r} came back as {got!r}"

    def test_registered_type_roundtrips_and_unregistered_is_an_error(
            self, serializer_factory: Callable[..., Serializer]) -> None:
        here = __name__
        ser = serializer_factory({"topology.serializer.register": {
            f"{here}:Point": [f"{here}:point_to_list", f"{here}:point_from_list"]}})
        value = [Point(1, 2), {"p": {"inner": Point(-3, 4)}}]
        assert normalize(ser.loads(ser.dumps(value))) == normalize(value)
        with pytest.raises(SerializationError, match="Point"):
            serializer_factory({}).dumps([Point(1, 2)])
        with pytest.raises(SerializationError, match="Point"):
            serializer_factory({}).loads(ser.dumps([Point(1, 2)]))
