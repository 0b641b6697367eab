"""streamparse compatibility: a streamparse ``Topology`` class as a squall topology, and its
Python components (pystorm ``Bolt``/``Spout`` subclasses) hosted in-process.

:func:`from_streamparse` reads the ``spec()`` DSL (each ``Bolt.spec(...)``/``Spout.spec(...)``
attribute's ``inputs`` with their ``Grouping``, ``par``, ``config`` and the component's
``outputs``; the class's ``config``) and builds the same topology with
:class:`~squall.TopologyBuilder`. It reads the DSL's objects by their attributes and never
imports streamparse. ``squall local`` and ``squall submit`` call it for a target naming such
a class.

Python components run in the worker by default, with no subprocess and no JSON
(:class:`StreamparseBolt`, :class:`StreamparseSpout`: one pystorm instance per task, its
``emit``/``ack``/``fail``/``log`` mapped onto squall's). With ``"squall.streamparse.mode":
"shell"`` (``-c``, else the Topology's ``config``, else a config file) they run as multi-lang
subprocesses instead (``python -m streamparse.run module.Class``, as Storm runs them).
``TicklessBatchingBolt`` classes (a batcher thread of their own) and components given by
``ShellBolt.spec(command=..., script=...)`` always run as subprocesses, the latter from a
streamparse project's ``src/``; Java components are refused with one clear error.

In-process, a bolt's ``process`` gets squall's :class:`~squall.Tuple`, which has pystorm's
``id``, ``component``, ``stream``, ``task`` and ``values`` (a plain tuple: read fields by
position, or as ``tup["word"]``). As in pystorm, ``ack``, ``fail`` and ``emit``'s
``anchors`` take the tuples or their ids (:mod:`squall.multilang.tuple_ids`). An exception in
``process`` is reported and fails the tuple (with the class's ``auto_fail``); the task goes
on, where pystorm would exit.
"""
from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, ClassVar

from squall.api.component import Bolt, Spout
from squall.api.context import TopologyContext
from squall.api.topology import Topology, resolve_class
from squall.api.tuple import Stream, Tuple
from squall.errors import TopologyError
from squall.multilang.bolt import ShellBolt
from squall.multilang.link import module_root, wants_task_ids
from squall.multilang.protocol import LOG_LEVELS, handshake_context
from squall.multilang.spout import ShellSpout
from squall.multilang.tuple_ids import ReceivedTuples

#: component config keys the conversion sets (read in the worker)
CLASS_KEY = "squall.streamparse.class"          # "module:Class" of the pystorm component
OUTPUTS_KEY = "squall.streamparse.outputs"      # [[stream, [fields], direct], ...]
COMMAND_KEY = "squall.streamparse.command"      # argv of a shell component
MODULE_KEY = "squall.streamparse.module"        # the module whose folder a command runs in
MODE_KEY = "squall.streamparse.mode"            # -c, a Topology's config or a config file
CONVERTED_KEY = "squall.streamparse.converted"  # the mode a component was converted in
_STORM_LEVELS = {"trace": 0, "debug": 1, "info": 2, "warn": 3, "warning": 3, "error": 4,
                 "critical": 4}


def is_streamparse_topology(obj: Any) -> bool:
    """Whether ``obj`` is a streamparse ``Topology`` class (the DSL's shape: ``specs`` and
    ``thrift_topology`` made by its metaclass)."""
    return isinstance(obj, type) and isinstance(getattr(obj, "specs", None), list) \
        and hasattr(obj, "thrift_topology")


