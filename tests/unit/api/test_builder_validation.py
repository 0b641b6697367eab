"""TopologyBuilder validation: every mistake is one TopologyError naming what is wrong."""
from __future__ import annotations

from typing import Any
from collections.abc import Mapping

import pytest

from squall import Bolt, Grouping, Spout, Stream, TopologyBuilder, TopologyError


class Words(Spout):
    outputs = ["word", "n"]


class Multi(Spout):
    outputs = [Stream(["word"]), Stream(["line", "reason"], name="rejects"),
               Stream(["x"], name="targeted", direct=True)]


class Sink(Bolt):
    def process(self, tup: Any) -> None:
        pass


class Configurable(Bolt):
    """Its streams depend on its config, as API.md section 2 allows."""

    @classmethod
    def declare_outputs(cls, config: Mapping[str, Any]) -> list[str | Stream]:
        return [Stream(list(config.get("fields", ["a"])), name=config.get("stream", "default"))]

    def process(self, tup: Any) -> None:
        pass


class Silent(Bolt):
    """Defines neither process nor process_batch."""


class Batched(Bolt):
    def process_batch(self, tuples: list[Any]) -> None:
        pass


class Mine(Grouping):
    def choose_tasks(self, task_id: int, values: Any) -> list[int]:
        return [self.target_tasks[0]]


def builder() -> TopologyBuilder:
    b = TopologyBuilder()
    b.set_spout("words", Words)
    b.set_spout("multi", Multi)
    return b


def fails(build: Any, *needles: str) -> str:
    """Run ``build``; assert it raises TopologyError mentioning every needle."""
    with pytest.raises(TopologyError) as info:
        build()
    msg = str(info.value)
    for needle in needles:
        assert needle in msg, f"{needle!r} not in {msg!r}"
    return msg


def test_valid_topology_builds() -> None:
    b = builder()
    b.set_bolt("sink", Sink, 2).fields_grouping("words", ["word"]).shuffle_grouping(
        "multi", "rejects").direct_grouping("multi", "targeted")
    topo = b.create_topology()
    assert topo.spouts == ["multi", "words"] and topo.bolts == ["sink"]
    assert [i.grouping for i in topo.components["sink"].inputs] == ["fields", "shuffle", "direct"]


def test_unknown_source_component() -> None:
    b = builder()
    b.set_bolt("sink", Sink).shuffle_grouping("wrods")
    fails(b.create_topology, "'sink'", "'wrods'", "words")


def test_undeclared_stream() -> None:
    b = builder()
    b.set_bolt("sink", Sink).shuffle_grouping("multi", "reject")
    fails(b.create_topology, "'sink'", "'reject'", "'multi'", "rejects")


def test_fields_grouping_on_missing_field() -> None:
    b = builder()
    b.set_bolt("sink", Sink).fields_grouping("words", ["wrod"])
    fails(b.create_topology, "'sink'", "'wrod'", "words:default", "['word', 'n']")


def test_partial_key_grouping_on_missing_field() -> None:
    b = builder()
    b.set_bolt("sink", Sink).partial_key_grouping("multi", ["reason", "nope"], stream="rejects")
    fails(b.create_topology, "'sink'", "'nope'", "multi:rejects")


def test_fields_grouping_needs_fields() -> None:
    b = builder()
    b.set_bolt("sink", Sink).fields_grouping("words", [])
    fails(b.create_topology, "'sink'", "at least one field")


@pytest.mark.parametrize("fields", [None, 5, {"word"}, [1], [["word"]]],
                         ids=["None", "int", "set", "int-field", "list-field"])
@pytest.mark.parametrize("grouping", ["fields_grouping", "partial_key_grouping"])
def test_fields_that_are_no_list_of_field_names_are_refused(grouping: str,
                                                             fields: Any) -> None:
    """At the subscription, one line naming it (not a TypeError from inside the builder);
    a set has no order, which the fields' hash depends on."""
    b = builder()
    declarer = b.set_bolt("sink", Sink)
    fails(lambda: getattr(declarer, grouping)("words", fields), "'sink'", "'words'",
          "needs a list of field names, e.g. ['word']", type(fields).__name__)


