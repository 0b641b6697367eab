"""How an emitting task reaches its subscribers: one :class:`Route` per subscriber of each
stream, with the grouping :func:`make_grouping` builds from the topology's declaration."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from squall.api import groupings as g
from squall.api.topology import Input
from squall.errors import TopologyError
from squall.runtime.load import DISABLE_KEY, bounds


class Route:
    """One subscriber of one stream, as seen by one emitting task."""

    __slots__ = ("component", "direct", "grouping", "key_index", "many", "one", "one_each",
                 "targets")

    def __init__(self, component: str, grouping: Any, direct: bool, targets: list[int]) -> None:
        self.component = component
        self.grouping = grouping
        self.direct = direct
        self.targets = targets
        self.one = getattr(grouping, "choose_one", None) if grouping is not None else None
        self.many = grouping.choose_tasks if grouping is not None else None
        #: ``choose_one`` for a whole list at once, where the grouping has it
        self.one_each = getattr(grouping, "choose_many", None) if self.one is not None else None
        #: the field a plain one-field fields grouping reads (its task depends on that value
        #: alone), else None
        self.key_index: int | None = (
            grouping.indexes[0] if type(grouping) is g.FieldsGrouping
            and len(grouping.indexes) == 1 else None)


def make_grouping(inp: Input, source_fields: Sequence[str],
                  conf: Mapping[str, Any] | None = None) -> Any:
    kind = inp.grouping
    if kind == "shuffle":
        conf = conf or {}
        if conf.get(DISABLE_KEY):
            return g.ShuffleGrouping()
        return g.LoadAwareShuffleGrouping(*bounds(conf))
    if kind == "fields":
        return g.FieldsGrouping(inp.fields, source_fields)
    if kind == "partial_key":
        return g.PartialKeyGrouping(inp.fields, source_fields)
    if kind == "all":
        return g.AllGrouping()
    if kind == "global":
        return g.GlobalGrouping()
    if kind == "none":
        return g.NoneGrouping()
    if kind == "local_or_shuffle":
        return g.LocalOrShuffleGrouping()
    if kind == "direct":
        return None
    if kind == "custom":
        if isinstance(inp.custom, str):
            from squall import drivers
            return drivers.load("squall.groupings", inp.custom)()
        import copy
        return copy.copy(inp.custom)
    raise TopologyError(f"unknown grouping {kind!r}")


def choose_many_of(route: Route) -> Callable[[Sequence[Sequence[Any]]], list[int]]:
    """The grouping's ``choose_many`` (every task at once), or ``choose_one`` per item."""
    if route.one_each is not None:
        return route.one_each
    one = route.one

    def choose_many(values_list: Sequence[Sequence[Any]]) -> list[int]:
        return [one(values) for values in values_list]  # type: ignore[misc]
    return choose_many
