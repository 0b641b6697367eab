"""Groupings are built through their ``squall.groupings`` entry points and told their
declaration by ``configure``; a route takes the fast paths a grouping declares
(:class:`SingleTargetGrouping`), and only those."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from squall import (
    ConfigError, Grouping, GroupingDeclaration, LoadAwareGrouping, PluginLoadError,
    PluginNotFoundError, SingleTargetGrouping, TopologyError, drivers,
)
from squall.api import groupings as g
from squall.api.topology import Input
from squall.runtime import routing
from squall.runtime.routing import Route, choose_many_of, grouping_name, make_grouping

SOURCE_FIELDS = ["word", "n", "flag"]
AWARE_OFF = {"topology.disable.loadaware.messaging": True}

#: declared kind (with its fields and conf) -> the entry point and the class it builds
BUILT_INS: list[tuple[Input, dict[str, Any], str, type]] = [
    (Input("src", "default", "shuffle"), {}, "load_aware_shuffle", g.LoadAwareShuffleGrouping),
    (Input("src", "default", "shuffle"), AWARE_OFF, "shuffle", g.ShuffleGrouping),
    (Input("src", "default", "fields", ("word",)), {}, "fields", g.FieldsGrouping),
    (Input("src", "default", "partial_key", ("word",)), {}, "partial_key", g.PartialKeyGrouping),
    (Input("src", "default", "none"), {}, "none", g.NoneGrouping),
    (Input("src", "default", "local_or_shuffle"), {}, "local_or_shuffle",
     g.LocalOrShuffleGrouping),
    (Input("src", "default", "global"), {}, "global", g.GlobalGrouping),
    (Input("src", "default", "all"), {}, "all", g.AllGrouping),
    (Input("src", "default", "custom", custom="fields"), {}, "fields", g.FieldsGrouping),
]


@pytest.fixture
def loaded(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Every (group, name) make_grouping loads, in order."""
    calls: list[tuple[str, str]] = []
    real = drivers.load

    def load(group: str, name: str) -> Any:
        calls.append((group, name))
        return real(group, name)
    monkeypatch.setattr(drivers, "load", load)
    return calls


@pytest.mark.parametrize("inp, conf, name, cls", BUILT_INS,
                         ids=[f"{i.grouping}-{n}" for i, _, n, _ in BUILT_INS])
def test_every_built_in_is_built_from_its_entry_point(
        loaded: list[tuple[str, str]], inp: Input, conf: dict[str, Any], name: str,
        cls: type) -> None:
    assert name in drivers.names("squall.groupings")
    assert drivers.load("squall.groupings", name) is cls
    loaded.clear()
    if inp.grouping == "custom":        # a built-in named in custom_grouping needs fields
        with pytest.raises(TopologyError, match="at least one field"):
            make_grouping(inp, SOURCE_FIELDS, conf)
        assert loaded == [("squall.groupings", name)]
        return
    assert grouping_name(inp, conf) == name
    grouping = make_grouping(inp, SOURCE_FIELDS, conf)
    assert type(grouping) is cls
    assert loaded == [("squall.groupings", name)]


def test_direct_is_a_routing_mode_with_no_grouping(loaded: list[tuple[str, str]]) -> None:
    inp = Input("src", "to", "direct")
    assert grouping_name(inp, {}) is None
    assert make_grouping(inp, SOURCE_FIELDS) is None
    assert loaded == []
    route = Route("sink", None, True, [4, 5])
    assert (route.one, route.one_each, route.many, route.key_index) == (None, None, None, None)


def test_an_unknown_kind_names_the_groupings_there_are() -> None:
    with pytest.raises(PluginNotFoundError, match="fields"):
        make_grouping(Input("src", "default", "feilds", ("word",)), SOURCE_FIELDS)


def test_an_entry_point_that_is_not_a_grouping_is_a_load_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(drivers, "load", lambda group, name: dict)
    with pytest.raises(PluginLoadError, match="not a squall.Grouping"):
        make_grouping(Input("src", "default", "custom", custom="mine"), SOURCE_FIELDS)


# -- configure: what a grouping learns of its declaration ---------------------------------------