def test_fields_as_a_tuple_or_one_name_are_the_fields_named() -> None:
    """A tuple is as good as a list; one str is that one field, as in Stream("word") (not
    its characters)."""
    b = builder()
    b.set_bolt("sink", Sink).fields_grouping("words", ("word", "n"))
    b.set_bolt("one", Sink).fields_grouping("words", "word")
    topo = b.create_topology()
    assert topo.components["sink"].inputs[0].fields == ("word", "n")
    assert topo.components["one"].inputs[0].fields == ("word",)


def test_direct_grouping_on_non_direct_stream() -> None:
    b = builder()
    b.set_bolt("sink", Sink).direct_grouping("words")
    fails(b.create_topology, "'sink'", "words:default", "direct=True")


def test_non_direct_grouping_on_direct_stream() -> None:
    b = builder()
    b.set_bolt("sink", Sink).shuffle_grouping("multi", "targeted")
    fails(b.create_topology, "'sink'", "multi:targeted", "direct_grouping")


def test_duplicate_ids() -> None:
    b = builder()
    fails(lambda: b.set_bolt("words", Sink), "'words'", "twice")
    b.set_bolt("sink", Sink)
    fails(lambda: b.set_spout("sink", Words), "'sink'", "twice")


def test_duplicate_subscription() -> None:
    b = builder()
    b.set_bolt("sink", Sink).shuffle_grouping("words").fields_grouping("words", ["n"])
    fails(b.create_topology, "'sink'", "words:default", "twice")


@pytest.mark.parametrize("cid", ["__acker", "__mine", "__"])
def test_reserved_ids(cid: str) -> None:
    fails(lambda: TopologyBuilder().set_spout(cid, Words), repr(cid), "reserved")


@pytest.mark.parametrize("cid", ["", None, 3])
def test_bad_ids(cid: Any) -> None:
    fails(lambda: TopologyBuilder().set_spout(cid, Words), repr(cid))


@pytest.mark.parametrize(("cid", "rule"), [
    ("a/b", "'/'"), ("..", "'..'"), (".", "'.'"), ("rocket-\U0001f680", "U+1F680"),
    ("tab\there", "U+0009"), ("del\x7f", "U+007F"), ("private\ue000", "U+E000"),
    ("special\ufff9", "U+FFF9")])
def test_ids_that_cannot_name_a_state_node(cid: str, rule: str) -> None:
    # on a cluster a component's errors are kept under /errors/<topology>/<component id>
    fails(lambda: TopologyBuilder().set_spout(cid, Words), repr(cid), rule, "state path")
    fails(lambda: builder().set_bolt(cid, Sink), repr(cid), rule, "state path")


@pytest.mark.parametrize("cid", ["компонент-数据", "a.b", "...", "c" * 400, "⚡-bolt"])
def test_ids_of_any_bmp_letters_are_fine(cid: str) -> None:
    b = builder()
    b.set_bolt(cid, Sink).shuffle_grouping("words")
    assert cid in b.create_topology().components


def test_ids_and_stream_names_are_at_most_1024_characters() -> None:
    # a far longer id built, then its workers' state writes were over ZooKeeper's request
    # limit: the worker never ran and its connection dropped in a loop
    b = builder()
    b.set_bolt("b" * 1024, Sink).shuffle_grouping("words")
    assert "b" * 1024 in b.create_topology().components
    msg = fails(lambda: builder().set_bolt("b" * 900_000, Sink), "900000 characters", "1024")
    assert len(msg) < 200                                   # one line, not the id itself
    assert Stream(["a"], name="s" * 1024).name == "s" * 1024
    fails(lambda: Stream(["a"], name="s" * 1025), "1025 characters", "1024")


@pytest.mark.parametrize("name", [5, b"x", 1.5, ("a",)])
def test_stream_names_are_str(name: Any) -> None:
    # a str()-ed name built, then emit(stream=5) was refused: "undeclared stream 5; declared: 5"
    fails(lambda: Stream(["x"], name=name), repr(name), "a stream name is a str",
          type(name).__name__)
    b = builder()
    declarer = b.set_bolt("sink", Sink)
    fails(lambda: declarer.shuffle_grouping("multi", name), "'sink'", repr(name),
          "a stream name is a str")
    fails(lambda: declarer.fields_grouping("words", ["word"], stream=name), "'sink'",
          "a stream name is a str")


