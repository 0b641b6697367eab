"""The built-in stream groupings and the stable fields hash.

Fields grouping and partial key grouping pick tasks with :func:`fields_hash`, which is stable
across processes, machines and runs (unlike Python's salted ``hash()``): each selected value is
encoded to bytes (``str`` as UTF-8; ``bytes`` as is; ``bool`` as ``true``/``false``; ``int`` in
decimal; ``float`` by ``repr``; ``None`` as ``null``; anything else as sorted-key JSON, sets
as lists sorted by their values' encodings, and a dict whose keys do not sort together as a
list of its ``[key, value]`` pairs sorted the same way), the encodings are joined with a NUL
byte, and the CRC-32 of the result modulo the number of target tasks indexes the sorted target
task ids.

A value is encoded as the value it becomes on the wire, so it is routed alike before and
after it crosses workers: a subclass of ``str``, ``bytes``, ``int`` or ``float`` (a
``StrEnum``, an ``IntEnum``, ``numpy.str_``) as that base type; a date, time, ``Decimal`` or
``UUID`` by the ``repr`` of the value the serializer gives back; a type registered with
``topology.serializer.register`` (given the topology's table,
:class:`squall.serializers.types.ValueTypes`, as the fields groupings are) as its tag and
the value its encoder gives; any other object by its ``repr``, and
:class:`~squall.errors.TopologyError` naming its type where that ``repr`` is the default one
(it holds a memory address, which differs in every process).

>>> fields_hash(["cow"]) == fields_hash(("cow",))
True
>>> fields_hash(["cow"])
2580823964
"""
from __future__ import annotations

import datetime as dt
import itertools
import json
import operator
import random
import uuid
import zlib
from collections.abc import Mapping, Sequence
from decimal import Decimal
from functools import partial
from typing import Any

from squall.errors import TopologyError
from squall.serializers.types import REGISTER_KEY, ValueTypes
from squall.spi.grouping import (
    Grouping, GroupingDeclaration, LoadAwareGrouping, SingleTargetGrouping,
)

_crc32 = zlib.crc32
CACHE_SIZE = 65536      # per fields grouping of one emitting task


def encode_value(value: Any, types: ValueTypes | None = None) -> bytes:
    """The bytes :func:`fields_hash` hashes for one value (see the module docstring);
    ``types``: the topology's serializer table, for its registered types. TopologyError for
    an object that has no stable encoding."""
    t = type(value)
    if t is str:
        return value.encode()
    if t is bytes:
        return value
    if t is bool:
        return b"true" if value else b"false"
    if t is int:
        return str(value).encode()
    if t is float:
        return repr(value).encode()
    if value is None:
        return b"null"
    # subclasses travel as their base type (bool has none): encode the value that arrives
    if isinstance(value, str):
        return str.encode(value)
    if isinstance(value, bytes):
        return bytes(value)
    if isinstance(value, int):
        return int.__repr__(value).encode()
    if isinstance(value, float):
        return float.__repr__(value).encode()
    default = partial(_json_default, types)
    try:
        return json.dumps(value, sort_keys=True, default=default).encode()
    except TypeError:       # a dict whose keys do not sort together (1 and "b", say)
        return json.dumps(_pairs(value, types), sort_keys=True, default=default).encode()


#: the values both serializers carry beyond JSON's (sets aside): hashed by the ``repr`` of
#: the value the serializer gives back (:data:`_CARRIED`)
_BUILTIN_KINDS = (dt.datetime, dt.date, dt.time, dt.timedelta, Decimal, uuid.UUID)
_CARRIED = ValueTypes()


