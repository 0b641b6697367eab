"""How an emitting task reaches its subscribers: one :class:`Route` per subscriber of each
stream, with the grouping :func:`make_grouping` builds from the topology's declaration.

Every grouping, built-in or not, is built through its ``squall.groupings`` entry point (see
:func:`grouping_name`) and told the declaration by ``configure``; the fast paths a
:class:`Route` offers are those the grouping declares (:mod:`squall.spi.grouping`).
"""
from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from squall import drivers
from squall.api.topology import Input, Topology
from squall.errors import PluginLoadError, TopologyError
from squall.runtime.load import DISABLE_KEY
from squall.spi.grouping import Grouping, GroupingDeclaration, SingleTargetGrouping

GROUP = "squall.groupings"
#: the entry point a declared ``shuffle`` is built from, unless load-aware messaging is off
LOAD_AWARE_SHUFFLE = "load_aware_shuffle"


class Route:
    """One subscriber of one stream, as seen by one emitting task.

    ``one`` and ``one_each`` are the bound ``choose_one`` and ``choose_many`` of a
    :class:`~squall.spi.grouping.SingleTargetGrouping` (else None), read once here, after
    ``prepare``; ``many`` is the bound ``choose_tasks`` (None for a direct route).
    """

    __slots__ = ("component", "direct", "grouping", "key_index", "many", "one", "one_each",
                 "targets")

    def __init__(self, component: str, grouping: Grouping | None, direct: bool,
                 targets: list[int]) -> None:
        self.component = component
        self.grouping = grouping
        self.direct = direct
        self.targets = targets
        self.many = grouping.choose_tasks if grouping is not None else None
        self.one: Callable[[Sequence[Any]], int] | None = None
        #: ``choose_one`` for a whole list at once
        self.one_each: Callable[[Sequence[Sequence[Any]]], list[int]] | None = None
        #: the field whose value alone decides the task (str keys may be cached), else None
        self.key_index: int | None = None
        if isinstance(grouping, SingleTargetGrouping):
            self.one = grouping.choose_one
            self.one_each = grouping.choose_many
            self.key_index = grouping.key_index
        if grouping is not None and grouping.check_choices:
            self._check_choices(frozenset(targets))

    def _check_choices(self, allowed: frozenset[int]) -> None:
        """Wrap the grouping's choosers so that a choice that is not a list (or tuple) of
        task ids of ``allowed`` raises (the emit paths' ``except`` names the grouping and
        fails the tuple) instead of reaching whatever queue has that id. A task id is an
        ``int`` itself: ``True`` or ``2.0``, equal to a target, is refused too (the
        transports carry int task ids only). A generator is refused, not read: checking it
        would use it up."""
        def check(t: Any) -> None:
            if t.__class__ is int and t in allowed:
                return
            kind = "" if t is None or t.__class__ is int else f" (a {type(t).__name__}, not an int)"
            raise TopologyError(f"chose task {t!r}{kind}, which is not one of its targets "
                                f"{sorted(allowed)}")

        def unlisted(chosen: Any, what: str) -> TopologyError:
            return TopologyError(f"{what} returned a value of type {type(chosen).__name__}, "
                                 "not a list of task ids")

        many = self.many
        assert many is not None

        def choose_tasks(task_id: int, values: Sequence[Any]) -> list[int]:
            chosen: Any = many(task_id, values)
            if chosen.__class__ is not list and not isinstance(chosen, (list, tuple)):
                raise unlisted(chosen, "choose_tasks")
            for t in chosen:
                check(t)
            return chosen       # type: ignore[return-value]    # a tuple passes too
        self.many = choose_tasks
        one, one_each = self.one, self.one_each
        if one is None or one_each is None:
            return

        def choose_one(values: Sequence[Any]) -> int:
            t = one(values)
            check(t)
            return t

        def choose_many(values_list: Sequence[Sequence[Any]]) -> list[int]:
            chosen: Any = one_each(values_list)
            if chosen.__class__ is not list and not isinstance(chosen, (list, tuple)):
                raise unlisted(chosen, "choose_many")
            if len(chosen) != len(values_list):
                raise TopologyError(f"chose {len(chosen)} tasks for {len(values_list)} tuples")
            for t in chosen:
                check(t)
            return chosen       # type: ignore[return-value]    # a tuple passes too
        self.one, self.one_each = choose_one, choose_many


def grouping_name(inp: Input, conf: Mapping[str, Any]) -> str | None:
    """The ``squall.groupings`` entry point that builds ``inp``'s grouping: the declared kind
    (``load_aware_shuffle`` for ``shuffle`` unless ``topology.disable.loadaware.messaging``),
    the name given to ``custom_grouping``, or None for a direct subscription or a grouping
    instance."""
    kind = inp.grouping
    if kind == "direct":
        return None
    if kind == "custom":
        return inp.custom if isinstance(inp.custom, str) else None
    if kind == "shuffle" and not conf.get(DISABLE_KEY):
        return LOAD_AWARE_SHUFFLE
    return kind


def make_grouping(inp: Input, source_fields: Sequence[str],
                  conf: Mapping[str, Any] | None = None) -> Grouping | None:
    """A configured (not yet prepared) grouping for ``inp``, or None for a direct
    subscription. PluginNotFoundError for a kind or name no entry point has, PluginLoadError
    for an entry point that is not a :class:`squall.Grouping`; whatever ``configure`` raises
    for a declaration it cannot serve."""
    conf = conf or {}
    name = grouping_name(inp, conf)
    if name is not None:
        grouping = drivers.load(GROUP, name)()
        if not isinstance(grouping, Grouping):
            raise PluginLoadError(f"{GROUP} {name!r} is not a squall.Grouping: "
                                  f"{type(grouping).__module__}.{type(grouping).__qualname__}")
    elif inp.grouping == "custom":
        grouping = copy.copy(inp.custom)
    else:
        return None
    grouping.configure(GroupingDeclaration(tuple(inp.fields), tuple(source_fields), conf))
    return grouping


def check_groupings(topology: Topology, conf: Mapping[str, Any]) -> None:
    """Build and configure every subscription's grouping as a worker will (``prepare``
    needs tasks and a context, and is left to the worker): TopologyError naming the
    subscription for one whose entry point is missing or whose ``configure`` refuses the
    declaration. Run at submit (a ``squall_validate_topology`` hook), so such a topology
    is refused there, not left restarting its workers."""
    for cid, spec in sorted(topology.components.items()):
        for inp in spec.inputs:
            source = topology.components.get(inp.component)
            stream = source.streams.get(inp.stream) if source is not None else None
            if stream is None:
                continue            # refused when the topology was built
            try:
                make_grouping(inp, stream.fields, conf)
            except Exception as exc:
                raise TopologyError(
                    f"component {cid!r}: its {inp.grouping} grouping on {inp.component!r} "
                    f"stream {inp.stream!r} cannot be configured: {type(exc).__name__}: "
                    f"{exc}") from exc


def choose_many_of(route: Route) -> Callable[[Sequence[Sequence[Any]]], list[int]]:
    """The route's ``choose_many`` (a task for each of a list of values, in one call);
    ValueError unless the route's grouping is a single-target one (``route.one`` is set)."""
    if route.one_each is None:
        raise ValueError(f"the route to {route.component!r} has no single-target grouping")
    return route.one_each