def test_stream_name_none_is_the_default_stream() -> None:
    # as emit(stream=None) and shuffle_grouping(c, None): once it was a stream named "None"
    class NoneNamed(Spout):
        outputs = [Stream(["w"], name=None)]

    assert Stream(["w"], name=None) == Stream(["w"])
    b = TopologyBuilder()
    b.set_spout("src", NoneNamed)
    b.set_bolt("sink", Sink).shuffle_grouping("src", None)
    assert list(b.create_topology().components["src"].streams) == ["default"]


@pytest.mark.parametrize("field", [None, 0, b"w"])
def test_field_names_are_str(field: Any) -> None:
    # Stream([None]) was a field named "None"
    fails(lambda: Stream([field]), "field names are str", repr(field))
    fails(lambda: Stream(["ok", field], name="s"), "field names are str", repr(field))


def test_reserved_stream_names() -> None:
    class Sneaky(Spout):
        outputs = [Stream(["a"], name="__ack_ack")]

    b = TopologyBuilder()
    b.set_spout("sneaky", Sneaky)
    fails(b.create_topology, "'sneaky'", "'__ack_ack'", "reserved")


def test_instance_instead_of_class() -> None:
    fails(lambda: TopologyBuilder().set_spout("w", Words()), "'w'", "pass the class")
    fails(lambda: builder().set_bolt("s", Sink()), "'s'", "pass the class")


@pytest.mark.parametrize("cls", [int, object, dict])
def test_non_component_class(cls: type) -> None:
    fails(lambda: TopologyBuilder().set_spout("w", cls), "'w'", cls.__qualname__, "Spout")
    fails(lambda: TopologyBuilder().set_bolt("b", cls), "'b'", cls.__qualname__, "Bolt")


def test_spout_class_as_bolt_and_bolt_class_as_spout() -> None:
    fails(lambda: TopologyBuilder().set_bolt("b", Words), "'b'", "Words", "Bolt")
    fails(lambda: TopologyBuilder().set_spout("s", Sink), "'s'", "Sink", "Spout")


def test_bolt_without_process() -> None:
    b = builder()
    fails(lambda: b.set_bolt("silent", Silent), "'silent'", "process")
    b.set_bolt("silent", Batched).shuffle_grouping("words")     # the id was not taken
    assert "silent" in b.create_topology().bolts


@pytest.mark.parametrize("bad", [0, -1, "2", 1.5, True, None])
def test_bad_parallelism(bad: Any) -> None:
    fails(lambda: TopologyBuilder().set_spout("w", Words, parallelism=bad), "'w'",
          "parallelism", repr(bad))


@pytest.mark.parametrize("bad", [0, -3, "4", 2.0])
def test_bad_num_tasks(bad: Any) -> None:
    declarer = TopologyBuilder().set_spout("w", Words)
    fails(lambda: declarer.set_num_tasks(bad), "'w'", repr(bad))


def test_bad_config_and_resources() -> None:
    fails(lambda: TopologyBuilder().set_spout("w", Words, config=[("a", 1)]), "'w'", "config")
    declarer = TopologyBuilder().set_spout("w", Words)
    fails(lambda: declarer.set_resources(cpu=-1), "'w'", "cpu")
    fails(lambda: declarer.set_resources(memory_mb="lots"), "'w'", "memory_mb")


def test_mixed_outputs() -> None:
    class Mixed(Spout):
        outputs = ["word", Stream(["x"], name="other")]

    b = TopologyBuilder()
    b.set_spout("mixed", Mixed)
    fails(b.create_topology, "'mixed'", "not a mix")


def test_stream_declared_twice_and_repeated_field() -> None:
    class Twice(Spout):
        outputs = [Stream(["a"]), Stream(["b"])]

    class Repeats(Spout):
        outputs = [Stream(["a", "a"], name="s")]

    for cls, needles in ((Twice, ("'twice'", "'default'", "twice")),
                         (Repeats, ("'repeats'", "'s'", "repeats a field"))):
        b = TopologyBuilder()
        b.set_spout(cls.__name__.lower(), cls)
        fails(b.create_topology, *needles)


