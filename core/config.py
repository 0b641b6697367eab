"""squall's configuration: defaults, YAML files, command-line overrides and validation.

A configuration is a flat dict of Storm-style dotted keys. Layers are merged key by key (a value
replaces the lower layer's value whole; dicts are not merged deeply), lowest first:

1. ``core/defaults.yaml`` plus the keys plugins return from ``squall_add_defaults``;
2. ``~/.squall/squall.yaml`` (if it exists);
3. ``--config FILE``, or when none is given the file named by ``SQUALL_CONF``;
4. the topology conf (given to ``submit_topology``);
5. per-component config (merged later, in the worker, by :func:`component_conf`);
6. ``-c key=value`` overrides from the command line.

Overrides must beat per-component config, which is only known in the worker, so
:func:`load_config` also records them in the conf under ``squall.cli.overrides`` (a dict) and
:func:`component_conf` applies them again after the component's config.

Everything here runs at start-up or submit time, from whichever thread calls it; nothing blocks
except file reads and the first loading of plugins. Errors are :class:`squall.ConfigError`
(or :class:`squall.PluginLoadError` when a plugin cannot be loaded) with one-line messages.
"""
from __future__ import annotations

import copy
import difflib
import functools
import logging
import math
import os
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from squall import drivers
from squall.errors import ConfigError, PluginLoadError, SquallError
from squall.security import REDACTED, is_secret_key, redact

__all__ = [
    "HEARTBEATS", "MAX_DURATION_SECS", "NAMESPACES", "NULLABLE_TYPES", "OVERRIDES_KEY",
    "TOPOLOGY_KEYS", "TOPOLOGY_PREFIXES", "check_heartbeats", "check_host", "check_range",
    "check_topology_keys", "component_conf", "defaults", "dump", "duration_unit",
    "load_config", "nullable_types", "parse_override", "period_secs", "read_yaml_file",
    "sample", "validate",
]

log = logging.getLogger(__name__)

#: conf key holding the command-line overrides (see the module docstring)
OVERRIDES_KEY = "squall.cli.overrides"
#: prefixes of squall's (and Storm's) own keys: an unknown key under one of them is a warning
NAMESPACES = ("storm.", "nimbus.", "supervisor.", "worker.", "task.", "topology.", "ui.",
              "squall.", "drpc.")
_NUM = (int, float)
#: types of squall's own keys whose default is null (other null-default keys accept any value;
#: plugins declare theirs with ``squall_add_config_types``, see :func:`nullable_types`)
NULLABLE_TYPES: dict[str, tuple[type, ...]] = {
    **dict.fromkeys(["topology.acker.executors", "topology.max.spout.pending",
                     "topology.max.task.parallelism", "topology.max.replays"], (int,)),
    "topology.tick.tuple.freq.secs": _NUM,
    # whole milliseconds, as Storm's key (null: chosen per host, see defaults.yaml)
    "topology.batch.flush.interval.millis": (int,),
    # whole slots only, as the supervisor reads them (checked again by validate)
    **dict.fromkeys(["supervisor.cpu.slots", "supervisor.memory.slots", "supervisor.net.slots",
                     "supervisor.disk.slots"], (int,)),
    **dict.fromkeys(["storm.local.hostname", "topology.name"], (str,)),
    "logviewer.host": (str,),
    "squall.transport.send.buffer.messages": (int,),
    "worker.metrics.port.offset": (int,),
    "squall.metrics.consumer": (dict,),
    # windowed bolts (squall.windowing): Storm's component keys
    **dict.fromkeys(["topology.bolts.window.length.count",
                     "topology.bolts.window.length.duration.ms",
                     "topology.bolts.sliding.interval.count",
                     "topology.bolts.sliding.interval.duration.ms",
                     "topology.bolts.tuple.timestamp.max.lag.ms",
                     "topology.bolts.watermark.event.interval.ms"], (int,)),
    **dict.fromkeys(["topology.bolts.tuple.timestamp.field.name",
                     "topology.bolts.late.tuple.stream"], (str,)),
    # security (API.md section 14)
    **dict.fromkeys(["storm.zookeeper.auth.scheme", "storm.zookeeper.auth.payload",
                     "squall.auth.token", "squall.tls.ca", "squall.tls.cert",
                     "squall.tls.key"], (str,)),
    "topology.state.provider.config": (dict,),
}
#: Storm's numeric keys are counts, sizes and durations: none may be negative (a value that
#: would leave a topology that never runs is refused at submit); these must be at least 1
AT_LEAST_ONE = frozenset(("topology.workers", "topology.max.spout.pending",
                          "topology.transfer.batch.size", "topology.executor.receive.buffer.size",
                          "topology.message.timeout.secs", "topology.max.task.parallelism",
                          "topology.min.replication.count", "topology.max.replays",
                          "drpc.worker.threads", "drpc.invocations.threads",
                          # 0 would send every task's data points in a busy loop
                          "topology.builtin.metrics.bucket.size.secs",
                          # 0 would be a buffer no batch fits in
                          "squall.transport.send.buffer.messages",
                          # 0 would hide every error of a component
                          "topology.max.error.report.per.interval",
                          # 0: /metrics on the worker's own port, which its transport holds
                          "worker.metrics.port.offset"))
