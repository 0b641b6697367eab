"""The validated topology: components, their streams and subscriptions, tasks and executors.

A :class:`Topology` is what :meth:`TopologyBuilder.create_topology` returns and what travels to
workers as JSON (``to_json`` / ``from_json``): components are referenced by ``module:qualname``
and imported in the worker from the topology's code package; nothing is pickled.

Task ids are fixed for the topology's life: user components sorted by id, then system
components (ids starting with ``__``: ackers, metrics consumers) sorted by id, each given
``num_tasks`` consecutive ids starting at 1 — so a user component's task ids are the same in the
topology ``create_topology`` returns and in the running topology.
An executor runs a contiguous range ``(start, end)`` of one component's tasks.
"""
from __future__ import annotations

import importlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from squall.api.tuple import Stream
from squall.errors import TopologyError

#: a topology name: it is part of its id, which names nodes of the cluster state and files on
#: every machine (ASCII letters and digits, so every file system and shell takes it)
NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
#: a topology's id (``<name>-<n>-<time>``) names its files on every machine (the package
#: folder, ``<id>-<port>.metrics.log``): a longer name passes none of them under the 255
#: bytes a file name may have
MAX_NAME = 128


def check_topology_name(name: object) -> str:
    """``name`` if a cluster takes it as a topology's name (a LocalCluster checks the same, so
    a name tested locally is a name that submits); TopologyError saying the rule if not."""
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise TopologyError(f"invalid topology name {name!r}: use ASCII letters, digits, "
                            "'_', '.' and '-' (not '.' or '-' first)")
    if len(name) > MAX_NAME:
        raise TopologyError(f"invalid topology name {name[:20]}... ({len(name)} "
                            f"characters): at most {MAX_NAME}")
    return name

ACKER = "__acker"


@dataclass(frozen=True)
class Input:
    """A subscription: ``component``'s ``stream`` reaches the subscriber by ``grouping``."""
    component: str
    stream: str
    grouping: str
    fields: tuple[str, ...] = ()
    #: an entry-point name, or a Grouping instance (its class and JSON state on the wire; that
    #: JSON itself where the topology was read without resolving classes, as nimbus does)
    custom: Any = None

    def to_json(self) -> dict[str, Any]:
        custom = self.custom
        if custom is not None and not isinstance(custom, (str, dict)):
            custom = {"class": class_ref(type(custom)), "state": grouping_state(custom)}
        return {"component": self.component, "stream": self.stream, "grouping": self.grouping,
                "fields": list(self.fields), "custom": custom}

    @classmethod
    def from_json(cls, d: dict[str, Any], *, resolve: bool = True) -> Input:
        custom = d.get("custom")
        if isinstance(custom, dict) and resolve:
            # rebuilt as a copy is, without calling __init__ (which may take arguments)
            grouping_cls = resolve_class(custom["class"])
            obj = grouping_cls.__new__(grouping_cls)
            obj.__dict__.update(custom.get("state") or {})
            custom = obj
        return cls(d["component"], d["stream"], d["grouping"], tuple(d.get("fields") or ()),
                   custom)


@dataclass
class ComponentSpec:
    id: str
    kind: str                                  # "spout", "bolt" or "acker"
    cls: type | None
    ref: str                                   # "module:qualname" of the class
    parallelism: int = 1
    num_tasks: int = 1
    config: dict[str, Any] = field(default_factory=dict)
    resources: dict[str, Any] = field(default_factory=dict)
    inputs: list[Input] = field(default_factory=list)
    streams: dict[str, Stream] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "ref": self.ref,
                "parallelism": self.parallelism, "num_tasks": self.num_tasks,
                "config": self.config, "resources": self.resources,
                "inputs": [i.to_json() for i in self.inputs],
                "streams": [{"name": s.name, "fields": list(s.fields), "direct": s.direct}
                            for s in self.streams.values()]}