def test_one_field_name_alone_is_that_field_and_repeated_names_are_refused() -> None:
    class One(Spout):
        outputs = "word"                    # not the fields w, o, r, d

    class OneStream(Spout):
        outputs = Stream(["line"], name="lines")

    class Again(Spout):
        outputs = ["a", "a"]

    b = TopologyBuilder()
    b.set_spout("one", One)
    b.set_spout("lines", OneStream)
    topology = b.create_topology()
    assert list(topology.components["one"].streams["default"].fields) == ["word"]
    assert list(topology.components["lines"].streams) == ["lines"]
    b = TopologyBuilder()
    b.set_spout("again", Again)
    fails(b.create_topology, "'again'", "'default'", "repeats a field")


def test_no_spout() -> None:
    b = TopologyBuilder()
    b.set_bolt("sink", Sink)
    fails(b.create_topology, "spout")


def test_declare_outputs_depends_on_config() -> None:
    b = builder()
    b.set_bolt("conf", Configurable, config={"fields": ["k", "v"], "stream": "pairs"}
               ).shuffle_grouping("words")
    b.set_bolt("sink", Sink).fields_grouping("conf", ["v"], stream="pairs")
    topo = b.create_topology()
    assert topo.components["conf"].streams == {"pairs": Stream(["k", "v"], name="pairs")}

    b = builder()
    b.set_bolt("conf", Configurable).shuffle_grouping("words")      # default config: ["a"]
    b.set_bolt("sink", Sink).fields_grouping("conf", ["v"], stream="pairs")
    fails(b.create_topology, "'sink'", "'pairs'", "'conf'")


def test_declare_outputs_sees_add_config() -> None:
    b = builder()
    b.set_bolt("conf", Configurable).shuffle_grouping("words").add_config("fields", ["z"])
    assert b.create_topology().components["conf"].streams["default"].fields == ("z",)


def test_declare_outputs_failure_names_component() -> None:
    class Broken(Spout):
        @classmethod
        def declare_outputs(cls, config: Mapping[str, Any]) -> list[str | Stream]:
            raise KeyError("needs.a.key")

    b = TopologyBuilder()
    b.set_spout("broken", Broken)
    fails(b.create_topology, "'broken'", "declare_outputs", "needs.a.key")


def test_num_tasks_and_executors() -> None:
    b = TopologyBuilder()
    b.set_spout("a", Words, parallelism=2).set_num_tasks(5)
    b.set_bolt("b", Sink, parallelism=3).shuffle_grouping("a")
    b.set_bolt("c", Sink, parallelism=4).set_num_tasks(2).shuffle_grouping("a")
    topo = b.create_topology()
    assert topo.tasks("a") == [1, 2, 3, 4, 5]
    assert topo.executors("a") == [(1, 3), (4, 5)]          # contiguous, nearly equal
    assert topo.tasks("b") == [6, 7, 8] and topo.executors("b") == [(6, 6), (7, 7), (8, 8)]
    assert topo.tasks("c") == [9, 10]
    assert topo.executors("c") == [(9, 9), (10, 10)]         # never more executors than tasks
    assert topo.all_tasks() == list(range(1, 11))


def test_task_ids_follow_sorted_component_ids() -> None:
    b = TopologyBuilder()
    b.set_spout("zeta", Words, 2)
    b.set_bolt("alpha", Sink, 3).shuffle_grouping("zeta")
    topo = b.create_topology()
    assert topo.tasks("alpha") == [1, 2, 3] and topo.tasks("zeta") == [4, 5]


def test_custom_grouping_unknown_entry_point_did_you_mean() -> None:
    b = builder()
    b.set_bolt("sink", Sink).custom_grouping("words", "shufle")
    msg = fails(b.create_topology, "'sink'", "'shufle'", "did you mean 'shuffle'")
    assert "squall.groupings" in msg


def test_custom_grouping_accepts_name_or_instance_only() -> None:
    b = builder()
    b.set_bolt("s1", Sink).custom_grouping("words", "shuffle")
    b.set_bolt("s2", Sink).custom_grouping("words", Mine())
    b.create_topology()
    fails(lambda: builder().set_bolt("s3", Sink).custom_grouping("words", Mine), "'s3'",
          "Grouping instance")


