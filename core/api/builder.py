"""The fluent topology builder.

>>> from squall import TopologyBuilder, Spout, Bolt
>>> class Words(Spout):
...     outputs = ["word"]
>>> class Count(Bolt):
...     def process(self, tup): pass
>>> b = TopologyBuilder()
>>> _ = b.set_spout("words", Words, parallelism=2)
>>> _ = b.set_bolt("count", Count, parallelism=2).fields_grouping("words", ["word"])
>>> b.create_topology().tasks("count")
[1, 2]
"""
from __future__ import annotations

import copy
import inspect
import sys
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from typing import Any

from squall import drivers
from squall.api.component import Bolt, Spout
from squall.api.topology import ComponentSpec, Input, Topology, class_ref, grouping_state
from squall.api.tuple import MAX_ID_CHARS, Stream
from squall.config import check_topology_keys
from squall.errors import ConfigError, PluginNotFoundError, TopologyError
from squall.scheduling.resources import check_request
from squall.spi.grouping import Grouping
from squall.spi.state import node_name_problem
from squall.windowing.topology import complete_windowed

#: the configuration a topology is being loaded for (``squall local`` and ``squall submit`` set
#: it to theirs, config files and ``-c`` included, while they import and call the target):
#: ``create_topology()`` without a conf checks its windowed bolts against it
LOADING_CONF: ContextVar[Mapping[str, Any] | None] = ContextVar("squall_loading_conf",
                                                                default=None)


def normalize_outputs(owner: str, declared: Any) -> dict[str, Stream]:
    """Turn ``outputs`` / ``declare_outputs()`` into ``{stream name: Stream}``."""
    if declared is None:
        declared = []
    if isinstance(declared, (str, Stream)):
        declared = [declared]
    items = list(declared)
    if all(isinstance(x, str) for x in items):
        if len(set(items)) != len(items):
            raise TopologyError(f"component {owner!r} stream 'default' repeats a field: "
                                f"{items}")
        return {"default": Stream(items)} if items else {}
    if not all(isinstance(x, Stream) for x in items):
        raise TopologyError(f"component {owner!r}: outputs must be a list of field names or a "
                            f"list of Stream objects, not a mix: {items!r}")
    streams: dict[str, Stream] = {}
    for s in items:
        if s.name in streams:
            raise TopologyError(f"component {owner!r} declares stream {s.name!r} twice")
        if len(set(s.fields)) != len(s.fields):
            raise TopologyError(f"component {owner!r} stream {s.name!r} repeats a field: "
                                f"{list(s.fields)}")
        streams[s.name] = s
    return streams


class _Declarer:
    def __init__(self, builder: TopologyBuilder, spec: ComponentSpec) -> None:
        self._builder = builder
        self._spec = spec

    def set_num_tasks(self, n: int) -> _Declarer:
        if not isinstance(n, int) or n < 1:
            raise TopologyError(f"component {self._spec.id!r}: num tasks must be a positive "
                                f"integer, got {n!r}")
        self._spec.num_tasks = n
        self._spec.config["topology.tasks"] = n
        return self

    def add_config(self, key: str, value: Any) -> _Declarer:
        self._spec.config[key] = value
        return self

    def set_resources(self, cpu: float | None = None, memory_mb: float | None = None,
                      net: float | None = None, disk: float | None = None) -> _Declarer:
        asked = {"cpu": cpu, "memory_mb": memory_mb, "net": net, "disk": disk}
        try:
            check_request(asked)
        except ConfigError as exc:
            raise TopologyError(f"component {self._spec.id!r}: {exc}") from None
        for name, value in asked.items():
            if value is not None:
                self._spec.resources[name] = value
        return self


class SpoutDeclarer(_Declarer):
    pass