def class_ref(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def resolve_class(ref: str) -> Any:
    """Import ``module:qualname``; TopologyError with the reason if that fails."""
    module_name, _, qualname = ref.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except Exception as exc:
        raise TopologyError(f"cannot load component class {ref!r}: {exc}") from exc
    return obj


def grouping_state(obj: Any) -> dict[str, Any]:
    """The attributes of a grouping instance, which travel to the workers as JSON;
    TopologyError naming the first that would not come back as it is (a dict with keys that
    are not str, a set, an object): that instance would route differently on a cluster than
    in a LocalCluster. Tuples come back as lists."""
    state = getattr(obj, "__dict__", None)
    if state is None:
        raise TopologyError(f"grouping {type(obj).__qualname__}: an instance given to "
                            "custom_grouping travels to the workers as its attributes (JSON), "
                            "and this one has no __dict__")
    for k, v in state.items():
        bad = _not_json(v)
        if bad is not None:
            raise TopologyError(
                f"grouping {type(obj).__qualname__}: attribute {k!r} holds {bad}, which JSON "
                "would not bring back as it is; an instance given to custom_grouping travels "
                "to the workers as its attributes in JSON (str-keyed dicts, lists, str, "
                "numbers, bool, None): convert it, or build it in configure() or prepare()")
    return dict(state)


def _not_json(v: Any) -> str | None:
    """What in ``v`` JSON would not bring back (None: all of it round-trips)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return None
    if isinstance(v, (list, tuple)):
        return next((bad for item in v if (bad := _not_json(item)) is not None), None)
    if isinstance(v, dict):
        for key, item in v.items():
            if not isinstance(key, str):
                return f"a dict key {key!r} that is not a str"
            bad = _not_json(item)
            if bad is not None:
                return bad
        return None
    return f"a {type(v).__name__}"


def split_tasks(task_ids: list[int], executors: int) -> list[tuple[int, int]]:
    """Split consecutive task ids into ``executors`` contiguous, nearly equal ranges."""
    executors = max(1, min(executors, len(task_ids)))
    base, extra = divmod(len(task_ids), executors)
    out, i = [], 0
    for n in range(executors):
        size = base + (1 if n < extra else 0)
        out.append((task_ids[i], task_ids[i + size - 1]))
        i += size
    return out


class Topology:
    """A validated, immutable-by-convention topology description."""

    def __init__(self, components: Iterable[ComponentSpec], conf: dict[str, Any] | None = None):
        self.components: dict[str, ComponentSpec] = {c.id: c for c in components}
        self.conf: dict[str, Any] = dict(conf or {})
        self._assign_tasks()

    def _assign_tasks(self) -> None:
        self.task_to_component: dict[int, str] = {}
        self._tasks: dict[str, list[int]] = {}
        next_id = 1
        for cid in sorted(self.components, key=lambda c: (c.startswith("__"), c)):
            n = self.components[cid].num_tasks
            self._tasks[cid] = list(range(next_id, next_id + n))
            for t in self._tasks[cid]:
                self.task_to_component[t] = cid
            next_id += n

    # -- structure ----------------------------------------------------------------------------
    @property
    def spouts(self) -> list[str]:
        return [c for c, s in sorted(self.components.items()) if s.kind == "spout"]

    @property
    def bolts(self) -> list[str]:
        return [c for c, s in sorted(self.components.items()) if s.kind == "bolt"]

    def tasks(self, component_id: str) -> list[int]:
        return list(self._tasks.get(component_id, []))

    def all_tasks(self) -> list[int]:
        return sorted(self.task_to_component)

    def executors(self, component_id: str) -> list[tuple[int, int]]:
        spec = self.components[component_id]
        return split_tasks(self._tasks[component_id], spec.parallelism)

    def all_executors(self) -> list[tuple[int, int]]:
        return [e for cid in sorted(self.components) for e in self.executors(cid)]

    def executor_component(self) -> dict[tuple[int, int], str]:
        return {e: cid for cid in sorted(self.components) for e in self.executors(cid)}

    def subscribers(self, component_id: str, stream: str) -> list[tuple[str, Input]]:
        """``(subscriber id, input)`` for every bolt subscribed to that stream, sorted."""
        return [(cid, i) for cid, spec in sorted(self.components.items()) for i in spec.inputs
                if i.component == component_id and i.stream == stream]

    def with_parallelism(self, executors: dict[str, int]) -> Topology:
        """A copy with some components' executor counts changed (rebalance); task ids stay.
        TopologyError naming the component for a count that is not an int >= 1 (a bool or
        a str such as ``"2"`` included: nimbus and LocalCluster both check through here)."""
        comps = []
        for cid, spec in self.components.items():
            if cid in executors:
                n = executors[cid]
                if n.__class__ is bool or not isinstance(n, int) or n < 1:
                    raise TopologyError(f"component {cid!r}: executors must be an integer "
                                        f">= 1, got {n!r}")
                spec = replace(spec, parallelism=min(n, spec.num_tasks))
            comps.append(spec)
        unknown = set(executors) - set(self.components)
        if unknown:
            raise TopologyError(f"rebalance: no component named {sorted(unknown)[0]!r}; "
                                f"components: {', '.join(sorted(self.components))}")
        return Topology(comps, self.conf)

    def with_components(self, extra: Iterable[ComponentSpec]) -> Topology:
        return Topology(list(self.components.values()) + list(extra), self.conf)

    # -- serialization ------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {"components": [c.to_json() for _, c in sorted(self.components.items())],
                "conf": self.conf}

    @classmethod
    def from_json(cls, d: dict[str, Any], *, resolve: bool = True) -> Topology:
        comps = []
        for c in d["components"]:
            klass = resolve_class(c["ref"]) if resolve and c["ref"] else None
            comps.append(ComponentSpec(
                id=c["id"], kind=c["kind"], cls=klass, ref=c["ref"],
                parallelism=c["parallelism"], num_tasks=c["num_tasks"], config=c["config"],
                resources=c.get("resources") or {},
                inputs=[Input.from_json(i, resolve=resolve) for i in c["inputs"]],
                streams={s["name"]: Stream(s["fields"], s["name"], s["direct"])
                         for s in c["streams"]}))
        return cls(comps, d.get("conf") or {})

    def __repr__(self) -> str:
        return f"Topology({', '.join(sorted(self.components))})"
