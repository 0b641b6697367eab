"""``topology.max.task.parallelism`` is read per component as the component reads its conf:
topology conf < the component's own config < ``-c`` overrides (README: Configuration)."""
from __future__ import annotations

from typing import Any

from squall import Bolt, Spout, TopologyBuilder, config
from squall.runtime.system import cap_parallelism

KEY = "topology.max.task.parallelism"


class Src(Spout):
    outputs = ["n"]

    def next_tuple(self) -> None:
        pass


class Sink(Bolt):
    def process(self, tup: Any) -> None:
        pass


def _counts(conf: dict[str, Any]) -> dict[str, tuple[int, int]]:
    b = TopologyBuilder()
    b.set_spout("s", Src, parallelism=4)
    b.set_bolt("own", Sink, parallelism=4).shuffle_grouping("s").add_config(KEY, 3)
    topology = cap_parallelism(b.create_topology(), conf)
    return {c: (spec.parallelism, spec.num_tasks) for c, spec in topology.components.items()}


def test_a_components_own_cap_beats_the_topologys() -> None:
    assert _counts({KEY: 1}) == {"s": (1, 1), "own": (3, 3)}


def test_a_command_line_cap_beats_a_components_own() -> None:
    conf = config.load_config(overrides=[f"{KEY}=1"], env={}, home="/nonexistent")
    assert _counts(conf) == {"s": (1, 1), "own": (1, 1)}
