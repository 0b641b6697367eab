"""What a task takes from the wire: its subscriptions' streams from their components, at
their arity (issue #30: bytes from outside never reach a bolt)."""
from __future__ import annotations

from typing import Any

import pytest

from squall import Bolt, Spout, Stream, TopologyBuilder
from squall.runtime.streams import accepts
from squall.runtime.system import add_system_components
from squall.runtime.wire.codec import check_entries


class Src(Spout):
    outputs = [Stream(["a", "b"]), Stream(["x"], name="side")]

    def next_tuple(self) -> None:
        pass


class Sink(Bolt):
    def process(self, tup: Any) -> None:
        pass


def topology() -> Any:
    b = TopologyBuilder()
    b.set_spout("src", Src)
    b.set_bolt("sink", Sink).shuffle_grouping("src")
    return add_system_components(b.create_topology(), {"topology.acker.executors": 1})


def test_each_kind_of_task_takes_what_it_subscribes_to() -> None:
    topo = topology()
    assert accepts(topo, "sink") == {("src", "default"): 2}
    assert accepts(topo, "src") == {("__acker", "__ack_ack"): 1, ("__acker", "__ack_fail"): 1,
                                    ("__acker", "__ack_reset"): 1}
    assert accepts(topo, "__acker") == {(None, "__ack_init"): 3, (None, "__ack_ack"): 2,
                                        (None, "__ack_fail"): 2, (None, "__ack_reset"): 2}


GOOD = [2, "default", [2, ["w", "v"], [1, 2]], [5, 6], [[7], 0]]


@pytest.mark.parametrize("entry,why", [
    ([99, "default", [1, ["w"], [1]], 0, None], "not a task of this topology"),
    ([2, "side", [1, ["w"]], 0, None], "does not subscribe"),           # not subscribed
    ([0, "default", [1, ["w"], [1]], 0, None], "does not subscribe"),   # from the system
    ([3, "__ack_ack", [1, [1]], 0, None], "does not subscribe"),        # acks to a bolt
    ([2, "default", [1, ["w"]], 0, None], "has 2 fields"),              # arity
    ([2, "default", [1, ["w"], [1], [2]], 0, None], "has 2 fields"),
    ([2, "default", [1, "w", "x"], 0, None], "does not hold"),          # not lists
    ([2, "default", [2, ["w"], [1]], 0, None], "does not hold"),        # short columns
    ([2, "default", [1, ["w"], [1, 2]], 0, None], "does not hold"),
    ([2, "default", ["1", ["w"], [1]], 0, None], "does not hold"),      # not a count
])
def test_a_wrong_source_stream_or_arity_is_refused(entry: list[Any], why: str) -> None:
    topo = topology()
    sink = topo.tasks("sink")[0]
    with pytest.raises((ValueError, TypeError), match=why):
        check_entries(sink, [entry], accepts(topo, "sink"), topo.task_to_component, False)


@pytest.mark.parametrize("entry", [
    [2, "default", [1, ["w"], [1]], "x", None],         # an edge that is not an int
    [2, "default", [1, ["w"], [1]], 0, ["r"]],          # roots that are not ints
    [2, "default", [2, ["w", "v"], [1, 2]], [5], [[7]]],   # ids and tuples disagree
    [2, "default", [2, ["w", "v"], [1, 2]], [5, 6], [7, [8]]],    # by tree: a roots list
    [2, "default", [2, ["w", "v"], [1, 2]], [5, "6"], [7, 8]],    # by tree: an id not an int
    [2, "default", [2, ["w", "v"], [1, 2]], [5], [7]],   # by tree: ids and tuples disagree
    [2, "default", [1, ["w"], [1]], [5], [["r"]]],
    [2, "default", [2, ["w", "v"], [1, 2]], [[5, 1]], [[7]]],  # counts do not add up
    [2, "default", [1, ["w"], [1]], [[5, "1"]], [[7]]],
])
def test_a_message_of_several_entries_is_checked_deep(entry: list[Any]) -> None:
    topo = topology()
    sink = topo.tasks("sink")[0]
    check_entries(sink, [GOOD, GOOD], accepts(topo, "sink"), topo.task_to_component, True)
    with pytest.raises(ValueError):
        check_entries(sink, [GOOD, entry], accepts(topo, "sink"), topo.task_to_component,
                      True)


def test_the_ackers_streams_carry_ints_only() -> None:
    topo = topology()
    acker = topo.tasks("__acker")[0]
    acc = accepts(topo, "__acker")
    check_entries(acker, [[0, "__ack_ack", [1, [1], [2]], 0, None]], acc,
                  topo.task_to_component, False)
    with pytest.raises(ValueError, match="not an int"):
        check_entries(acker, [[0, "__ack_ack", [1, [1], ["x"]], 0, None]], acc,
                      topo.task_to_component, False)