def test_builder_can_be_reused_and_topologies_are_independent() -> None:
    b = builder()
    sink = b.set_bolt("sink", Sink, config={"k": [1]}).shuffle_grouping("words")
    t1 = b.create_topology()
    t1.components["sink"].config["k"].append(2)
    b.set_bolt("later", Sink).shuffle_grouping("words")
    sink.shuffle_grouping("multi").add_config("extra", 1)
    t2 = b.create_topology()
    assert "later" not in t1.components and "later" in t2.components
    assert [i.component for i in t1.components["sink"].inputs] == ["words"]
    assert "extra" not in t1.components["sink"].config
    assert t2.components["sink"].config == {"k": [1], "extra": 1}


class StormSpout(Spout):
    """Storm's first call of a spout, and no initialize: squall would never call it."""
    outputs = ["n"]

    def open(self, conf: Any, context: Any, collector: Any = None) -> None:
        self.n = 0


class StormBolt(Bolt):
    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.seen = 0

    def process(self, tup: Any) -> None:
        pass


class StormBoltNoCollector(Sink):
    def prepare(self, conf: Any, context: Any) -> None:
        self.seen = 0


class Adapted(Bolt):
    """Its own initialize calls prepare (a user's base class bridging Storm's names)."""

    def initialize(self, conf: Any, context: Any) -> None:
        self.prepare(conf, context)

    def prepare(self, conf: Any, context: Any) -> None:
        self.seen = 0

    def process(self, tup: Any) -> None:
        pass


class FileSpout(Words):
    """An ``open`` of its own that is no first call (one argument)."""

    def open(self, path: str) -> Any:
        return path


@pytest.mark.parametrize(("kind", "cls", "name"), [
    ("spout", StormSpout, "open"), ("bolt", StormBolt, "prepare"),
    ("bolt", StormBoltNoCollector, "prepare")])
def test_storms_first_call_without_initialize_is_refused(kind: str, cls: type,
                                                         name: str) -> None:
    # squall calls initialize: open() or prepare() never ran, and next_tuple or process
    # raised AttributeError on every call
    b = TopologyBuilder()
    b.set_spout("s", StormSpout if kind == "spout" else Words)
    if kind == "bolt":
        b.set_bolt("b", cls).shuffle_grouping("s")
    which = "s" if kind == "spout" else "b"
    with pytest.raises(TopologyError) as info:
        b.create_topology()
    assert str(info.value) == (f"{kind} {which!r} defines {name}(); squall calls "
                               f"initialize(conf, context) instead — rename it")


def test_open_or_prepare_beside_initialize_or_of_another_shape_is_accepted() -> None:
    b = TopologyBuilder()
    b.set_spout("s", FileSpout)
    b.set_bolt("b", Adapted).shuffle_grouping("s")
    b.create_topology()


def test_no_component_class_squall_ships_is_refused_for_its_first_call() -> None:
    # squall's own spouts and bolts (streamparse compat, multi-lang, Trident, windows, state,
    # metrics consumers, fixed-tuple spouts) initialize as squall does
    import importlib

    from squall.api.builder import _check_first_call
    from squall.api.topology import ComponentSpec, class_ref
    for name in ("squall.multilang.streamparse", "squall.multilang.bolt",
                 "squall.multilang.spout", "squall.trident.runtime.bolt",
                 "squall.trident.runtime.coordinator", "squall.windowing.bolt",
                 "squall.stateful.bolt", "squall.stateful.checkpoint",
                 "squall.metrics.consumer_bolt", "squall.testing"):
        importlib.import_module(name)

    def subclasses(cls: type) -> list[type]:
        return [c for s in cls.__subclasses__() for c in (s, *subclasses(s))]

    shipped = [(kind, c) for kind, base in (("spout", Spout), ("bolt", Bolt))
               for c in subclasses(base) if c.__module__.startswith("squall.")]
    assert len(shipped) >= 14
    for kind, cls in shipped:
        _check_first_call(ComponentSpec(id="c", kind=kind, cls=cls, ref=class_ref(cls),
                                        parallelism=1, num_tasks=1, config={}))