#: durations that must be above 0 (0 would mean a busy loop, nothing ever answered, or, where
#: a daemon reads ``value or default``, the default without a word)
POSITIVE = frozenset(("topology.subprocess.timeout.secs", "nimbus.monitor.freq.secs",
                      "supervisor.monitor.frequency.secs", "drpc.request.timeout.secs",
                      "nimbus.task.timeout.secs", "nimbus.task.launch.secs",
                      "supervisor.worker.timeout.secs", "supervisor.worker.start.timeout.secs",
                      "worker.heartbeat.frequency.secs", "task.heartbeat.frequency.secs",
                      "supervisor.heartbeat.frequency.secs",
                      "storm.zookeeper.session.timeout", "storm.zookeeper.connection.timeout",
                      # 0 would sample nimbus in a busy loop (the UI's charts, /metrics)
                      "ui.sample.secs",
                      # the DRPC server's: 0 would take every request back at once, or
                      # carry no message
                      "drpc.fetch.lease.secs", "drpc.max.message.bytes",
                      # 0: no ticks at all (Storm requires a positive frequency too)
                      "topology.tick.tuple.freq.secs",
                      "topology.error.throttle.interval.secs",
                      # 0 would report every moment a spout waits on backpressure
                      "topology.backpressure.stall.report.secs",
                      # the interpreter takes no 0 interval (null leaves it alone)
                      "topology.worker.thread.switch.interval.ms"))
#: keys whose default is not null that take null too (what null means: defaults.yaml)
NULL_ACCEPTED = frozenset(("topology.worker.thread.switch.interval.ms",))
#: ``(heartbeat, the timeout that watches it, what a beat not below it does)``: checked
#: together (:func:`check_heartbeats`). A supervisor's own beat has no such pair: its
#: registration lives as long as its ZooKeeper session, the beat only refreshes what it says.
HEARTBEATS = (
    ("worker.heartbeat.frequency.secs", "supervisor.worker.timeout.secs",
     "the supervisor would restart its workers for missing heartbeats, over and over"),
    ("task.heartbeat.frequency.secs", "nimbus.task.timeout.secs",
     "nimbus would take live workers' executors for dead and move them, over and over"),
)
#: the namespaces whose numeric keys are all counts, sizes and durations (a key elsewhere is
#: checked when AT_LEAST_ONE or POSITIVE names it; a plugin checks its own in
#: ``squall_validate_config``)
_COUNTED = ("topology.", "nimbus.", "supervisor.", "worker.", "task.", "drpc.")
#: keys outside those namespaces that are never negative, 0 included (0 retries: an operation
#: waits for a lost ZooKeeper connection only its connection timeout)
NOT_NEGATIVE = frozenset(("storm.zookeeper.retry.times", "storm.zookeeper.retry.interval"))
#: keys where -1 means "no limit", as in Storm
MINUS_ONE_UNLIMITED = frozenset(("topology.max.replication.wait.time.sec",))
#: keys whose least value is above 1 (the UI's charts make a rate of two samples)
AT_LEAST = {"ui.history.size": 2}
#: the longest duration a key may give, one year: daemons and workers wait on them, and a wait
#: above ``threading.TIMEOUT_MAX`` (about 292 years) raises in the thread that waits, which
#: then dies while its process runs on
MAX_DURATION_SECS = 365 * 24 * 3600
#: durations in milliseconds whose names do not say so (Storm's ZooKeeper keys)
_MS_DURATIONS = frozenset(("storm.zookeeper.session.timeout",
                           "storm.zookeeper.connection.timeout", "storm.zookeeper.retry.interval"))