class BoltDeclarer(_Declarer):
    def _add(self, component: str, stream: str | None, grouping: str,
             fields: Sequence[str] = (), custom: Any = None) -> BoltDeclarer:
        if isinstance(fields, str):     # one field name, as in Stream("word")
            fields = [fields]
        elif not isinstance(fields, (list, tuple)) or not all(
                isinstance(f, str) for f in fields):
            raise TopologyError(f"bolt {self._spec.id!r}: {grouping} grouping on "
                                f"{component!r} needs a list of field names, e.g. ['word'], "
                                f"not {type(fields).__name__} {fields!r:.80}")
        if stream is None:      # the default stream, as emit(stream=None) and streamparse say
            stream = "default"
        if not isinstance(stream, str):
            raise TopologyError(f"bolt {self._spec.id!r}: {grouping} grouping on "
                                f"{component!r}: a stream name is a str (None or left out "
                                f"for the default stream), not {type(stream).__name__} "
                                f"{stream!r}")
        self._spec.inputs.append(Input(str(component), stream, grouping,
                                       tuple(fields), custom))
        return self

    def shuffle_grouping(self, component: str, stream: str | None = "default") -> BoltDeclarer:
        return self._add(component, stream, "shuffle")

    def fields_grouping(self, component: str, fields: Sequence[str],
                        stream: str | None = "default") -> BoltDeclarer:
        return self._add(component, stream, "fields", fields)

    def all_grouping(self, component: str, stream: str | None = "default") -> BoltDeclarer:
        return self._add(component, stream, "all")

    def global_grouping(self, component: str, stream: str | None = "default") -> BoltDeclarer:
        return self._add(component, stream, "global")

    def none_grouping(self, component: str, stream: str | None = "default") -> BoltDeclarer:
        return self._add(component, stream, "none")

    def direct_grouping(self, component: str, stream: str | None = "default") -> BoltDeclarer:
        return self._add(component, stream, "direct")

    def local_or_shuffle_grouping(self, component: str,
                                  stream: str | None = "default") -> BoltDeclarer:
        return self._add(component, stream, "local_or_shuffle")

    def partial_key_grouping(self, component: str, fields: Sequence[str],
                             stream: str | None = "default") -> BoltDeclarer:
        return self._add(component, stream, "partial_key", fields)

    def custom_grouping(self, component: str, grouping: str | Grouping,
                        stream: str | None = "default") -> BoltDeclarer:
        if not isinstance(grouping, (str, Grouping)):
            raise TopologyError(f"component {self._spec.id!r}: custom_grouping takes an "
                                f"entry-point name or a squall.Grouping instance, got "
                                f"{grouping!r}")
        if isinstance(grouping, Grouping):
            try:
                grouping_state(grouping)        # what travels to a cluster's workers
            except TopologyError as exc:
                raise TopologyError(f"component {self._spec.id!r}: {exc}") from None
        return self._add(component, stream, "custom", (), grouping)


class TopologyBuilder:
    """Declare spouts and bolts, then :meth:`create_topology` validates and freezes them."""

    def __init__(self) -> None:
        self._specs: dict[str, ComponentSpec] = {}

    def _declare(self, kind: str, base: type, id: str, cls: Any, parallelism: int,
                 config: dict[str, Any] | None) -> ComponentSpec:
        if not isinstance(id, str) or not id:
            raise TopologyError(f"component id must be a non-empty string, got {id!r}")
        if len(id) > MAX_ID_CHARS:
            raise TopologyError(f"component id {id[:40]!r}... has {len(id)} characters, more "
                                f"than the {MAX_ID_CHARS} a component id may have")
        if id.startswith("__"):
            raise TopologyError(f"component id {id!r}: ids starting with '__' are reserved")
        problem = node_name_problem(id)
        if problem is not None:    # the id names its /errors node on a cluster
            raise TopologyError(f"component id {id!r} {problem}; a component id must be "
                                "usable as one segment of a cluster state path")
        if id in self._specs:
            raise TopologyError(f"component id {id!r} is declared twice")
        if not isinstance(cls, type):
            raise TopologyError(f"component {id!r}: pass the class, not "
                                f"{type(cls).__name__} {cls!r} (components are constructed "
                                "in the worker)")
        if not issubclass(cls, base):
            raise TopologyError(f"component {id!r}: {cls.__qualname__} is not a squall "
                                f"{base.__name__} subclass")
        if not isinstance(parallelism, int) or isinstance(parallelism, bool) or parallelism < 1:
            raise TopologyError(f"component {id!r}: parallelism must be a positive integer, "
                                f"got {parallelism!r}")
        if config is not None and not isinstance(config, dict):
            raise TopologyError(f"component {id!r}: config must be a dict, got {config!r}")
        spec = ComponentSpec(id=id, kind=kind, cls=cls, ref=class_ref(cls),
                             parallelism=parallelism, num_tasks=parallelism,
                             config=copy.deepcopy(config or {}))
        self._specs[id] = spec
        return spec

    def set_spout(self, id: str, cls: type[Spout], parallelism: int = 1, *,
                  config: dict[str, Any] | None = None) -> SpoutDeclarer:
        return SpoutDeclarer(self, self._declare("spout", Spout, id, cls, parallelism, config))

    def set_bolt(self, id: str, cls: type[Bolt], parallelism: int = 1, *,
                 config: dict[str, Any] | None = None) -> BoltDeclarer:
        spec = self._declare("bolt", Bolt, id, cls, parallelism, config)
        if cls.process is Bolt.process and not hasattr(cls, "process_batch"):
            del self._specs[id]
            raise TopologyError(f"component {id!r}: {cls.__qualname__} defines neither "
                                "process() nor process_batch()")
        return BoltDeclarer(self, spec)

    def create_topology(self, conf: dict[str, Any] | None = None) -> Topology:
        """Validate every declaration and return the :class:`Topology`."""
        if not any(s.kind == "spout" for s in self._specs.values()):
            raise TopologyError("a topology needs at least one spout")
        specs = {cid: _frozen_copy(s) for cid, s in self._specs.items()}
        for spec in specs.values():
            _check_first_call(spec)
            # a topology-wide key in a component's config: refused here as at submit (a
            # windowed bolt's timeout checks below read the topology's)
            check_topology_keys(spec.id, spec.config)
            try:
                declared = spec.cls.declare_outputs(spec.config)  # type: ignore[union-attr]
            except TopologyError:
                raise
            except Exception as exc:
                raise TopologyError(f"component {spec.id!r}: declare_outputs failed: "
                                    f"{exc!r}") from exc
            spec.streams = normalize_outputs(spec.id, declared)
            for name in spec.streams:
                if name.startswith("__"):
                    raise TopologyError(f"component {spec.id!r}: stream names starting with "
                                        f"'__' are reserved ({name!r})")
        # stateful classes before windowed ones: a class both is told that first
        from squall.stateful.wiring import check_classes, wire
        check_classes(specs)
        # late streams, before subscriptions' checks
        complete_windowed(specs, conf if conf is not None else LOADING_CONF.get())
        for spec in specs.values():
            seen = set()
            for inp in spec.inputs:
                _check_input(spec, inp, specs)
                key = (inp.component, inp.stream)
                if key in seen:
                    raise TopologyError(f"bolt {spec.id!r} subscribes to {inp.component}:"
                                        f"{inp.stream} twice")
                seen.add(key)
        if "squall.multilang" in sys.modules:    # imported by any shell component's class
            from squall.multilang.link import check_commands
            check_commands(specs.values())
        # stateful bolts (API.md section 11): the __checkpoint spout and the checkpoint path
        wire(specs, conf)
        return Topology(specs.values(), conf)