def from_streamparse(cls: type) -> Topology:
    """The squall topology of streamparse ``Topology`` class ``cls``; TopologyError naming
    the component for what squall cannot run (Java components, ``par`` per environment,
    custom groupings)."""
    from squall.api.builder import TopologyBuilder

    conf = dict(getattr(cls, "config", None) or {})
    mode = _mode(conf)
    spout_names = set(getattr(cls, "thrift_spouts", {}) or {})
    b = TopologyBuilder()
    for spec in cls.specs:  # type: ignore[attr-defined]
        name = spec.name
        spout = name in spout_names
        par = spec.par
        if isinstance(par, bool) or not isinstance(par, int):
            raise TopologyError(f"streamparse component {name!r}: par must be an int for "
                                f"squall, got {par!r}")
        config = json.loads(spec.config) if isinstance(spec.config, str) else \
            dict(spec.config or {})
        config[OUTPUTS_KEY] = [[s, list(info.output_fields or []), bool(info.direct)]
                               for s, info in (spec.outputs or {}).items()]
        squall_cls = _component_class(name, spec, spout, mode, config, cls.__module__)
        if spout:
            b.set_spout(name, squall_cls, parallelism=par, config=config)
            continue
        declarer = b.set_bolt(name, squall_cls, parallelism=par, config=config)
        for stream_id, grouping in (spec.inputs or {}).items():
            _subscribe(declarer, name, stream_id.componentId, stream_id.streamId, grouping)
    return b.create_topology(conf)


def _mode(conf: Mapping[str, Any]) -> str:
    """``squall.streamparse.mode`` as squall's config layers say: ``-c`` over the Topology
    class's ``config`` over a config file (the conf ``squall local``/``squall submit`` load
    the target for); TopologyError for a value that is not a mode."""
    from squall.api.builder import LOADING_CONF
    from squall.config import OVERRIDES_KEY

    loading = LOADING_CONF.get() or {}
    overrides = loading.get(OVERRIDES_KEY)
    if isinstance(overrides, Mapping) and MODE_KEY in overrides:
        mode, where = overrides[MODE_KEY], "-c"
    elif MODE_KEY in conf:
        mode, where = conf[MODE_KEY], "the Topology's config"
    else:
        mode, where = loading.get(MODE_KEY, "in-process"), "the config file"
    if mode not in ("in-process", "shell"):
        raise TopologyError(f"{MODE_KEY} (in {where}) must be 'in-process' or 'shell', got "
                            f"{mode!r}")
    return str(mode)


def check_mode(topology: Topology, conf: Mapping[str, Any]) -> None:
    """TopologyError where ``conf`` (what a ``LocalCluster`` runs ``topology`` with) names a
    ``squall.streamparse.mode`` other than the one its components were converted in: the
    mode is chosen by :func:`from_streamparse`, and a conf given only to
    ``submit_topology`` came too late to choose it."""
    wanted = conf.get(MODE_KEY)
    for cid, spec in topology.components.items():
        made = spec.config.get(CONVERTED_KEY)
        if made is not None and wanted is not None and made != wanted:
            raise TopologyError(
                f"{MODE_KEY} is {wanted!r} in the submitted conf but streamparse component "
                f"{cid!r} was converted {made!r}: the mode is chosen when the Topology class "
                "is converted; set it in the class's config, with -c or in a config file")


def _component_class(name: str, spec: Any, spout: bool, mode: str,
                     config: dict[str, Any], topology_module: str) -> type:
    shell = getattr(getattr(spec, "component_object", None), "shell", None)
    if shell is None:
        raise TopologyError(f"streamparse component {name!r} is a Java component; squall "
                            "runs Python and multi-lang (shell) components only")
    user_cls = spec.component_cls
    python = shell.execution_command == "streamparse_run"
    # pystorm's TicklessBatchingBolt processes its batches (acks, emits) on a thread of its
    # own, under a lock squall's loop does not take, and signals its process on an error:
    # it runs as a subprocess, where pystorm's run loop takes that lock
    if python and not hasattr(user_cls, "_batch_entry"):
        config[CONVERTED_KEY] = mode          # the one choice the mode makes (check_mode)
    if python and mode == "in-process" and not hasattr(user_cls, "_batch_entry"):
        config[CLASS_KEY] = f"{user_cls.__module__}:{user_cls.__qualname__}"
        if spout:
            return StreamparseSpout
        # pystorm's defaults (auto ack, anchor and fail) are squall's: squall does them
        auto = all(getattr(user_cls, flag, True) is True
                   for flag in ("auto_ack", "auto_anchor", "auto_fail"))
        return StreamparseBolt if auto and not hasattr(user_cls, "process_batches") \
            else StreamparseManualBolt
    if python:
        argv = [sys.executable, "-m", "streamparse.run",
                f"{user_cls.__module__}.{user_cls.__qualname__}"]
    else:
        argv = [shell.execution_command, *str(shell.script or "").split()]
    config[COMMAND_KEY] = argv
    config[MODULE_KEY] = user_cls.__module__ if python else topology_module
    return StreamparseShellSpout if spout else StreamparseShellBolt