class _Loader(yaml.SafeLoader):
    """Safe loader that rejects duplicate keys in a mapping (PyYAML keeps the last silently)."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, (str, int, float, bool)):
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r}", key_node.start_mark)
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _parse_yaml(text: str, source: str) -> dict[str, Any]:
    try:
        data = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark is not None else source
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{where}: malformed YAML: {problem}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping of config keys to values, "
                          f"not a {type(data).__name__}")
    _check_keys(data, source)
    return data


def _check_keys(data: Mapping[Any, Any], source: str) -> None:
    for key in data:
        if not isinstance(key, str):
            raise ConfigError(f"{source}: config key {key!r} is a {type(key).__name__}; "
                              "keys must be strings")


def read_yaml_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a YAML config file into a dict; ``{}`` for an empty file.

    Raises ConfigError naming the file (and line:column for malformed YAML) when the file is
    missing or unreadable, is not valid YAML, has a non-mapping top level or a non-string key.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(f"config file {path} does not exist") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {path} could not be read: {exc}") from exc
    return _parse_yaml(text, str(path))


@functools.lru_cache(maxsize=1)
def _defaults_text() -> str:
    return resources.files("squall").joinpath("defaults.yaml").read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def _base_defaults() -> dict[str, Any]:
    return _parse_yaml(_defaults_text(), "squall/defaults.yaml")


def _plugin_results(hook_name: str) -> list[tuple[str, dict[str, Any]]]:
    """``(plugin name, mapping)`` from every implementation of a hook returning config keys
    (``squall_add_defaults``, ``squall_add_config_types``), in registration order."""
    from squall.plugin_manager import get_plugin_manager
    try:
        pm = get_plugin_manager()
    except SquallError:
        raise
    except Exception as exc:  # a broken plugin module or hook implementation
        raise PluginLoadError(f"squall plugins could not be loaded: {exc!r}") from exc
    out = []
    for impl in getattr(pm.hook, hook_name).get_hookimpls():   # in registration order
        try:
            keys = impl.function()
        except Exception as exc:
            raise PluginLoadError(f"plugin {impl.plugin_name!r} failed in {hook_name}: "
                                  f"{exc!r}") from exc
        if keys is None:
            continue
        if not isinstance(keys, Mapping):
            raise ConfigError(f"plugin {impl.plugin_name!r}: {hook_name} returned a "
                              f"{type(keys).__name__}, not a dict")
        _check_keys(keys, f"plugin {impl.plugin_name!r}")
        if hook_name == "squall_add_defaults":
            for key, value in keys.items():
                if not _plain(value):
                    raise ConfigError(f"plugin {impl.plugin_name!r}: squall_add_defaults gives "
                                      f"{key!r} a {type(value).__name__} ({value!r:.60}); a "
                                      f"default is null, a bool, number, str, list or dict")
        out.append((impl.plugin_name, dict(keys)))
    return out


def _plain(value: Any) -> bool:
    """Whether ``value`` is what a YAML config file holds: null, bool, int, float, str, or
    lists and str-keyed dicts of them."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, list):
        return all(map(_plain, value))
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


def _plugin_defaults() -> list[tuple[str, dict[str, Any]]]:
    return _plugin_results("squall_add_defaults")


def _type_tuple(plugin: str, key: str, declared: Any) -> tuple[type, ...]:
    types = declared if isinstance(declared, tuple) else (declared,)
    if not types or not all(isinstance(t, type) for t in types):
        raise ConfigError(f"plugin {plugin!r}: squall_add_config_types gives {key!r} "
                          f"{declared!r}; expected a type or a tuple of types")
    return types


def nullable_types(known: Mapping[str, Any] | None = None) -> dict[str, tuple[type, ...]]:
    """The accepted types of every known key whose default is null and whose type is declared:
    :data:`NULLABLE_TYPES` plus what plugins return from ``squall_add_config_types``.

    ``known`` (default :func:`defaults`) is the set of known keys. A plugin naming a key that
    is not known, or whose default is not null, is a ConfigError; one naming squall's own key
    is ignored with a warning.
    """
    known = defaults() if known is None else known
    out = dict(NULLABLE_TYPES)
    base = _base_defaults()
    for plugin, declared in _plugin_results("squall_add_config_types"):
        for key, value in declared.items():
            if key in base:
                log.warning("plugin %r may not change the type of %r; ignored", plugin, key)
                continue
            if key not in known:
                raise ConfigError(f"plugin {plugin!r}: squall_add_config_types names {key!r}, "
                                  "which no squall_add_defaults returns")
            if known[key] is not None:
                raise ConfigError(f"plugin {plugin!r}: squall_add_config_types names {key!r}, "
                                  f"whose default {known[key]!r} already gives its type")
            out[key] = _type_tuple(plugin, key, value)
    return out


def defaults() -> dict[str, Any]:
    """A fresh copy of every default: defaults.yaml, then keys plugins add.

    A plugin cannot change a key squall itself defines (it is ignored with a warning). Raises
    PluginLoadError when the plugins cannot be loaded or a ``squall_add_defaults`` fails.
    """
    conf = copy.deepcopy(_base_defaults())
    base = _base_defaults()
    owner: dict[str, str] = {}
    for plugin, keys in _plugin_defaults():
        for key, value in keys.items():
            if key in base:
                if value != base[key]:
                    log.warning("plugin %r may not change the default of %r; ignored",
                                plugin, key)
                continue
            if key in owner and conf[key] != value:
                raise ConfigError(f"plugins {owner[key]!r} and {plugin!r} both define "
                                  f"{key!r}, with different defaults ({conf[key]!r} and "
                                  f"{value!r}); uninstall one")
            owner.setdefault(key, plugin)
            conf[key] = copy.deepcopy(value)
    return conf


