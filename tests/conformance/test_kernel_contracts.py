"""Every installed serializer, acker and grouping entry point passes its contract suite
(squall.testing.contracts.serializer / acker / grouping)."""
from __future__ import annotations

from typing import Any
from collections.abc import Callable

import pytest

from squall import Acker, Grouping, Serializer, drivers
from squall.testing.contracts.acker import AckerContract
from squall.testing.contracts.grouping import (
    DeterministicGrouping, FakeContext, GroupingContract, SpreadingGrouping,
)
from squall.testing.contracts.serializer import SerializerContract

#: what the built-in groupings promise beyond the generic contract
GROUPING_MIXINS: dict[str, tuple[type, ...]] = {
    "shuffle": (SpreadingGrouping,),
    "load_aware_shuffle": (SpreadingGrouping,),
    "local_or_shuffle": (SpreadingGrouping,),
    "none": (SpreadingGrouping,),
    "fields": (DeterministicGrouping,),
    "global": (DeterministicGrouping,),
    "all": (DeterministicGrouping,),
}


def _serializer_contract(name: str) -> type:
    @pytest.fixture
    def serializer_factory(self: Any) -> Callable[[dict[str, Any]], Serializer]:
        return lambda conf: drivers.driver("serializer", {**conf, "squall.serializer": name})
    return type(f"TestSerializer_{name}", (SerializerContract,),
                {"serializer_factory": serializer_factory})


def _acker_contract(name: str) -> type:
    @pytest.fixture
    def acker_factory(self: Any) -> Callable[[dict[str, Any]], Acker]:
        return lambda conf: drivers.driver("acker", {**conf, "squall.acker": name})
    return type(f"TestAcker_{name}", (AckerContract,), {"acker_factory": acker_factory})


def _grouping_contract(name: str) -> type:
    @pytest.fixture
    def grouping_factory(self: Any) -> Callable[[], Grouping]:
        return drivers.load("squall.groupings", name)
    bases = GROUPING_MIXINS.get(name, ()) + (GroupingContract,)
    return type(f"TestGrouping_{name}", bases, {"grouping_factory": grouping_factory})


for _name in drivers.names("squall.serializers"):
    globals()[f"TestSerializer_{_name}"] = _serializer_contract(_name)
for _name in drivers.names("squall.ackers"):
    globals()[f"TestAcker_{_name}"] = _acker_contract(_name)
for _name in drivers.names("squall.groupings"):
    globals()[f"TestGrouping_{_name}"] = _grouping_contract(_name)


def test_builtin_entry_points_are_registered() -> None:
    assert {"msgpack", "json"} <= set(drivers.names("squall.serializers"))
    assert "xor" in drivers.names("squall.ackers")
    assert {"shuffle", "global", "all"} <= set(drivers.names("squall.groupings"))
    for group, base in (("squall.serializers", Serializer), ("squall.ackers", Acker),
                        ("squall.groupings", Grouping)):
        for name in drivers.names(group):
            assert issubclass(drivers.load(group, name), base), f"{group} {name}"


def _prepared(name: str, targets: list[int]) -> Grouping:
    grouping = drivers.load("squall.groupings", name)()
    grouping.prepare(FakeContext(1, targets), ("source", "default"), targets)
    return grouping


def test_builtin_all_and_global_choices() -> None:
    targets = [9, 4, 6]
    assert sorted(_prepared("all", targets).choose_tasks(1, ["x"])) == [4, 6, 9]
    assert _prepared("global", targets).choose_tasks(1, ["x"]) == [4]


def test_builtin_shuffle_is_even() -> None:
    grouping = _prepared("shuffle", [2, 3, 4])
    chosen = [t for i in range(300) for t in grouping.choose_tasks(1, [i])]
    assert {t: chosen.count(t) for t in (2, 3, 4)} == {2: 100, 3: 100, 4: 100}
