"""An in-process pystorm bolt's ``ack``, ``fail`` and anchors name its tuples by id, as
pystorm's do: only tuples it received and has not acked or failed yet; anything else is one
error line."""
from __future__ import annotations

from typing import Any

from squall.api.tuple import Source, Tuple
from squall.multilang.tuple_ids import ReceivedTuples

SRC = Source("words", "default", ("word",))


def _received(held: bool) -> tuple[ReceivedTuples, dict[str, list[Any]]]:
    calls: dict[str, list[Any]] = {"ack": [], "fail": [], "error": []}
    received = ReceivedTuples(calls["ack"].append, calls["fail"].append,
                              calls["error"].append, held=held)
    return received, calls


def _tuple(word: str, tid: int | None) -> Tuple:
    return Tuple((word,), 1, SRC, id=tid, roots=None if tid is None else (tid,))


def test_a_held_bolt_names_what_it_received_until_it_acks_or_fails_it() -> None:
    received, calls = _received(held=True)
    a, b, c = _tuple("a", 11), _tuple("b", 12), _tuple("c", 13)
    for t in (a, b, c):
        received.receive(t)
    assert received.anchors([11, b]) == [a, b]
    received.ack(11)
    received.fail(12)
    received.ack(c)                     # the Tuple itself: forgotten as well
    assert calls["ack"] == [a, c] and calls["fail"] == [b]
    for again in (11, 12, 13, 99):      # acked or failed already, or never received
        received.ack(again)
    assert calls["ack"] == [a, c] and len(calls["error"]) == 4
    assert all(e.startswith("MultilangError: ack tuple id ") and "\n" not in e
               for e in calls["error"])


def test_untracked_ids_are_none_and_name_nothing_to_ack() -> None:
    received, calls = _received(held=True)
    received.receive(_tuple("a", None))
    received.ack(None)
    received.fail(None)
    assert received.anchors([None]) == []
    assert calls == {"ack": [], "fail": [], "error": []}


def test_an_unknown_anchor_is_left_out_with_one_error_and_a_bad_id_is_no_crash() -> None:
    received, calls = _received(held=True)
    a = _tuple("a", 11)
    received.receive(a)
    assert received.anchors([11, 12]) == [a]
    received.fail([1, 2])               # unhashable: reported, not raised
    assert calls["fail"] == [] and len(calls["error"]) == 2
    assert calls["error"][0].startswith("MultilangError: an emit anchored to tuple id 12,")


def test_an_auto_acked_bolt_names_the_tuple_in_process_only() -> None:
    received, calls = _received(held=False)
    a, b = _tuple("a", 11), _tuple("b", 12)
    received.current = a
    received.fail(11)
    received.current = b                # a was acked when its process returned
    received.ack(11)
    received.ack(12)
    assert calls["fail"] == [a] and calls["ack"] == [b] and len(calls["error"]) == 1