def parse_override(text: str) -> tuple[str, Any]:
    """Parse ``key=value`` with the value read as YAML: ``topology.workers=3`` -> ``3``,
    ``x=true`` -> ``True``, ``a=[1, 2]`` -> a list, ``s=hello`` -> ``"hello"``, ``k=`` -> None.

    >>> parse_override("topology.workers=3")
    ('topology.workers', 3)
    """
    key, sep, raw = str(text).partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"bad override {text!r}: expected key=value")
    try:
        value = yaml.load(raw, Loader=_Loader) if raw.strip() else None
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"bad override {text!r}: the value is not valid YAML: {problem}") \
            from exc
    return key, value


def _overrides(overrides: Mapping[str, Any] | Iterable[str | tuple[str, Any]]) -> dict[str, Any]:
    items: Iterable[Any] = overrides.items() if isinstance(overrides, Mapping) else overrides
    out: dict[str, Any] = {}
    for item in items:
        if isinstance(item, str):
            key, value = parse_override(item)
        elif isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str):
            key, value = item[0], item[1]
        else:
            raise ConfigError(f"bad override {item!r}: expected 'key=value' or (key, value)")
        out[key] = value
    return out


def load_config(config_file: str | os.PathLike[str] | None = None,
                overrides: Mapping[str, Any] | Iterable[str | tuple[str, Any]] = (), *,
                env: Mapping[str, str] | None = None, home: str | os.PathLike[str] | None = None,
                topology_conf: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The merged configuration (see the module docstring for the layers), as a plain dict.

    ``env`` defaults to ``os.environ`` and ``home`` to the user's home directory (both given
    by tests). Does not validate: call :func:`validate` on the result.
    """
    env = os.environ if env is None else env
    conf = defaults()
    try:
        user_file = Path(home if home is not None else Path.home()) / ".squall" / "squall.yaml"
    except RuntimeError:   # no home directory (a daemon's bare environment)
        user_file = None
    if user_file is not None and user_file.is_file():
        conf.update(read_yaml_file(user_file))
    chosen = config_file if config_file is not None else (env.get("SQUALL_CONF") or None)
    if chosen is not None:
        conf.update(read_yaml_file(chosen))
    if topology_conf:
        _check_keys(topology_conf, "topology conf")
        conf.update(topology_conf)
    cli = _overrides(overrides)
    conf.update(cli)
    remembered = conf.get(OVERRIDES_KEY)
    conf[OVERRIDES_KEY] = {**(remembered if isinstance(remembered, dict) else {}), **cli}
    return conf


def component_conf(conf: Mapping[str, Any], component_config: Mapping[str, Any] | None,
                   overrides: Mapping[str, Any] | Iterable[str | tuple[str, Any]] | None = None
                   ) -> dict[str, Any]:
    """The conf a component's ``initialize`` gets: topology conf < component config < overrides.

    ``overrides`` defaults to the ones :func:`load_config` remembered under ``squall.cli.overrides``.
    """
    out = dict(conf)
    if component_config:
        _check_keys(component_config, "component config")
        out.update(component_config)
    if overrides is None:
        overrides = conf.get(OVERRIDES_KEY) or {}
    out.update(_overrides(overrides))
    return out


def _type_names(types: tuple[type, ...], nullable: bool) -> str:
    return " or ".join([t.__name__ for t in types] + (["null"] if nullable else []))


def _expected(key: str, default: Any, nullable: Mapping[str, tuple[type, ...]]
              ) -> tuple[tuple[type, ...], bool] | None:
    """(accepted types, null accepted) for a known key, or None when any value goes."""
    if default is None:
        types = nullable.get(key)
        return (types, True) if types else None
    if isinstance(default, bool):
        return (bool,), False
    if isinstance(default, (int, float)):
        return ((int, float) if isinstance(default, float) else (int,)), key in NULL_ACCEPTED
    for t in (str, list, dict):
        if isinstance(default, t):
            return (t,), False
    return (type(default),), False


def _type_ok(value: Any, types: tuple[type, ...], nullable: bool) -> bool:
    if value is None:
        return nullable
    if isinstance(value, bool) and bool not in types:
        return False   # True is an int to Python, not to a config file
    return isinstance(value, types)


def _close_key(key: str, known: Iterable[str]) -> str | None:
    # stricter than drivers.did_you_mean: long keys share prefixes that make any two look alike
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.8)
    return close[0] if close else None


def validate(conf: Mapping[str, Any], *, warn: bool = True,
             known: Mapping[str, Any] | None = None) -> list[str]:
    """Check a merged conf; return the warnings (also logged to ``squall.config`` if ``warn``).

    Known keys (those with a default) must have the default's type (ints pass for floats; a
    null default accepts anything unless :func:`nullable_types` names the type), and a float
    must be finite (not nan or inf). An unknown key under one of :data:`NAMESPACES`, or
    under the first part of a known key's name (a plugin's ``spark.``), is a warning with a
    did-you-mean; other keys are the user's own. ``supervisor.<dim>.slots`` must be null or a
    non-negative int, as the supervisor requires. Each heartbeat must be below the timeout
    that watches it (:func:`check_heartbeats`); no duration is above a year
    (:data:`MAX_DURATION_SECS`); the cluster's addresses are usable (no empty host list, an
    absolute ZooKeeper root, ``drpc.servers`` ports). The ``squall_validate_config`` hooks check
    the plugins' keys' values. Then every driver name is checked (no driver is imported).
    Raises ConfigError (PluginNotFoundError for an unknown driver) on the first problem.
    """
    known = defaults() if known is None else known
    nullable = nullable_types(known)
    from squall.scheduling.resources import check_supervisor_slots
    check_supervisor_slots(conf)      # the supervisor's own check and message
    warnings = _check_types(conf, known, nullable)
    from squall.metrics.consumer_bolt import check_registrations
    check_registrations(conf)         # each entry's keys and values, Storm's
    from squall.runtime.gc_tuning import thresholds
    thresholds(conf)
    from squall.runtime.load import bounds
    bounds(conf)
    from squall.runtime.flow import check_watermarks
    check_watermarks(conf)
    from squall.daemon.log_levels import check_worker_level
    check_worker_level(conf)          # what the worker sets its root logger to
    _check_str_lists(conf)
    from squall.security.settings import check as check_security
    check_security(conf)
    _check_ranges(conf, known, nullable)
    check_heartbeats(conf)
    _check_ports(conf)
    _check_addresses(conf)
    from squall.plugin_manager import validate_config
    validate_config(conf)             # the plugins' own keys' values
    drivers.validate_conf(dict(conf))
    if warn:
        for msg in warnings:
            log.warning("%s", msg)
    return warnings


def _check_types(conf: Mapping[str, Any], known: Mapping[str, Any],
                 nullable: Mapping[str, tuple[type, ...]]) -> list[str]:
    """ConfigError for the first known key whose value has the wrong type; the warnings for
    unknown keys in squall's namespaces."""
    warnings: list[str] = []
    # the first part of every known key names a namespace too: a plugin's ("spark.", so
    # "spark.source.colums" warns beside "spark.source.columns"), and "logviewer."
    spaces = NAMESPACES + tuple({k.partition(".")[0] + "." for k in known if "." in k})
    for key, value in conf.items():
        if not isinstance(key, str):
            raise ConfigError(f"config key {key!r} is a {type(key).__name__}; keys must be "
                              "strings")
        if key in known:
            rule = _expected(key, known[key], nullable)
            if rule is not None and not _type_ok(value, *rule):
                shown = REDACTED if is_secret_key(key) else repr(value)
                raise ConfigError(f"config key {key!r} must be {_type_names(*rule)}, got "
                                  f"{type(value).__name__ if value is not None else 'null'} "
                                  f"{shown}")
            if value.__class__ is float and not math.isfinite(value):
                # nan passes every range check, and inf is no duration, size or count
                raise ConfigError(f"config key {key!r} must be a finite number, got {value!r}")
        elif key.startswith(spaces):
            msg = f"unknown config key {key!r}"
            hint = _close_key(key, known)
            if hint:
                msg += f" (did you mean {hint!r}?)"
            warnings.append(msg)
    return warnings


