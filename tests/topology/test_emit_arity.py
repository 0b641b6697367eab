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


class LazySplit(Bolt):
    """Emits its line's words with ``emit_many`` given a generator; the line "bad" calls
    ``emit_many(3)``."""

    outputs = ["word"]

    def process(self, tup: Any) -> None:
        line = tup.values[0]
        if line == "bad":
            self.emit_many(3)
        else:
            self.emit_many([w] for w in line.split())


@pytest.mark.parametrize("threaded,sinks,acking,debug", [
    (False, 1, True, False),        # anchored fast path
    (False, 1, False, False),       # plain fast path
    (False, 2, True, False),        # two subscribers: the general path
    (True, 1, True, False),         # checked in the component's own thread
    (False, 1, True, True),         # every emit sampled into the events log
])
def test_emit_many_takes_any_iterable_once(threaded: bool, sinks: int, acking: bool,
                                           debug: bool, caplog: pytest.LogCaptureFixture
                                           ) -> None:
    # a generator was a TypeError on the fast paths ("has no len()"), went out whole on the
    # others, and was consumed by the events log's sampling (nothing went out)
    b = TopologyBuilder()
    b.set_spout("words", Words)
    cls = type("LazySplit", (LazySplit,), {"dedicated_thread": threaded})
    b.set_bolt("split", cls).shuffle_grouping("words")
    for i in range(sinks):
        b.set_bolt(f"sink{i}", WordSink).shuffle_grouping("split")
    conf: dict[str, Any] = {} if acking else {"topology.acker.executors": 0}
    if debug:
        conf["topology.debug"] = True
    result = complete_topology(b.create_topology(), {"words": [["a b c"], ["bad"], ["d"]]},
                               conf=conf, timeout=60)
    assert sorted(result.tuples("sink0")) == [("a",), ("b",), ("c",), ("d",)]
    if acking:      # emit_many(3): that tuple fails
        assert result.acked == {0, 2} and result.failed == {1}
    # with one error naming the component (it was "'int' object is not iterable")
    assert "component 'split' called emit_many on stream 'default' with a int (3)" in \
        caplog.text


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


#: shapes of a bolt's emit that are no list or tuple of values: each arity matched, so the
#: emit went through as the str's characters, the dict's keys, the set's items
NOT_VALUES = {"str": lambda w: w[0], "dict": lambda w: {"word": w}, "set": lambda w: {w},
              "bytes": lambda w: w[:1].encode()}


class OneWord(Bolt):
    """Emits ``[word]``; the word "bad" emits ``shape(word)`` instead, on ``how``'s path."""

    outputs = [Stream(["word"]), Stream(["word"], name="to", direct=True)]
    shape = staticmethod(NOT_VALUES["str"])
    how = "emit"

    def process(self, tup: Any) -> None:
        word = tup.values[0]
        values = self.shape(word) if word == "bad" else [word]
        if self.how == "emit_many":
            self.emit_many([values])
        elif self.how == "direct":
            task = self.context.component_tasks("direct")[0]
            self.emit(values, stream="to", direct_task=task)
        else:
            self.emit(values)


class WordSink(Bolt):
    outputs = ["word"]

    def process(self, tup: Any) -> None:
        self.emit(list(tup.values))


@pytest.mark.parametrize("shape", list(NOT_VALUES))
@pytest.mark.parametrize("how, acking, threaded", [
    ("emit", True, False),          # anchored fast path
    ("emit", False, False),         # plain fast path
    ("emit_many", True, False),
    ("direct", True, False),        # the general path
    ("emit", True, True),           # checked in the component's own thread
])
def test_values_that_are_no_list_or_tuple_fail_that_tuple(
        shape: str, how: str, acking: bool, threaded: bool) -> None:
    # emit("w") went out as ("w",) and emit({"word": w}) as ("word",): the dict's keys
    cls = type("OneWord", (OneWord,), {"shape": staticmethod(NOT_VALUES[shape]), "how": how,
                                       "dedicated_thread": threaded})
    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_bolt("one", cls).shuffle_grouping("words")
    b.set_bolt("sink0", WordSink).shuffle_grouping("one")
    b.set_bolt("direct", WordSink).direct_grouping("one", "to")
    conf = {} if acking else {"topology.acker.executors": 0}
    result = complete_topology(b.create_topology(), {"words": [["a"], ["bad"], ["b"]]},
                               conf=conf, timeout=60)
    sink = "direct" if how == "direct" else "sink0"
    assert sorted(result.tuples(sink)) == [("a",), ("b",)]
    if acking:
        assert result.acked == {0, 2} and result.failed == {1}


def test_a_dict_emitted_is_one_clear_error(cluster: LocalCluster) -> None:
    b = TopologyBuilder()

    class Once(Spout):
        outputs = ["w"]
        sent = False

        def next_tuple(self) -> None:
            if not self.sent:
                self.sent = True
                self.emit(["bad"], tup_id=1)

    b.set_spout("words", Once)
    b.set_bolt("one", type("OneWord", (OneWord,), {"shape": staticmethod(NOT_VALUES["dict"])})
               ).shuffle_grouping("words")
    b.set_bolt("sink", WordSink).shuffle_grouping("one")
    cluster.submit_topology("dict", {}, b.create_topology())
    wait_until(lambda: info_errors(cluster, "dict", "one"), 60, message="the error of one")
    error = info_errors(cluster, "dict", "one")[0]["error"]
    assert "'one' emitted a dict on stream 'default'" in error
    assert "emit takes a list or tuple of values" in error


def test_a_spout_emitting_a_str_is_refused(cluster: LocalCluster) -> None:
    # a spout's "the cow jumped" went out as 14 values (refused for its count), its "x" as
    # ("x",)
    class Sentences(Spout):
        outputs = ["sentence"]
        sent = 0

        def next_tuple(self) -> None:
            if self.sent < 2:
                self.sent += 1
                try:
                    self.emit("x", tup_id=self.sent)
                except TopologyError as exc:
                    STR_ERRORS.append(str(exc))

    b = TopologyBuilder()
    b.set_spout("sentences", Sentences)
    b.set_bolt("sink", WordSink).shuffle_grouping("sentences")
    cluster.submit_topology("spout-str", {}, b.create_topology())
    wait_until(lambda: len(STR_ERRORS) == 2, 60, message="both emits refused")
    assert "'sentences' emitted a str" in STR_ERRORS[0]
    assert "emit takes a list or tuple of values" in STR_ERRORS[0]


STR_ERRORS: list[str] = []