def _subscribe(declarer: Any, name: str, source: str, stream: str, grouping: Any) -> None:
    """Subscribe to ``source``'s ``stream`` as a streamparse (Storm thrift) Grouping says."""
    fields = getattr(grouping, "fields", None)
    if fields is not None:
        if fields:
            declarer.fields_grouping(source, list(fields), stream=stream)
        else:
            declarer.global_grouping(source, stream=stream)
        return
    for attr, method in (("shuffle", "shuffle_grouping"), ("all", "all_grouping"),
                         ("none", "none_grouping"), ("direct", "direct_grouping"),
                         ("local_or_shuffle", "local_or_shuffle_grouping")):
        if getattr(grouping, attr, None) is not None:
            getattr(declarer, method)(source, stream=stream)
            return
    raise TopologyError(f"streamparse component {name!r}: grouping {grouping!r} on "
                        f"{source!r} has no squall equivalent (custom Java groupings)")


def _declared(config: Mapping[str, Any]) -> list[str | Stream]:
    return [Stream(list(fields), name=stream, direct=bool(direct))
            for stream, fields, direct in config.get(OUTPUTS_KEY) or ()]


# -- hosting a pystorm component in-process -------------------------------------------------------
def _instance(conf: dict[str, Any], context: TopologyContext) -> Any:
    """A pystorm component of the class ``conf[CLASS_KEY]`` names, set up as pystorm's
    handshake would set it up, without its stdin/stdout, signal handler or log handler."""
    cls = resolve_class(conf[CLASS_KEY])
    inst = cls(input_stream=io.BytesIO(), output_stream=io.BytesIO(), rdb_signal=None)
    inst.topology_name = conf.get("topology.name", "")
    inst.task_id = context.task_id
    inst.component_name = context.component_id
    inst.debug = bool(conf.get("topology.debug", False))
    inst.storm_conf = conf
    inst.context = handshake_context(context)
    inst.logger = logging.getLogger(f"squall.component.{context.component_id}")
    return inst


class _Calls:
    """Maps a hosted pystorm component's calls onto its squall host's: ``send_message`` (every
    pystorm message: emits of classes that override ``emit``, logs through pystorm's
    handler, errors, metrics), ``read_task_ids``, ``log`` and ``raise_exception``. A bolt's
    ``received`` finds the tuples its ``ack``, ``fail`` and anchors name by id."""

    def __init__(self, host: Any, inst: Any, spout: bool, held: bool) -> None:
        self.host = host
        self.inst = inst
        self.spout = spout
        self.logger: logging.Logger = inst.logger
        self.task_ids: list[list[int]] = []
        #: pystorm's own ``emit`` runs (the class overrides it): it anchors to
        #: ``inst._current_tups``, which the host sets around each call as pystorm's loop does
        self.generic = True
        self.received: ReceivedTuples | None = None if spout else ReceivedTuples(
            host.ack, host.fail, host.report_error, held=held)

    def send_message(self, message: dict[str, Any]) -> None:
        command = message.get("command")
        if command == "emit":
            ids = self.emit_message(message)
            if wants_task_ids(message):     # what pystorm's emit reads with read_task_ids
                self.task_ids.append(ids or [])
        elif (command == "ack" or command == "fail") and self.received is not None:
            received = self.received
            (received.ack if command == "ack" else received.fail)(message.get("id"))
        elif command == "log":
            self.logger.log(LOG_LEVELS.get(message.get("level", 2), logging.INFO), "%s",
                            message.get("msg", ""))
        elif command == "error":
            self.host.report_error(str(message.get("msg", "")))
        elif command != "sync" and command != "metrics":
            self.logger.error("unknown pystorm message %.200r", message)

    def emit_message(self, message: dict[str, Any]) -> list[int] | None:
        kwargs: dict[str, Any] = {"direct_task": message.get("task"),
                                  "need_task_ids": message.get("need_task_ids", True)
                                  is not False}
        if self.spout:
            kwargs["tup_id"] = message.get("id")
        else:
            anchors = message.get("anchors")
            if anchors is not None and self.received is not None:
                kwargs["anchors"] = self.received.anchors(anchors)
        return self.host.emit(message["tuple"], message.get("stream"), **kwargs)

    def read_task_ids(self) -> list[int]:
        return self.task_ids.pop(0) if self.task_ids else []

    def log(self, message: Any, level: str | None = None) -> None:
        self.logger.log(LOG_LEVELS[_STORM_LEVELS.get(level or "info", 2)], "%s", message)

    def raise_exception(self, exception: BaseException, tup: Any = None) -> None:
        self.host.report_error(exception)