def test_fields_groupings_learn_their_fields_and_key_index() -> None:
    one = make_grouping(Input("src", "default", "fields", ("n",)), SOURCE_FIELDS)
    assert isinstance(one, g.FieldsGrouping)
    assert (one.fields, one.indexes, one.key_index) == (("n",), (1,), 1)
    two = make_grouping(Input("src", "default", "fields", ("flag", "word")), SOURCE_FIELDS)
    assert isinstance(two, g.FieldsGrouping)
    assert (two.indexes, two.key_index) == ((2, 0), None)
    partial = make_grouping(Input("src", "default", "partial_key", ("n",)), SOURCE_FIELDS)
    assert isinstance(partial, g.PartialKeyGrouping)
    assert (partial.indexes, partial.key_index) == ((1,), None)     # its choice moves with load


def test_fields_grouping_built_directly_agrees_with_one_built_by_entry_point() -> None:
    direct = g.FieldsGrouping(["word"], SOURCE_FIELDS)
    built = make_grouping(Input("src", "default", "fields", ("word",)), SOURCE_FIELDS)
    assert isinstance(built, g.FieldsGrouping)
    for grouping in (direct, built):
        grouping.prepare(None, ("src", "default"), [7, 3, 5])
    rows = [[f"w{i}", i, False] for i in range(50)]
    assert direct.choose_many(rows) == built.choose_many(rows)


def test_a_fields_grouping_instance_keeps_its_own_fields_under_custom_grouping() -> None:
    inp = Input("src", "default", "custom", custom=g.FieldsGrouping(["n"], SOURCE_FIELDS))
    grouping = make_grouping(inp, SOURCE_FIELDS)
    assert isinstance(grouping, g.FieldsGrouping) and grouping is not inp.custom
    assert (grouping.indexes, grouping.key_index) == ((1,), 1)


def test_a_fields_grouping_given_only_its_fields_finds_them_in_the_stream() -> None:
    # FieldsGrouping(["word"]) raised a bare "ValueError: 'word' is not in list"
    inp = Input("src", "default", "custom", custom=g.FieldsGrouping(["n"]))
    grouping = make_grouping(inp, SOURCE_FIELDS)
    assert isinstance(grouping, g.FieldsGrouping)
    assert (grouping.fields, grouping.indexes, grouping.key_index) == (("n",), (1,), 1)
    partial = make_grouping(Input("src", "default", "custom",
                                  custom=g.PartialKeyGrouping(["flag", "word"])), SOURCE_FIELDS)
    assert isinstance(partial, g.PartialKeyGrouping)
    assert (partial.indexes, partial.key_index) == ((2, 0), None)
    # and they agree with the entry point's, built from a declaration
    built = make_grouping(Input("src", "default", "fields", ("n",)), SOURCE_FIELDS)
    assert isinstance(built, g.FieldsGrouping)
    for one in (grouping, built):
        one.prepare(None, ("src", "default"), [7, 3, 5])
    rows = [[f"w{i}", i, False] for i in range(50)]
    assert grouping.choose_many(rows) == built.choose_many(rows)


def test_a_fields_grouping_on_fields_the_stream_lacks_names_them() -> None:
    with pytest.raises(TopologyError, match=r"on fields \['x'\], which the stream does not "
                                            r"have \(its fields: \['a'\]\)"):
        g.FieldsGrouping(["x"], ["a"])
    with pytest.raises(TopologyError, match=r"^FieldsGrouping on fields \['nope'\], which "
                                            r"the stream does not have \(its fields: "):
        make_grouping(Input("src", "default", "custom", custom=g.FieldsGrouping(["nope"])),
                      SOURCE_FIELDS)


def test_fields_on_a_field_the_stream_lacks_is_a_topology_error() -> None:
    grouping = g.FieldsGrouping()
    with pytest.raises(TopologyError, match="'nope'"):
        grouping.configure(GroupingDeclaration(("nope",), tuple(SOURCE_FIELDS)))


def test_load_aware_shuffle_reads_and_checks_its_bounds_in_configure() -> None:
    grouping = g.LoadAwareShuffleGrouping(0.9, 0.5)
    grouping.configure(GroupingDeclaration(conf={"topology.localityaware.higher.bound": 0.6}))
    assert (grouping.higher, grouping.lower) == (0.6, 0.2)
    with pytest.raises(ConfigError, match="must not exceed"):
        grouping.configure(GroupingDeclaration(conf={"topology.localityaware.lower.bound": 0.7,
                                                     "topology.localityaware.higher.bound": 0.6}))