def _json_default(types: ValueTypes | None, value: Any) -> Any:
    """What JSON has no type for: a set as its values in the order of their encodings (its
    own order follows Python's salted hash); a date, time, Decimal or UUID as the ``repr``
    of the value that arrives (an aware datetime arrives with a fixed UTC offset, a subclass
    as its base type); a registered type (in ``types``) as ``[tag, encoded value]``; any other
    object as its ``repr``, unless that is the default one (holding a memory address)."""
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=partial(_order, types))
    if isinstance(value, _BUILTIN_KINDS):
        if value.__class__ not in _BUILTIN_KINDS or getattr(value, "tzinfo", None) is not None:
            value = _CARRIED.decode(*_CARRIED.encode(value))
        return repr(value)
    if types is not None:
        try:
            return list(types.encode(value))
        except TypeError:       # not a registered type
            pass
    if type(value).__repr__ is object.__repr__:
        kind = type(value)
        raise TopologyError(
            f"a fields grouping cannot hash a value of type {kind.__module__}."
            f"{kind.__qualname__}: its repr holds its memory address, which differs in every "
            f"process; register the type with {REGISTER_KEY} or give it a __repr__ that shows "
            f"its value")
    return repr(value)


def _order(types: ValueTypes | None, value: Any) -> tuple[bytes, str]:
    """The sort key of a set's item or a dict's key: its encoding, then (for values that
    encode alike, 1 and "1" say) the kind it travels as."""
    return encode_value(value, types), _kind(value)


def _kind(value: Any) -> str:
    for kind in (bool, int, float, str, bytes, dict):
        if isinstance(value, kind):
            return kind.__name__
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, (set, frozenset)):
        return "set"
    return f"{type(value).__module__}.{type(value).__qualname__}"


def _pairs(value: Any, types: ValueTypes | None) -> Any:
    """``value`` with every dict as its ``[key, value]`` pairs, sorted by the keys'
    encodings."""
    if isinstance(value, dict):
        order = partial(_order, types)
        return sorted(([_pairs(k, types), _pairs(v, types)] for k, v in value.items()),
                      key=lambda kv: order(kv[0]))
    if isinstance(value, (list, tuple)):
        return [_pairs(v, types) for v in value]
    return value


def fields_hash(selected: Sequence[Any], types: ValueTypes | None = None) -> int:
    """The stable hash of the selected field values (see the module docstring); ``types``:
    the topology's serializer table (:class:`ValueTypes`), for its registered types."""
    if len(selected) == 1:
        return _crc32(encode_value(selected[0], types))
    return _crc32(b"\x00".join(encode_value(v, types) for v in selected))


class ShuffleGrouping(SingleTargetGrouping):
    """Round-robin over a shuffled order of the targets: even load, no coordination."""

    check_choices = False      # chooses among its targets by construction

    def prepare(self, context: Any, stream: tuple[str, str], target_tasks: Sequence[int]) -> None:
        targets = list(target_tasks)
        random.shuffle(targets)
        self.target_tasks = sorted(targets)
        self._cycle = itertools.cycle(targets)
        self._next = self._cycle.__next__

    def choose_one(self, values: Sequence[Any]) -> int:
        return self._next()

    def choose_many(self, values_list: Sequence[Sequence[Any]]) -> list[int]:
        """``choose_one`` for each of ``values_list``, in one call."""
        return list(itertools.islice(self._cycle, len(values_list)))

    def choose_tasks(self, task_id: int, values: Sequence[Any]) -> list[int]:
        return [self._next()]


#: locality of a target task as an emitter sees it (:meth:`LoadMapping.scope`)
WORKER_LOCAL, HOST_LOCAL, EVERYWHERE = 0, 1, 2


class LoadMapping:
    """What a worker knows of its target tasks at one refresh: each task's load (0 idle, 1
    saturated; 0 when unknown) and its locality relative to the emitter (``WORKER_LOCAL``,
    ``HOST_LOCAL`` or ``EVERYWHERE``)."""

    __slots__ = ("loads", "scopes")

    def __init__(self, loads: dict[int, float], scopes: dict[int, int]) -> None:
        self.loads = loads
        self.scopes = scopes

    def get(self, task: int) -> float:
        return self.loads.get(task, 0.0)

    def scope(self, task: int) -> int:
        return self.scopes.get(task, EVERYWHERE)