#: what squall itself writes into a component's config for it to read (``set_num_tasks``:
#: its tasks, as Storm does; ``complete_topology``: which fixed rows a spout it stands in for
#: emits; a streamparse conversion: the mode it converted the component in), not settings
COMPONENT_FACTS = frozenset({"topology.tasks", "squall.testing.run", "squall.testing.source",
                             "squall.streamparse.converted"})


#: keys the runtime reads once for the whole topology, from its conf, never from a
#: component's: the message timeout the ackers and the spouts share, the workers and ackers,
#: each worker's transport, serializer, queues, batching, back-pressure, error throttle,
#: metrics and process settings, and nimbus's scheduling of it. A component's own value would
#: reach only its own tasks (its spout timing trees out when the ackers do not), so it is
#: refused (:func:`check_topology_keys`), and so is every key of :data:`TOPOLOGY_PREFIXES`
TOPOLOGY_KEYS = frozenset((
    "topology.name", "topology.workers", "topology.acker.executors",
    "topology.message.timeout.secs", "topology.enable.message.timeouts",
    "topology.transfer.batch.size", "topology.batch.flush.interval.millis",
    "topology.executor.receive.buffer.size", "topology.backpressure.high.watermark",
    "topology.backpressure.low.watermark", "topology.builtin.metrics.bucket.size.secs",
    "topology.metrics.consumer.register", "topology.worker.die.on.error",
    "topology.worker.thread.switch.interval.ms", "worker.gc.thresholds",
    "topology.max.error.report.per.interval", "topology.error.throttle.interval.secs",
    "topology.isolated.hosts", "topology.min.replication.count",
    "topology.max.replication.wait.time.sec", "topology.serializer.register",
    "squall.transport", "squall.serializer", "squall.scheduler", "squall.acker",
    "squall.state"))
#: namespaces read only from the topology's conf: each worker's transport options (squall's
#: and a transport plugin's)
TOPOLOGY_PREFIXES = ("squall.transport.",)