#: what a spout's and a bolt's first call is named in Storm; squall's is ``initialize``
STORM_FIRST_CALL = {"spout": "open", "bolt": "prepare"}


def _check_first_call(spec: ComponentSpec) -> None:
    """Refuse a component class of the user's that defines Storm's first call (``open`` of
    a spout, ``prepare`` of a bolt, taking a conf and a context) and no ``initialize``:
    squall would never call it. Classes squall ships are not checked."""
    name = STORM_FIRST_CALL.get(spec.kind)
    cls = spec.cls
    if name is None or not isinstance(cls, type) or not _users(cls, name):
        return
    if _users(cls, "initialize") or not _takes_conf_and_context(getattr(cls, name)):
        return
    raise TopologyError(f"{spec.kind} {spec.id!r} defines {name}(); squall calls "
                        f"initialize(conf, context) instead — rename it")


def _users(cls: type, attr: str) -> bool:
    """Whether ``attr`` of ``cls`` is defined by a class outside squall."""
    for klass in cls.__mro__:
        if attr in klass.__dict__:
            return not str(getattr(klass, "__module__", "")).startswith("squall.")
    return False


def _takes_conf_and_context(method: Any) -> bool:
    """Whether ``method`` (a function of a class) can be called as Storm calls its first
    call: with a conf and a context, and a collector or not."""
    try:
        sig = inspect.signature(method)
    except (TypeError, ValueError):
        return False
    for args in (3, 4):     # self, conf, context[, collector]
        try:
            sig.bind(*[None] * args)
        except TypeError:
            continue
        return True
    return False


def _frozen_copy(spec: ComponentSpec) -> ComponentSpec:
    """A copy later builder calls (and changes to the topology) do not reach."""
    out = copy.copy(spec)
    out.inputs = list(spec.inputs)
    out.config = copy.deepcopy(spec.config)
    out.resources = dict(spec.resources)
    return out


def _check_input(spec: ComponentSpec, inp: Input, specs: dict[str, ComponentSpec]) -> None:
    where = f"bolt {spec.id!r}"
    source = specs.get(inp.component)
    if source is None:
        raise TopologyError(f"{where} subscribes to unknown component {inp.component!r}; "
                            f"components: {', '.join(sorted(specs))}")
    stream = source.streams.get(inp.stream)
    if stream is None:
        raise TopologyError(f"{where} subscribes to stream {inp.stream!r} that component "
                            f"{inp.component!r} does not declare; its streams: "
                            f"{', '.join(sorted(source.streams)) or 'none'}")
    if inp.grouping in ("fields", "partial_key"):
        if not inp.fields:
            raise TopologyError(f"{where}: {inp.grouping} grouping on {inp.component}:"
                                f"{inp.stream} needs at least one field")
        for f in inp.fields:
            if f not in stream.fields:
                raise TopologyError(f"{where}: {inp.grouping} grouping on field {f!r}, but "
                                    f"stream {inp.component}:{inp.stream} has fields "
                                    f"{list(stream.fields)}")
    if inp.grouping == "direct" and not stream.direct:
        raise TopologyError(f"{where}: direct grouping on {inp.component}:{inp.stream}, which "
                            "is not declared direct=True")
    if inp.grouping != "direct" and stream.direct:
        raise TopologyError(f"{where}: stream {inp.component}:{inp.stream} is direct; "
                            "subscribe to it with direct_grouping")
    # every grouping but direct is built from the squall.groupings entry point of its kind,
    # or of the name given to custom_grouping
    name = inp.custom if inp.grouping == "custom" else inp.grouping
    if inp.grouping != "direct" and isinstance(name, str):
        try:
            drivers.check("squall.groupings", name)
        except PluginNotFoundError as exc:
            raise TopologyError(f"{where}: {exc}") from None