class LoadAwareShuffleGrouping(ShuffleGrouping, LoadAwareGrouping):
    """Shuffle that steers by load and prefers near targets (the default ``shuffle``).

    ``higher`` and ``lower`` are the constructor's arguments, replaced in :meth:`configure` by
    the conf's ``topology.localityaware.higher.bound`` and ``...lower.bound``.

    Between refreshes it is a cycle over a precomputed sequence of targets, as cheap per tuple
    as plain shuffle. On each refresh (``refresh_load``, from the worker every
    ``LOAD_INTERVAL`` seconds) it first picks a scope: the targets in the emitter's worker,
    then those on its host, then all. While the scope's mean load is above ``higher`` it
    widens to the nearest scope whose added targets' mean is not (targets as loaded add the
    cost of crossing, not capacity: where every worker is overloaded, each keeps its tuples);
    it narrows again once the narrower scope's mean is below ``lower`` or the mean of the
    targets past it is above ``higher``. Within the scope each target has a weight
    (1..``MAX_WEIGHT``): targets within ``SLACK`` of the least loaded gain ``GROW``, the others
    lose ``SHRINK`` (congestion is answered fast, recovery is gradual), and the sequence gives
    each target a share in proportion to its weight, spread evenly. Equal loads give plain
    round-robin. Before the first refresh, and with every load unknown, all targets share
    evenly.
    """

    MAX_WEIGHT = 100
    GROW, SHRINK, SLACK = 2, 10, 0.05
    RING = 1000

    def __init__(self, higher: float = 0.8, lower: float = 0.2) -> None:
        self.higher = float(higher)
        self.lower = float(lower)

    def configure(self, declaration: GroupingDeclaration) -> None:
        """The locality bounds from the conf; ConfigError when they are out of range."""
        from squall.runtime.load import bounds     # the runtime's reading of those keys
        self.higher, self.lower = bounds(declaration.conf)

    def prepare(self, context: Any, stream: tuple[str, str], target_tasks: Sequence[int]) -> None:
        super().prepare(context, stream, target_tasks)
        self.weights = {t: self.MAX_WEIGHT for t in self.target_tasks}
        self._phase = {t: random.random() for t in self.target_tasks}
        self.scope = -1                 # none chosen yet: all targets, evenly
        self.shares: dict[int, float] = {t: 1 / len(self.target_tasks)
                                         for t in self.target_tasks}

    def refresh_load(self, load: LoadMapping) -> None:
        # the scopes that hold targets, nearest first; the current one is the widest of them
        # not beyond the last choice (the nearest, at first or when the assignment moved
        # every target that was that near)
        levels = sorted({load.scope(t) for t in self.target_tasks})
        i = max(0, sum(level <= self.scope for level in levels) - 1)

        def reach(level: int) -> list[int]:
            return [t for t in self.target_tasks if load.scope(t) <= level]

        def mean(tasks: list[int]) -> float:
            return sum(load.get(t) for t in tasks) / len(tasks)

        def beyond(level: int) -> list[int]:
            return [t for t in self.target_tasks if load.scope(t) > level]

        inside = reach(levels[i])
        moved = False
        if mean(inside) > self.higher:
            # widen to the nearest scope whose added targets have room on the whole: targets
            # as loaded as these would add the cost of crossing, not capacity
            outside = beyond(levels[i])
            for j in range(i + 1, len(levels)):
                added = [t for t in outside if load.scope(t) <= levels[j]]
                if mean(added) <= self.higher:
                    i, moved = j, True
                    inside = reach(levels[i])
                    break
        if not moved and i > 0:
            nearer = reach(levels[i - 1])
            near = mean(nearer)
            far = mean(beyond(levels[i - 1]))
            if near < self.lower or far > self.higher:
                # the nearer targets have room again, or the farther ones are overloaded
                # themselves: they add the cost of crossing, not capacity
                i -= 1
                inside = nearer
        scope = levels[i]
        if scope != self.scope:
            for t in self.weights:
                self.weights[t] = self.MAX_WEIGHT
            self.scope = scope
        least = min(load.get(t) for t in inside)
        weights = self.weights
        for t in inside:
            if load.get(t) <= least + self.SLACK:
                weights[t] = min(self.MAX_WEIGHT, weights[t] + self.GROW)
            else:
                weights[t] = max(1, weights[t] - self.SHRINK)
        total = sum(weights[t] for t in inside)
        self.shares = {t: weights[t] / total for t in inside}
        self._set_ring(self._spread(self.shares))

    def _spread(self, shares: dict[int, float]) -> list[int]:
        """A sequence holding each target about ``share * RING`` times, evenly spaced (each
        target's slots are offset by a random phase so emitters do not move in step)."""
        if len(set(shares.values())) == 1:
            return list(shares)             # equal shares: one round of each
        slots: list[tuple[float, int]] = []
        phase = self._phase
        for t, share in shares.items():
            n = max(1, round(share * self.RING))
            slots.extend(((k + phase[t]) / n, t) for k in range(n))
        slots.sort()
        return [t for _, t in slots]

    def _set_ring(self, ring: list[int]) -> None:
        random_start = random.randrange(len(ring))
        self._cycle = itertools.cycle(ring[random_start:] + ring[:random_start])
        self._next = self._cycle.__next__