def check_topology_keys(component: str, config: Mapping[str, Any]) -> None:
    """ConfigError naming ``component`` and the keys of its own config that are
    :data:`TOPOLOGY_KEYS` or under :data:`TOPOLOGY_PREFIXES`: such a key is set in the
    topology's conf. Called at build and submit time, from the caller's thread."""
    given = sorted(k for k in config if isinstance(k, str) and (
        k in TOPOLOGY_KEYS or k.startswith(TOPOLOGY_PREFIXES)))
    if given:
        one = len(given) == 1
        what = f"config key {given[0]!r} applies" if one else \
            f"config keys {', '.join(map(repr, given))} apply"
        raise ConfigError(f"component {component!r}: {what} to the whole topology and "
                          f"cannot be set in a component's config; set {'it' if one else 'them'} "
                          f"in the topology's conf")


def validate_component(component: str, config: Mapping[str, Any], *,
                       warn: bool = True) -> list[str]:
    """Check a component's own config (``set_bolt(..., config=...)``) the way
    :func:`validate` checks a topology's: no key of :data:`TOPOLOGY_KEYS`
    (:func:`check_topology_keys`), known keys' types and ranges, then the plugins'
    ``squall_validate_config`` hooks on the keys present (ConfigError naming the component;
    a plugin's bug, PluginLoadError naming it too), unknown keys in squall's namespaces
    (warnings, returned, and logged if ``warn``)."""
    check_topology_keys(component, config)
    known = defaults()
    nullable = nullable_types(known)
    config = {k: v for k, v in config.items() if k not in COMPONENT_FACTS}
    from squall.plugin_manager import validate_config
    try:
        warnings = _check_types(config, known, nullable)
        _check_ranges(config, known, nullable)
        validate_config(config)        # the plugins' own keys' values
    except ConfigError as exc:
        raise ConfigError(f"component {component!r}: {exc}") from None
    except PluginLoadError as exc:
        raise PluginLoadError(f"component {component!r}: {exc}") from exc
    warnings = [f"component {component!r}: {w}" for w in warnings]
    if warn:
        for msg in warnings:
            log.warning("%s", msg)
    return warnings


def validate_components(components: Iterable[Any]) -> None:
    """:func:`validate_component` for each component spec (``id``, ``config``) of a
    topology that has a config of its own."""
    for spec in components:
        if spec.config:
            validate_component(spec.id, spec.config)


#: lists of the hosts a process reaches the cluster through: an empty one meant localhost
#: without a word
HOST_LISTS = ("storm.zookeeper.servers", "nimbus.seeds")


def _check_addresses(conf: Mapping[str, Any]) -> None:
    """ConfigError for an empty :data:`HOST_LISTS` list, a ``storm.zookeeper.root`` that is
    not an absolute path, or a ``drpc.servers`` entry that is not ``host`` or ``host:port``
    with a port from 1 to 65535."""
    for key in HOST_LISTS:
        if conf.get(key) == []:
            raise ConfigError(f"config key {key!r} must list at least one host, got []")
    root = conf.get("storm.zookeeper.root")
    if isinstance(root, str) and not root.startswith("/"):
        raise ConfigError(f"config key 'storm.zookeeper.root' must be an absolute path "
                          f"(such as '/squall'), got {root!r}")
    servers = conf.get("drpc.servers")
    for entry in servers if isinstance(servers, list) else ():
        text = entry.strip() if isinstance(entry, str) else ""
        host, colon, port = text.rpartition(":")
        if colon:
            good = bool(host) and port.isdigit() and 1 <= int(port) <= 65535
        else:
            good = bool(text)
        if not good:
            raise ConfigError(f"config key 'drpc.servers' must list 'host' or 'host:port' "
                              f"entries with a port from 1 to 65535, got {entry!r}")


#: keys naming a port a daemon listens on or reaches: 0 (any free one, where a daemon takes
#: that) to 65535
PORT_KEYS = ("storm.zookeeper.port", "nimbus.port", "ui.port", "drpc.port", "drpc.http.port",
             "logviewer.port")


def _check_ports(conf: Mapping[str, Any]) -> None:
    """ConfigError for a port number out of 0-65535, a ``supervisor.slots.ports`` entry
    that is not a port from 1 to 65535 (a worker listens on each), or two ports one daemon
    would listen on at once (see :func:`_check_shared_ports`)."""
    for key in PORT_KEYS:
        value = conf.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and not 0 <= value <= 65535:
            raise ConfigError(f"config key {key!r} must be a port number from 0 to 65535, "
                              f"got {value}")
    for port in conf.get("supervisor.slots.ports") or ():
        if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
            raise ConfigError(f"config key 'supervisor.slots.ports' must list port numbers "
                              f"from 1 to 65535, got {port!r}")
    offset = conf.get("worker.metrics.port.offset")    # a worker's /metrics: its port + offset
    if isinstance(offset, int) and not isinstance(offset, bool):
        top = max(conf.get("supervisor.slots.ports") or (), default=0)
        if offset + top > 65535:
            beside = f" plus the highest 'supervisor.slots.ports' ({top})" if top else ""
            raise ConfigError(f"config key 'worker.metrics.port.offset'{beside} must be at "
                              f"most 65535, got {offset}")
    _check_shared_ports(conf)