def _wire(host: Any, inst: Any, spout: bool, held: bool) -> _Calls:
    """Install the mapping on ``inst``; its ``emit`` too when the class keeps pystorm's.
    ``held``: a bolt that acks or fails its tuples itself (see :class:`ReceivedTuples`)."""
    import pystorm

    calls = _Calls(host, inst, spout, held)
    inst.send_message = calls.send_message
    inst.read_task_ids = calls.read_task_ids
    inst.log = calls.log
    inst.raise_exception = calls.raise_exception
    emit = host.emit
    base = pystorm.spout.Spout if spout else pystorm.bolt.Bolt
    if type(inst).emit is base.emit:        # the fast way: straight to squall's emit
        calls.generic = False
        if spout:
            def spout_emit(tup: Any, tup_id: Any = None, stream: str | None = None,
                           direct_task: int | None = None,
                           need_task_ids: bool = False) -> list[int] | None:
                return emit(tup, stream, tup_id=tup_id, direct_task=direct_task,
                            need_task_ids=need_task_ids)
            inst.emit = spout_emit
        else:
            plain = not inst.auto_anchor
            received = calls.received
            assert received is not None
            by_id = received.anchors

            def bolt_emit(tup: Any, stream: str | None = None, anchors: Any = None,
                          direct_task: int | None = None,
                          need_task_ids: bool = False) -> list[int] | None:
                if anchors is None:
                    if not plain and not inst._current_tups:
                        # auto-anchored to the tuple in process: squall's own fast path
                        if direct_task is None and not need_task_ids:
                            return emit(tup) if stream is None else emit(tup, stream)
                        return emit(tup, stream, direct_task=direct_task,
                                    need_task_ids=need_task_ids)
                    else:
                        anchors = () if plain else inst._current_tups
                elif anchors.__class__ is not list and anchors.__class__ is not tuple:
                    if anchors.__class__ is Tuple or isinstance(anchors, (str, bytes)) \
                            or not hasattr(anchors, "__iter__"):
                        # a lone Tuple, an id: squall's emit refuses it where it
                        # anchors (with ackers), naming the component
                        return emit(tup, stream, anchors=anchors, direct_task=direct_task,
                                    need_task_ids=need_task_ids)
                    anchors = list(anchors)     # any iterable, as pystorm: read once
                for a in anchors:
                    if a.__class__ is not Tuple:        # pystorm's anchors may be ids
                        anchors = by_id(anchors)
                        break
                return emit(tup, stream, anchors=anchors, direct_task=direct_task,
                            need_task_ids=need_task_ids)
            inst.emit = bolt_emit
    if calls.received is not None:
        inst.ack = calls.received.ack
        inst.fail = calls.received.fail
    return calls


def _start(host: Any, conf: dict[str, Any], context: TopologyContext, spout: bool,
           held: bool = False) -> tuple[Any, _Calls]:
    """The pystorm instance ``host`` (a squall component) runs for its task: made, wired to
    ``host``'s calls (:func:`_wire`) and initialized as pystorm would; and that wiring."""
    inst = _instance(conf, context)
    calls = _wire(host, inst, spout=spout, held=held)
    inst.initialize(conf, inst.context)
    return inst, calls