class FieldsGrouping(SingleTargetGrouping):
    """The same selected field values always reach the same task.

    Built from its entry point, it learns its fields in :meth:`configure`; built directly, from
    its arguments: the selected fields, found in :meth:`configure` among the subscribed
    stream's fields (or, given, in ``source_fields``, for use without a topology). With one
    field it declares that field's index as ``key_index`` (a subclass whose choice depends on
    more than that value must set ``key_index`` back to None). The types the topology
    registers with ``topology.serializer.register`` (read from the conf :meth:`configure`
    is given) hash as the serializer carries them.
    """

    #: the topology's conf, as :meth:`configure` was given it (its registered types)
    _conf: Mapping[str, Any] = {}

    def __init__(self, fields: Sequence[str] = (), source_fields: Sequence[str] = ()) -> None:
        self.fields = tuple(fields)
        self.indexes: tuple[int, ...] = ()
        self.key_index: int | None = None
        if source_fields:
            self._find(self.fields, source_fields)

    def configure(self, declaration: GroupingDeclaration) -> None:
        """The declared fields, found in the stream's fields (without declared fields, as for
        an instance given to ``custom_grouping``, those given to the constructor);
        TopologyError if there are none or one is not a field of the stream."""
        self._conf = declaration.conf
        fields = declaration.fields or self.fields
        if not fields:
            raise TopologyError(f"{type(self).__name__} needs at least one field: declare it "
                                "with fields_grouping or partial_key_grouping")
        if declaration.source_fields or not self.indexes:
            self._find(fields, declaration.source_fields)

    def _find(self, fields: Sequence[str], source_fields: Sequence[str]) -> None:
        """:meth:`_select` ``fields`` in ``source_fields``: TopologyError naming the ones
        that are not among them."""
        missing = [f for f in fields if f not in source_fields]
        if missing:
            raise TopologyError(f"{type(self).__name__} on fields {missing}, which the stream "
                                f"does not have (its fields: {list(source_fields)})")
        self._select(fields, source_fields)

    def _select(self, fields: Sequence[str], source_fields: Sequence[str]) -> None:
        self.fields = tuple(fields)
        self.indexes = tuple(list(source_fields).index(f) for f in self.fields)
        self.key_index = self.indexes[0] if len(self.indexes) == 1 else None

    def prepare(self, context: Any, stream: tuple[str, str], target_tasks: Sequence[int]) -> None:
        self.target_tasks = targets = sorted(target_tasks)
        self._types = types = ValueTypes(self._conf)   # imported by the worker's serializer
        n = len(targets)
        indexes = self.indexes
        if len(indexes) == 1:
            i = indexes[0]
            cache: dict[str, int] = {}     # str value -> task: a dict hit beats encode + CRC
            cache_get = cache.get

            def choose_one(values: Sequence[Any]) -> int:
                v = values[i]
                if v.__class__ is str:
                    t = cache_get(v)
                    if t is None:
                        if len(cache) >= CACHE_SIZE:
                            cache.clear()
                        t = cache[v] = targets[_crc32(v.encode()) % n]
                    return t
                return targets[_crc32(encode_value(v, types)) % n]

            field = operator.itemgetter(i)

            def choose_many(values_list: Sequence[Sequence[Any]]) -> list[int]:
                if n == 1:
                    return targets * len(values_list)
                try:    # C loops: no Python step per values
                    chosen = list(map(cache_get, map(field, values_list)))
                except TypeError:           # an unhashable value: not a cached str
                    chosen = [None]
                if None in chosen:
                    return [choose_one(values) for values in values_list]
                return chosen  # type: ignore[return-value]
        else:
            def choose_one(values: Sequence[Any]) -> int:
                return targets[fields_hash([values[i] for i in indexes], types) % n]

            def choose_many(values_list: Sequence[Sequence[Any]]) -> list[int]:
                if n == 1:
                    return targets * len(values_list)
                return [choose_one(values) for values in values_list]
        self.choose_one = choose_one  # type: ignore[method-assign]
        self.choose_many = choose_many  # type: ignore[method-assign]

    def choose_one(self, values: Sequence[Any]) -> int:
        return self.target_tasks[fields_hash([values[i] for i in self.indexes], self._types)
                                 % len(self.target_tasks)]

    def choose_many(self, values_list: Sequence[Sequence[Any]]) -> list[int]:
        return [self.choose_one(values) for values in values_list]

    def choose_tasks(self, task_id: int, values: Sequence[Any]) -> list[int]:
        return [self.choose_one(values)]


