"""``emit`` checks the values against the stream's declared fields on every emit path (one
clear error naming the component, stream, fields and count; the tuple fails, the topology goes
on), and ``stream=None`` is the default stream, as streamparse and pystorm spell it."""
from __future__ import annotations

from typing import Any

import pytest

from squall import Bolt, LocalCluster, Spout, Stream, TopologyBuilder, TopologyError
from squall.testing import complete_topology, wait_until

from tests.topology.conftest import info_errors


class Pairs(Bolt):
    """Emits ``[word, 1]``; a word "bad" emits one value too many (``[word, 1, 2]``)."""

    outputs = [Stream(["word", "n"]), Stream(["word"], name="side")]
    many = False

    def process(self, tup: Any) -> None:
        word = tup.values[0]
        values = [word, 1, 2] if word == "bad" else [word, 1]
        if self.many:
            self.emit_many([values])
        else:
            self.emit(values, stream=None)


class ManyPairs(Pairs):
    many = True


class ThreadedPairs(Pairs):
    dedicated_thread = True


class Words(Spout):
    outputs = ["w"]


class Sink(Bolt):
    outputs = ["word", "n"]

    def process(self, tup: Any) -> None:
        self.emit(tup.values)


def _topology(cls: type, sinks: int = 1) -> Any:
    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("pairs", cls).shuffle_grouping("words")
    for i in range(sinks):
        b.set_bolt(f"sink{i}", Sink, parallelism=2).fields_grouping("pairs", ["word"])
    return b.create_topology()


@pytest.mark.parametrize("cls,sinks,acking", [
    (Pairs, 1, True),           # anchored fast path
    (Pairs, 1, False),          # plain fast path
    (Pairs, 2, True),           # two subscribers: the general path
    (ManyPairs, 1, True),       # emit_many
    (ThreadedPairs, 1, True),   # checked in the component's own thread
])
def test_wrong_count_fails_that_tuple_and_the_rest_flow(cls: type, sinks: int,
                                                         acking: bool) -> None:
    conf = {} if acking else {"topology.acker.executors": 0}
    result = complete_topology(_topology(cls, sinks), {"words": [["a"], ["bad"], ["b"]]},
                               conf=conf, timeout=60)
    assert sorted(result.tuples("sink0")) == [("a", 1), ("b", 1)]
    if acking:
        assert result.acked == {0, 2}
        assert result.failed == {1}


def test_error_names_component_stream_fields_and_count(cluster: LocalCluster) -> None:
    b = TopologyBuilder()

    class Words(Spout):
        outputs = ["w"]
        sent = False

        def next_tuple(self) -> None:
            if not self.sent:
                self.sent = True
                self.emit(["bad"], tup_id=1)

    b.set_spout("words", Words)
    b.set_bolt("pairs", Pairs).shuffle_grouping("words")
    b.set_bolt("sink", Sink).shuffle_grouping("pairs")
    cluster.submit_topology("arity", {}, b.create_topology())
    wait_until(lambda: info_errors(cluster, "arity", "pairs"), 60,
               message="the error of pairs")
    error = info_errors(cluster, "arity", "pairs")[0]["error"]
    assert "'pairs'" in error and "3 value(s)" in error and "'default'" in error
    assert "['word', 'n']" in error


def test_spout_emit_checked_too(cluster: LocalCluster) -> None:
    class Bad(Spout):
        outputs = ["a", "b"]
        sent = 0

        def next_tuple(self) -> None:
            if self.sent < 2:
                self.sent += 1
                try:
                    self.emit(["only one"], tup_id=self.sent)
                except TopologyError as exc:
                    SPOUT_ERRORS.append(str(exc))

    b = TopologyBuilder()
    b.set_spout("bad", Bad)
    b.set_bolt("sink", Sink).shuffle_grouping("bad")
    cluster.submit_topology("spout-arity", {}, b.create_topology())
    wait_until(lambda: len(SPOUT_ERRORS) == 2, 60, message="both emits refused")
    assert "'bad'" in SPOUT_ERRORS[0] and "1 value(s)" in SPOUT_ERRORS[0]


SPOUT_ERRORS: list[str] = []