class StreamparseBolt(Bolt):
    """Hosts the pystorm ``Bolt`` subclass named by ``squall.streamparse.class`` in the
    worker, one instance per task, for classes with pystorm's defaults (``auto_ack``,
    ``auto_anchor``, ``auto_fail``): squall calls its ``process`` directly and acks, anchors
    and fails as pystorm would."""

    @classmethod
    def declare_outputs(cls, config: Mapping[str, Any]) -> list[str | Stream]:
        return _declared(config)

    generic: bool = False

    def _host(self, conf: dict[str, Any], context: TopologyContext, held: bool
              ) -> tuple[Any, ReceivedTuples]:
        """Start the hosted pystorm bolt (``held``: it acks or fails its tuples itself); it
        and the tuples its ids name, both kept on this host."""
        inst, calls = _start(self, conf, context, spout=False, held=held)
        received = calls.received
        assert received is not None
        self.hosted, self.received, self.generic = inst, received, calls.generic
        return inst, received

    def initialize(self, conf: dict[str, Any], context: TopologyContext) -> None:
        inst, received = self._host(conf, context, held=False)
        user_process = inst.process

        if self.generic:
            def process(tup: Tuple) -> None:
                received.current = tup
                _as_current(inst, user_process, tup)
        else:
            def process(tup: Tuple) -> None:
                # the tuple an id given to ack, fail or emit's anchors may name: +30 ns a
                # tuple over calling the instance's own process (timeit, Python 3.11);
                # bench.multilang wc-streamparse / wc-native 0.81 -> 0.80 (3 rounds each)
                received.current = tup
                user_process(tup)
        self.process = process      # type: ignore[method-assign]

    def process(self, tup: Tuple) -> None:
        """Replaced per instance by ``initialize``."""
        self.hosted.process(tup)

    def process_tick(self, tup: Tuple) -> None:
        self.received.current = tup         # not the tuple processed before it any more
        inst = self.hosted
        if self.generic:
            _as_current(inst, inst.process_tick, tup)
        else:
            inst.process_tick(tup)

    def cleanup(self) -> None:
        for name in ("cleanup", "shutdown"):
            fn = getattr(self.hosted, name, None)
            if callable(fn):
                fn()
                return


class StreamparseManualBolt(StreamparseBolt):
    """:class:`StreamparseBolt` for classes that change pystorm's ``auto_*`` flags, and
    ``BatchingBolt`` classes (which group in ``process`` and ack their batches themselves): acks,
    anchors and fails as the class's flags say."""

    auto_ack: ClassVar[bool] = False
    auto_anchor: ClassVar[bool] = True
    auto_fail: ClassVar[bool] = False

    def initialize(self, conf: dict[str, Any], context: TopologyContext) -> None:
        inst, received = self._host(conf, context, held=True)
        user_process = inst.process
        receive, ack, fail, report = received.receive, received.ack, received.fail, \
            self.report_error
        acks = bool(inst.auto_ack) and not hasattr(inst, "process_batches")
        auto_fail = bool(inst.auto_fail)
        call = partial(_as_current, inst, user_process) if self.generic else user_process

        def process(tup: Tuple) -> None:
            receive(tup)
            try:
                call(tup)
            except Exception as exc:
                report(exc)
                if auto_fail:
                    fail(tup)
                return
            if acks:
                ack(tup)
        self.process = process      # type: ignore[method-assign]

    def process_tick(self, tup: Tuple) -> None:
        inst = self.hosted
        if self.generic:
            inst._current_tups = [tup]
        try:
            inst.process_tick(tup)
        except Exception as exc:
            self.report_error(exc)
            if isinstance(getattr(inst, "_batches", None), dict):
                # before the finally below: the batch that raised is pystorm's _current_tups
                self._after_failed_batch()
        finally:
            if self.generic:
                inst._current_tups = []

    def _after_failed_batch(self) -> None:
        """A ``BatchingBolt``'s ``process_batches`` raised: as pystorm's
        ``_handle_run_exception``, the batch that raised fails (``auto_fail``; without it its
        tuples time out) and leaves the batches; where pystorm would exit, the batches after it
        are processed now, each that raises going the same way."""
        from collections import defaultdict

        inst = self.hosted
        while True:
            batches = inst._batches
            key = inst._current_key
            batch = batches.get(key)
            if batch is None or batch is not inst._current_tups:
                return                  # it did not raise in a batch: nothing to fail
            del batches[key]
            if inst.auto_fail:
                fail = self.received.fail
                for t in batch:
                    fail(t)
            # the batches processed before it are acked and empty: drop them too
            inst._batches = defaultdict(list, {k: v for k, v in batches.items() if v})
            inst._current_key = None
            inst._current_tups = []
            if not inst._batches:
                inst._tick_counter = 0
                return
            try:
                inst.process_batches()
                inst._tick_counter = 0
                return
            except Exception as exc:
                self.report_error(exc)