def _port(conf: Mapping[str, Any], key: str) -> int | None:
    """``conf[key]`` when it names a port (0, any free one, names none)."""
    value = conf.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value else None


def _check_shared_ports(conf: Mapping[str, Any]) -> None:
    """ConfigError, naming both keys, for a port one daemon would listen on twice: a
    supervisor's logviewer (``logviewer.port``) on one of its slots, a worker's /metrics
    (its slot's port + ``worker.metrics.port.offset``) on another slot or on the logviewer's
    port, the DRPC server's HTTP front on its gRPC port. The later binding would fail there
    (a worker that never starts, a slot lost for good). Ports of different daemons may meet:
    they may run on different machines."""
    slots = sorted(set(conf.get("supervisor.slots.ports") or ()))
    viewer = _port(conf, "logviewer.port")
    if viewer in slots:
        raise ConfigError(f"config key 'logviewer.port' ({viewer}) is also in "
                          f"'supervisor.slots.ports': the supervisor's logviewer and that "
                          f"slot's worker cannot both listen on it; choose a port of its own")
    offset = _port(conf, "worker.metrics.port.offset")
    for slot in slots if offset is not None else ():
        taken = slot + offset
        if taken in slots or taken == viewer:
            other = "'supervisor.slots.ports' lists too" if taken in slots else \
                "is 'logviewer.port'"
            raise ConfigError(f"config key 'worker.metrics.port.offset' ({offset}) puts the "
                              f"/metrics endpoint of slot {slot}'s worker on port {taken}, "
                              f"which {other}: one of the two could never listen there; "
                              f"choose an offset that takes every slot's port past the slots "
                              f"and 'logviewer.port'")
    grpc, http = _port(conf, "drpc.port"), _port(conf, "drpc.http.port")
    if grpc is not None and grpc == http:
        raise ConfigError(f"config keys 'drpc.port' and 'drpc.http.port' are both {grpc}: the "
                          f"DRPC server listens on each; give them different ports")


#: keys whose value is a list of strings (host names)
STR_LISTS = ("topology.isolated.hosts",)


def _check_str_lists(conf: Mapping[str, Any]) -> None:
    """ConfigError for an item of a :data:`STR_LISTS` key that is not a string."""
    for key in STR_LISTS:
        value = conf.get(key)
        for item in value if isinstance(value, list) else ():
            if not isinstance(item, str):
                raise ConfigError(f"config key {key!r} must list strings, got "
                                  f"{type(item).__name__} {item!r}")


def _check_ranges(conf: Mapping[str, Any], known: Mapping[str, Any],
                  nullable: Mapping[str, tuple[type, ...]]) -> None:
    """Storm's numeric keys (counts, sizes, durations) and :data:`NOT_NEGATIVE` are never
    negative; those in :data:`AT_LEAST_ONE` are at least 1, those of :data:`AT_LEAST` at
    least what it says, those in :data:`POSITIVE` above 0; no known key's duration is above
    :data:`MAX_DURATION_SECS`. ConfigError naming the first key that is not."""
    _check_durations(conf, known)
    for key, value in conf.items():
        if key not in known or key in PORT_KEYS or \
                not (key.startswith(_COUNTED) or key in AT_LEAST_ONE or key in POSITIVE
                     or key in NOT_NEGATIVE or key in AT_LEAST) or \
                not isinstance(value, (int, float)) or isinstance(value, bool):
            continue            # (a port's range has its own check and message)
        rule = _expected(key, known[key], nullable)
        if rule is None:
            continue
        if key in POSITIVE and value <= 0:
            raise ConfigError(f"config key {key!r} must be above 0"
                              f"{' (or null)' if rule[1] else ''}, got {value!r}")
        least = AT_LEAST.get(key, 1 if key in AT_LEAST_ONE else 0)
        if value < least and not (value == -1 and key in MINUS_ONE_UNLIMITED):
            raise ConfigError(f"config key {key!r} must be at least {least}"
                              f"{' (or null)' if rule[1] else ''}, got {value!r}")


def duration_unit(key: str) -> float | None:
    """Seconds per unit of the duration ``key`` gives, by its name: 1 for ``*.secs`` and
    ``*.sec``, 0.001 for ``*.ms``, ``*.millis`` and Storm's ZooKeeper timeouts; None for a key
    that gives no duration.

    >>> duration_unit("nimbus.monitor.freq.secs"), duration_unit("topology.workers")
    (1.0, None)
    """
    if key.endswith((".secs", ".sec")):
        return 1.0
    if key.endswith((".ms", ".millis")) or key in _MS_DURATIONS:
        return 0.001
    return None