class Declared(Grouping):
    """Remembers its declaration; every tuple to the first target."""

    def configure(self, declaration: GroupingDeclaration) -> None:
        self.declaration = declaration

    def choose_tasks(self, task_id: int, values: Sequence[Any]) -> list[int]:
        return self.target_tasks[:1]


def test_a_third_party_grouping_is_told_its_declaration_before_prepare(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(drivers, "load", lambda group, name: Declared)
    conf = {"my.key": 3}
    grouping = make_grouping(Input("src", "default", "custom", custom="declared"),
                             SOURCE_FIELDS, conf)
    assert isinstance(grouping, Declared)
    assert grouping.declaration == GroupingDeclaration((), tuple(SOURCE_FIELDS), conf)
    assert not hasattr(grouping, "target_tasks")          # not prepared yet


# -- the fast-path protocol --------------------------------------------------------------------

class Modulo(SingleTargetGrouping):
    """A third-party single-target grouping with both fast paths and a key index."""

    key_index = 1

    def prepare(self, context: Any, stream: tuple[str, str], target_tasks: Sequence[int]) -> None:
        super().prepare(context, stream, target_tasks)
        self.calls: list[str] = []

    def choose_one(self, values: Sequence[Any]) -> int:
        self.calls.append("one")
        return self.target_tasks[values[1] % len(self.target_tasks)]

    def choose_many(self, values_list: Sequence[Sequence[Any]]) -> list[int]:
        self.calls.append("many")
        targets = self.target_tasks
        return [targets[v[1] % len(targets)] for v in values_list]


class OnlyOne(SingleTargetGrouping):
    """A single-target grouping with choose_one alone."""

    def choose_one(self, values: Sequence[Any]) -> int:
        return self.target_tasks[-1]


class Undeclared(Grouping):
    """Has a method named choose_one, but does not declare the protocol."""

    def choose_one(self, values: Sequence[Any]) -> int:
        raise AssertionError("not part of this grouping's declared contract")

    def choose_tasks(self, task_id: int, values: Sequence[Any]) -> list[int]:
        return list(self.target_tasks)


def _route(grouping: Grouping, targets: list[int]) -> Route:
    grouping.prepare(None, ("src", "default"), targets)
    return Route("sink", grouping, False, targets)


def test_a_custom_single_target_grouping_gets_the_fast_path() -> None:
    grouping = make_grouping(Input("src", "default", "custom", custom=Modulo()), SOURCE_FIELDS)
    assert isinstance(grouping, Modulo)
    grouping.check_choices = False
    route = _route(grouping, [10, 11, 12])
    # unchecked: the bound methods themselves, nothing between the emit and the grouping
    assert route.one == grouping.choose_one and route.one.__self__ is grouping  # type: ignore[union-attr]
    assert route.one_each == grouping.choose_many
    assert choose_many_of(route) == grouping.choose_many
    assert route.key_index == 1
    assert route.many == grouping.choose_tasks
    assert route.one is not None and route.one(["a", 4]) == 11
    assert choose_many_of(route)([["a", 0], ["b", 2]]) == [10, 12]
    assert grouping.calls == ["one", "many"]
    assert route.many(1, ["c", 1]) == [11]               # choose_tasks from the base


def test_a_custom_grouping_s_choices_are_checked_against_its_targets() -> None:
    """check_choices (the default): the fast path's choosers go through a check that a
    chosen id is one of the targets; squall's own groupings skip it."""
    grouping = make_grouping(Input("src", "default", "custom", custom=Modulo()), SOURCE_FIELDS)
    route = _route(grouping, [10, 11, 12])
    assert route.one is not None and route.one(["a", 4]) == 11
    assert choose_many_of(route)([["a", 0], ["b", 2]]) == [10, 12]
    assert route.many(1, ["c", 1]) == [11]
    route = Route("sink", grouping, False, [10, 12])    # it still picks among three
    with pytest.raises(TopologyError, match=r"chose task 11, which is not one of its "
                                            r"targets \[10, 12\]"):
        route.one(["a", 4])
    with pytest.raises(TopologyError, match="chose task 11"):
        choose_many_of(route)([["a", 0], ["b", 4]])
    with pytest.raises(TopologyError, match="chose task 11"):
        route.many(1, ["c", 4])
    shuffle = make_grouping(Input("src", "default", "shuffle"), SOURCE_FIELDS)
    assert shuffle is not None and not shuffle.check_choices
    assert _route(shuffle, [3, 4]).one == shuffle.choose_one


class Answers(SingleTargetGrouping):
    """Answers every choice with ``answer(target_tasks)``: as choose_tasks' result, as
    choose_one's task id and as choose_many's list."""

    def __init__(self, answer: Any, *, as_list: bool = False) -> None:
        self.answer = answer
        self.as_list = as_list

    def choose_tasks(self, task_id: int, values: Sequence[Any]) -> Any:
        return self.answer(self.target_tasks)

    def choose_one(self, values: Sequence[Any]) -> Any:
        return self.answer(self.target_tasks)

    def choose_many(self, values_list: Sequence[Sequence[Any]]) -> Any:
        return self.answer(self.target_tasks) if self.as_list else \
            [self.answer(self.target_tasks) for _ in values_list]


@pytest.mark.parametrize("answer, kind", [
    (lambda ts: iter(ts[:1]), "list_iterator"),
    (lambda ts: (t for t in ts[:1]), "generator"),
    (lambda ts: None, "NoneType"),
    (lambda ts: ts[0], "int"),
    (lambda ts: set(ts), "set"),
], ids=["iterator", "generator", "None", "int", "set"])
def test_a_checked_choice_that_is_no_list_of_task_ids_raises(answer: Any, kind: str) -> None:
    """README (Groupings): a choice that is no list of task ids makes the emit raise (and
    the tuple fail). An iterator is not read: checking it would use it up, and the emit
    then delivered nothing and acked the tuple."""
    route = _route(Answers(answer, as_list=True), [10, 11])
    assert route.many is not None and route.one_each is not None
    with pytest.raises(TopologyError, match=f"choose_tasks returned a value of type {kind}, "
                                            "not a list of task ids"):
        route.many(1, ["x"])
    with pytest.raises(TopologyError, match=f"choose_many returned a value of type {kind}, "
                                            "not a list of task ids"):
        route.one_each([["x"]])
    assert _route(Answers(lambda ts: (ts[1],)), [10, 11]).many(1, ["x"]) == (11,)  # type: ignore[misc]


def test_an_unchecked_grouping_s_choice_is_passed_on_as_it_is() -> None:
    """check_choices = False: choose_tasks itself, so an iterator it returns is read once,
    by the emit that delivers to its tasks."""
    grouping = Answers(lambda ts: iter(ts[:1]))
    grouping.check_choices = False
    route = _route(grouping, [10, 11])
    assert route.many == grouping.choose_tasks
    assert list(route.many(1, ["x"])) == [10]


@pytest.mark.parametrize("answer, shown", [
    (lambda ts: float(ts[-1]), r"10\.0 \(a float, not an int\)"),
    (lambda ts: True, r"True \(a bool, not an int\)"),
], ids=["float", "bool"])
def test_a_task_id_equal_to_a_target_but_no_int_is_not_one_of_its_targets(
        answer: Any, shown: str) -> None:
    """2.0 == 2 and True == 1, but the transports carry int task ids: such a choice would be
    delivered in the emitter's worker and refused by the transport in another, failing every
    tuple of its batch."""
    targets = [1, 10]       # True == 1
    route = _route(Answers(lambda ts: [answer(ts)]), targets)
    assert route.many is not None and route.one is not None and route.one_each is not None
    message = f"chose task {shown}, which is not one of its targets \\[1, 10\\]"
    with pytest.raises(TopologyError, match=message):
        route.many(1, ["x"])
    route = _route(Answers(answer), targets)
    assert route.one is not None and route.one_each is not None
    with pytest.raises(TopologyError, match=message):
        route.one(["x"])
    with pytest.raises(TopologyError, match=message):
        route.one_each([["x"], ["y"]])


def test_choose_many_defaults_to_choose_one_per_item() -> None:
    route = _route(OnlyOne(), [3, 8])
    assert route.one_each is not None and route.key_index is None
    assert choose_many_of(route)([[1], [2], [3]]) == [8, 8, 8]


def test_a_grouping_that_does_not_declare_the_protocol_gets_no_fast_path() -> None:
    route = _route(Undeclared(), [3, 8])
    assert (route.one, route.one_each, route.key_index) == (None, None, None)
    assert route.many is not None and route.many(1, ["x"]) == [3, 8]
    with pytest.raises(ValueError, match="single-target"):
        choose_many_of(route)


@pytest.mark.parametrize("inp, single, aware", [
    (Input("src", "default", "shuffle"), True, True),
    (Input("src", "default", "fields", ("word",)), True, False),
    (Input("src", "default", "partial_key", ("word",)), True, False),
    (Input("src", "default", "none"), True, False),
    (Input("src", "default", "local_or_shuffle"), True, False),
    (Input("src", "default", "global"), True, False),
    (Input("src", "default", "all"), False, False),
], ids=lambda v: v.grouping if isinstance(v, Input) else str(v))
def test_built_ins_declare_the_fast_paths_they_have(inp: Input, single: bool,
                                                    aware: bool) -> None:
    grouping = make_grouping(inp, SOURCE_FIELDS)
    assert grouping is not None
    assert isinstance(grouping, SingleTargetGrouping) is single
    assert isinstance(grouping, LoadAwareGrouping) is aware
    targets = [2, 4, 6]
    route = _route(grouping, targets)
    assert (route.one is not None) is single
    if single:
        rows = [[f"w{i}", i, True] for i in range(30)]
        chosen = choose_many_of(route)(rows)
        assert len(chosen) == 30 and set(chosen) <= set(targets)


def test_route_keeps_its_field_names() -> None:
    assert Route.__slots__ == ("component", "direct", "grouping", "key_index", "many", "one",
                               "one_each", "targets")
    assert {"Route", "make_grouping", "choose_many_of"} <= set(vars(routing))


class Steered(Grouping):
    """A load-aware grouping in the README's older spelling: a refresh_load method alone."""

    def refresh_load(self, load: g.LoadMapping) -> None:
        self.last = load

    def choose_tasks(self, task_id: int, values: Sequence[Any]) -> list[int]:
        return self.target_tasks[:1]


class NotAGrouping:
    def refresh_load(self, load: g.LoadMapping) -> None:
        pass


def test_a_grouping_with_refresh_load_counts_as_load_aware_without_subclassing() -> None:
    assert isinstance(Steered(), LoadAwareGrouping)
    assert isinstance(g.LoadAwareShuffleGrouping(), LoadAwareGrouping)
    assert not isinstance(Undeclared(), LoadAwareGrouping)
    assert not isinstance(g.ShuffleGrouping(), LoadAwareGrouping)
    assert not isinstance(NotAGrouping(), LoadAwareGrouping)


# -- the contract catches what a plugin author plausibly gets wrong ------------------------------
class _ByWord(SingleTargetGrouping):
    """Reads its field's position in configure, as the SPI says; choices by that field."""

    key_index: int | None = None

    def configure(self, declaration: Any) -> None:
        self.index = declaration.source_fields.index(declaration.fields[0])

    def prepare(self, context: Any, stream: tuple[str, str], target_tasks: Sequence[int]) -> None:
        super().prepare(context, stream, target_tasks)
        self.key_index = self.index

    def choose_one(self, values: Sequence[Any]) -> int:
        return self.target_tasks[sum(map(ord, str(values[self.index]))) % len(self.target_tasks)]


class _IndexesNotTasks(_ByWord):
    def choose_many(self, values_list: Sequence[Sequence[Any]]) -> list[int]:
        return [self.target_tasks.index(self.choose_one(v)) for v in values_list]


class _KeyIndexLies(_ByWord):
    def choose_one(self, values: Sequence[Any]) -> int:      # claims the word; uses n
        return self.target_tasks[values[1] % len(self.target_tasks)]


@pytest.mark.parametrize("cls, passes", [(_ByWord, True), (_IndexesNotTasks, False),
                                         (_KeyIndexLies, False)])
def test_the_grouping_contract_configures_and_checks_every_path(cls: type, passes: bool) -> None:
    from squall.testing.contracts.grouping import DeterministicGrouping, GroupingContract

    class Contract(DeterministicGrouping, GroupingContract):
        pass
    contract = Contract()

    def prepared(targets: Sequence[int], task_id: int = 1) -> Any:
        return Contract.prepared.__wrapped__(contract, cls)(targets, task_id)  # type: ignore
    targets = [7, 11, 12, 30]
    if passes:
        contract.test_a_single_target_grouping_answers_alike_on_every_path(prepared, targets)
        contract.test_deterministic(prepared)
    else:
        with pytest.raises(AssertionError):
            contract.test_a_single_target_grouping_answers_alike_on_every_path(prepared,
                                                                               targets)