class StreamparseSpout(Spout):
    """Hosts the pystorm ``Spout`` subclass named by ``squall.streamparse.class`` in the
    worker, one instance per task."""

    @classmethod
    def declare_outputs(cls, config: Mapping[str, Any]) -> list[str | Stream]:
        return _declared(config)

    def initialize(self, conf: dict[str, Any], context: TopologyContext) -> None:
        self.hosted = _start(self, conf, context, spout=True)[0]
        self.next_tuple = self.hosted.next_tuple      # type: ignore[method-assign]

    def ack(self, tup_id: Any) -> None:
        self.hosted.ack(tup_id)

    def fail(self, tup_id: Any) -> None:
        self.hosted.fail(tup_id)

    def activate(self) -> None:
        self.hosted.activate()

    def deactivate(self) -> None:
        self.hosted.deactivate()


def _command(conf: Mapping[str, Any]) -> list[str]:
    """The component's argv; ``streamparse.run`` is told the serializer the worker speaks
    (``topology.multilang.serializer`` as the component's merged conf has it: topology conf,
    submitted conf or the component's own)."""
    argv = [str(a) for a in conf.get(COMMAND_KEY) or ()]
    serializer = conf.get("topology.multilang.serializer")
    if argv[1:3] == ["-m", "streamparse.run"] and serializer:
        argv += ["-s", str(serializer)]
    return argv


def _as_current(inst: Any, fn: Callable[[Any], Any], tup: Tuple) -> None:
    """``fn(tup)`` with ``tup`` as ``inst._current_tups``, which pystorm's own ``emit`` anchors
    to (a class overriding ``emit`` runs it): set around each call as pystorm's ``_run``
    does."""
    inst._current_tups = [tup]
    try:
        fn(tup)
    finally:
        inst._current_tups = []


def _cwd(conf: Mapping[str, Any]) -> str:
    """Where the component's command runs: a Python component's module root (``python -m``
    imports it from there); any other's, a streamparse project's ``src/`` when the topology
    file is in its ``topologies/`` (Storm runs them from the jar's ``resources/``, which
    ``sparse`` fills with ``src/``; ``squall submit`` merges ``src/`` into the code root),
    else the topology module's root."""
    from pathlib import Path

    from squall.api.target import project_dirs

    root = module_root(str(conf.get(MODULE_KEY, "__main__")))
    argv = conf.get(COMMAND_KEY) or ()
    if list(argv[1:3]) == ["-m", "streamparse.run"]:
        return root
    src = project_dirs(Path(root) / "topology.py")
    return str(src[0]) if src else root


class StreamparseShellBolt(ShellBolt):
    """A streamparse component run as a multi-lang subprocess (``squall.streamparse.command``)."""

    @classmethod
    def declare_outputs(cls, config: Mapping[str, Any]) -> list[str | Stream]:
        return _declared(config)

    def shell_command(self, conf: Mapping[str, Any]) -> Sequence[str]:
        return _command(conf)

    def shell_cwd(self, conf: Mapping[str, Any]) -> str:
        return _cwd(conf)


class StreamparseShellSpout(ShellSpout):
    """A streamparse spout run as a multi-lang subprocess (``squall.streamparse.command``)."""

    @classmethod
    def declare_outputs(cls, config: Mapping[str, Any]) -> list[str | Stream]:
        return _declared(config)

    def shell_command(self, conf: Mapping[str, Any]) -> Sequence[str]:
        return _command(conf)

    def shell_cwd(self, conf: Mapping[str, Any]) -> str:
        return _cwd(conf)


__all__ = ["StreamparseBolt", "StreamparseManualBolt", "StreamparseShellBolt", "StreamparseShellSpout",
           "StreamparseSpout", "from_streamparse", "is_streamparse_topology"]