def _check_durations(conf: Mapping[str, Any], known: Mapping[str, Any]) -> None:
    """ConfigError naming the first known key (squall's or a plugin's) whose duration is
    above :data:`MAX_DURATION_SECS` (see :func:`duration_unit`)."""
    for key, value in conf.items():
        unit = duration_unit(key) if key in known else None
        if unit is None or not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        most = round(MAX_DURATION_SECS / unit)
        if value > most:
            raise ConfigError(f"config key {key!r} must be at most {most} (a year), "
                              f"got {value!r}")


def period_secs(conf: Mapping[str, Any], key: str) -> float:
    """The period of a daemon's loop, ``conf[key]`` in seconds (its default when missing or
    null): ConfigError unless a number above 0 and at most :data:`MAX_DURATION_SECS`, so a
    conf that never went through :func:`validate` cannot make the loop's wait busy or kill
    its thread. Called when the daemon is built, from the caller's thread."""
    value = conf.get(key)
    if value is None:
        value = _base_defaults()[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not 0 < value <= MAX_DURATION_SECS:
        raise ConfigError(f"config key {key!r} must be a number of seconds above 0 and at "
                          f"most {MAX_DURATION_SECS} (a year), got {value!r}")
    return float(value)


def check_heartbeats(conf: Mapping[str, Any]) -> None:
    """ConfigError unless each heartbeat of :data:`HEARTBEATS` is below the timeout that
    watches it, when ``conf`` holds both (a topology's own conf may hold one: nimbus checks
    it again merged with its own). A LocalCluster's conf (``squall.state: memory``: no
    supervisor or nimbus process watches the beats there) is not checked."""
    if conf.get("squall.state") == "memory":
        return
    for beat, timeout, why in HEARTBEATS:
        every, limit = conf.get(beat), conf.get(timeout)
        if not isinstance(every, (int, float)) or not isinstance(limit, (int, float)) or \
                isinstance(every, bool) or isinstance(limit, bool):
            continue            # missing, or a type error said elsewhere
        if every >= limit:
            raise ConfigError(f"config key {beat!r} ({every!r}) must be below {timeout!r} "
                              f"({limit!r}): {why}")


def check_range(conf: Mapping[str, Any], key: str, least: float, most: float | None = None,
                *, nullable: bool = False) -> None:
    """ConfigError unless ``conf[key]`` is from ``least`` to ``most`` (both included; no
    upper bound when ``most`` is None), in the words squall uses for its own keys: "config key
    'K' must be from 0 to 2147483647 (or null), got -5". A missing or null key passes, and so
    does a value that is not a number (its type is checked elsewhere): for a plugin's
    ``squall_validate_config``."""
    value = conf.get(key)
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    if least <= value and (most is None or value <= most):
        return
    allowed = f"at least {least}" if most is None else f"from {least} to {most}"
    raise ConfigError(f"config key {key!r} must be {allowed}{' (or null)' if nullable else ''}, "
                      f"got {value!r}")


def check_host(conf: Mapping[str, Any], key: str) -> None:
    """ConfigError when ``conf[key]``, an address to bind, is an empty (or blank) string: say
    ``0.0.0.0`` for every interface. A missing or null key passes, and so does a value that
    is not a string (its type is checked elsewhere): for a plugin's
    ``squall_validate_config``."""
    value = conf.get(key)
    if isinstance(value, str) and not value.strip():
        raise ConfigError(f"config key {key!r} must be a host name or address to bind "
                          f"('0.0.0.0': every interface), got {value!r}")


def _yaml_value(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, width=10**9)
    return text.removesuffix("\n...\n").strip()


def sample() -> str:
    """The text of ``squall config --sample``: every default, commented and grouped.

    It is squall's defaults.yaml followed by one section per plugin that adds keys; it parses
    back (``read_yaml_file`` / ``load_config``) to exactly :func:`defaults`.
    """
    parts = [_defaults_text().rstrip("\n") + "\n"]
    base = _base_defaults()
    for plugin, keys in _plugin_defaults():
        new = {k: v for k, v in keys.items() if k not in base}
        if new:
            parts.append(f"\n### Plugin {plugin} (squall_add_defaults)\n")
            parts.extend(f"{k}: {_yaml_value(v)}\n" for k, v in new.items())
    return "".join(parts)


def dump(conf: Mapping[str, Any]) -> str:
    """The effective conf as YAML for ``squall config``: sorted keys, with a ``# default: ...``
    comment on every value that differs from its default. Secret values (passwords, payloads,
    tokens, keys: :func:`squall.security.is_secret_key`) are shown as ``******``."""
    base = defaults()
    conf = redact(conf)
    lines = []
    for key in sorted(conf):
        line = f"{_yaml_value(key)}: {_yaml_value(conf[key])}"
        if key in base and base[key] != conf[key]:
            line += f"    # default: {_yaml_value(base[key])}"
        lines.append(line)
    return "\n".join(lines) + "\n"