class PartialKeyGrouping(FieldsGrouping):
    """Each key goes to the less loaded (as seen by this emitter) of two candidate tasks (so
    no ``key_index``: a key's task changes with the counts)."""

    def _select(self, fields: Sequence[str], source_fields: Sequence[str]) -> None:
        super()._select(fields, source_fields)
        self.key_index = None

    def prepare(self, context: Any, stream: tuple[str, str], target_tasks: Sequence[int]) -> None:
        self.target_tasks = sorted(target_tasks)
        self._types = ValueTypes(self._conf)
        self.load = {t: 0 for t in self.target_tasks}

    def choose_one(self, values: Sequence[Any]) -> int:
        targets = self.target_tasks
        key = [values[i] for i in self.indexes]
        h1 = fields_hash(key, self._types)
        h2 = _crc32(b"\x01squall", h1)
        a, b = targets[h1 % len(targets)], targets[h2 % len(targets)]
        chosen = a if self.load[a] <= self.load[b] else b
        self.load[chosen] += 1
        return chosen


class AllGrouping(Grouping):
    """Every target task receives a copy."""

    check_choices = False      # chooses among its targets by construction

    def choose_tasks(self, task_id: int, values: Sequence[Any]) -> list[int]:
        return self.target_tasks


class GlobalGrouping(SingleTargetGrouping):
    """Everything goes to the target's lowest task id."""

    check_choices = False      # chooses among its targets by construction

    def prepare(self, context: Any, stream: tuple[str, str], target_tasks: Sequence[int]) -> None:
        self.target_tasks = [min(target_tasks)]

    def choose_one(self, values: Sequence[Any]) -> int:
        return self.target_tasks[0]

    def choose_many(self, values_list: Sequence[Sequence[Any]]) -> list[int]:
        return self.target_tasks * len(values_list)

    def choose_tasks(self, task_id: int, values: Sequence[Any]) -> list[int]:
        return self.target_tasks


class NoneGrouping(SingleTargetGrouping):
    """The emitter does not care: a random target."""

    check_choices = False      # chooses among its targets by construction

    def prepare(self, context: Any, stream: tuple[str, str], target_tasks: Sequence[int]) -> None:
        self.target_tasks = sorted(target_tasks)
        self._rng = random.Random()

    def choose_one(self, values: Sequence[Any]) -> int:
        return self._rng.choice(self.target_tasks)


class LocalOrShuffleGrouping(ShuffleGrouping):
    """Shuffle among the targets in the emitter's own worker, if it has any."""

    def prepare(self, context: Any, stream: tuple[str, str], target_tasks: Sequence[int]) -> None:
        local = set(getattr(context, "worker_tasks", ()) or ())
        chosen = [t for t in target_tasks if t in local] or list(target_tasks)
        super().prepare(context, stream, chosen)

