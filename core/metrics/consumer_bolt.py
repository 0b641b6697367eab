"""The system bolt that feeds one registered metrics consumer.

For every entry of ``topology.metrics.consumer.register`` the runtime adds a system component
(see :func:`consumer_components`) running :class:`MetricsConsumerBolt` with ``parallelism.hint``
tasks (default 1). Every task of every component sends its data points once per bucket on the
stream :data:`METRICS_STREAM`, shuffle-grouped to each consumer component (as in Storm).

A registration entry is a consumer name or a mapping with Storm's keys (:data:`ENTRY_KEYS`):
``class`` (an entry point of ``squall.metrics_consumers``), ``argument`` (handed to
``prepare``), ``parallelism.hint`` (tasks, default 1), ``max.retain.metric.tuples`` (data-point
tuples a consumer task keeps queued, default 100; beyond it the oldest are dropped; 0: no
limit) and ``whitelist`` or ``blacklist`` (lists of regular expressions, searched in each data
point's name: only the names one of the whitelist's matches reach the consumer, or none that
one of the blacklist's matches). :func:`check_entry` refuses any other key, with a did-you-mean.

Conf keys (in the consumer component's config):

- ``squall.metrics.consumer``: ``{class: NAME, argument: ANY}`` and the entry's
  ``max.retain.metric.tuples``, ``whitelist`` and ``blacklist`` when it has them, NAME an
  entry point of ``squall.metrics_consumers``; set by :func:`consumer_components` from the
  registration.

Tuple layout on :data:`METRICS_STREAM` (fields :data:`METRICS_FIELDS`), built by
:func:`metrics_values`: ``[task_info, data_points]`` where ``task_info`` is a dict of the
:class:`squall.TaskInfo` fields and ``data_points`` a list of ``[name, value]`` pairs; plain
lists and dicts so any serializer carries them.
"""
from __future__ import annotations

import dataclasses
import inspect
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

from squall import drivers
from squall.drivers import did_you_mean
from squall.api.component import Bolt
from squall.api.context import TopologyContext
from squall.api.tuple import Tuple
from squall.errors import ConfigError, PluginLoadError
from squall.spi.metrics import DataPoint, MetricsConsumer, TaskInfo

__all__ = [
    "CONSUMER_KEY", "DEFAULT_RETAIN", "ENTRY_KEYS", "METRICS_COMPONENT_PREFIX", "METRICS_FIELDS",
    "METRICS_STREAM", "RETAIN_KEY", "MetricsConsumerBolt", "check_entry", "check_registrations",
    "consumer_components", "decode_metrics", "load_consumers", "metrics_values",
]

log = logging.getLogger(__name__)

METRICS_STREAM = "__metrics"
METRICS_FIELDS = ("task_info", "data_points")
METRICS_COMPONENT_PREFIX = "__metrics_"
CONSUMER_KEY = "squall.metrics.consumer"
_TASK_INFO_FIELDS = tuple(f.name for f in dataclasses.fields(TaskInfo))
REGISTER_KEY = "topology.metrics.consumer.register"
RETAIN_KEY = "max.retain.metric.tuples"
#: data-point tuples a consumer task keeps queued unless its entry says otherwise (Storm's)
DEFAULT_RETAIN = 100
#: the keys of a registration entry (Storm's)
ENTRY_KEYS = ("class", "argument", "parallelism.hint", RETAIN_KEY, "whitelist", "blacklist")
#: the entry's keys the consumer's tasks read (in its component config, under CONSUMER_KEY)
_TASK_KEYS = (RETAIN_KEY, "whitelist", "blacklist")


def check_entry(entry: Any) -> dict[str, Any]:
    """One ``topology.metrics.consumer.register`` entry as a mapping (a bare name is
    ``{class: NAME}``), checked: ConfigError naming the problem for a malformed entry, an
    unknown key (with a did-you-mean), or a bad value of one of :data:`ENTRY_KEYS`. The
    consumer's name itself is checked by ``squall.drivers.validate_conf``."""
    spec = {"class": entry} if isinstance(entry, str) else entry
    if not isinstance(spec, Mapping) or not isinstance(spec.get("class"), str):
        raise ConfigError(f"each {REGISTER_KEY} entry must be a name or a mapping with a "
                          f"'class' key, got {entry!r}")
    name = spec["class"]
    where = f"{REGISTER_KEY} entry for {name!r}"
    for key in spec:
        if key not in ENTRY_KEYS:
            hint = did_you_mean(str(key), list(ENTRY_KEYS))
            raise ConfigError(f"{where}: unknown key {key!r}"
                              f"{f' (did you mean {hint!r}?)' if hint else ''}; an entry takes "
                              f"{', '.join(ENTRY_KEYS)}")
    parallelism = spec.get("parallelism.hint", 1)
    if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1:
        raise ConfigError(f"metrics consumer {name!r}: parallelism.hint must be a positive "
                          f"integer, got {parallelism!r}")
    retain = spec.get(RETAIN_KEY, DEFAULT_RETAIN)
    if isinstance(retain, bool) or not isinstance(retain, int) or retain < 0:
        raise ConfigError(f"metrics consumer {name!r}: {RETAIN_KEY} must be an integer of at "
                          f"least 0 (0: no limit), got {retain!r}")
    lists = [key for key in ("whitelist", "blacklist") if spec.get(key)]
    if len(lists) > 1:
        raise ConfigError(f"metrics consumer {name!r}: give a whitelist or a blacklist, not "
                          "both")
    for key in ("whitelist", "blacklist"):
        patterns = spec.get(key)
        if patterns is None:
            continue
        if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
            raise ConfigError(f"metrics consumer {name!r}: {key} must be a list of regular "
                              f"expressions, got {patterns!r}")
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ConfigError(f"metrics consumer {name!r}: {key} entry {pattern!r} is not "
                                  f"a regular expression: {exc}") from None
    return dict(spec)


def check_registrations(conf: Mapping[str, Any]) -> None:
    """:func:`check_entry` for every entry of ``topology.metrics.consumer.register`` (called
    by ``squall.config.validate``, so at submit)."""
    entries = conf.get(REGISTER_KEY) or []
    if not isinstance(entries, list):
        raise ConfigError(f"{REGISTER_KEY} must be a list of entries, got {entries!r}")
    for entry in entries:
        check_entry(entry)


def load_consumers(conf: Mapping[str, Any]) -> None:
    """Import the class of every registered consumer, as its tasks will: PluginLoadError
    naming the first whose import fails, whose ``squall_requires`` lists a module that is
    not installed (with the extra to install), or whose class is no concrete
    :class:`squall.MetricsConsumer`; ConfigError from a class's ``squall_check_entry(spec)``
    (a classmethod a consumer may define to refuse an entry it cannot serve, handed the
    checked entry as a mapping). Called at submit (a ``squall_validate_topology`` hook), so
    such a topology is refused there instead of its consumer tasks failing on every bucket."""
    for entry in conf.get(REGISTER_KEY) or []:
        spec = check_entry(entry)
        cls = drivers.load("squall.metrics_consumers", spec["class"])
        why = _not_a_consumer(cls)
        if why is not None:
            what = f"{getattr(cls, '__module__', '?')}:{getattr(cls, '__qualname__', cls)}"
            raise PluginLoadError(f"squall.metrics_consumers {spec['class']!r} names {what}, "
                                  f"which {why}")
        check = getattr(cls, "squall_check_entry", None)
        if check is not None:
            check(spec)


def _not_a_consumer(cls: Any) -> str | None:
    """Why ``cls`` cannot run as a metrics consumer's class, or None when it can."""
    if not isinstance(cls, type) or not issubclass(cls, MetricsConsumer):
        return "is not a squall.MetricsConsumer subclass"
    if inspect.isabstract(cls):
        return "does not define " + ", ".join(sorted(getattr(cls, "__abstractmethods__", ())))
    return None


def consumer_components(conf: Mapping[str, Any]) -> list[tuple[str, dict[str, Any], int]]:
    """``(component id, component config, parallelism)`` per registered consumer.

    Ids are ``__metrics_<name>``; a name registered again gets ``__metrics_<name>#2``, ``#3``...
    An entry is a consumer name or a mapping of :data:`ENTRY_KEYS` (see the module docstring).
    Raises ConfigError for a malformed entry (names are checked by ``squall.config.validate``).
    """
    out: list[tuple[str, dict[str, Any], int]] = []
    seen: dict[str, int] = {}
    for entry in conf.get(REGISTER_KEY) or []:
        spec = check_entry(entry)
        name = spec["class"]
        seen[name] = seen.get(name, 0) + 1
        cid = METRICS_COMPONENT_PREFIX + name + (f"#{seen[name]}" if seen[name] > 1 else "")
        task_spec = {"class": name, "argument": spec.get("argument")}
        task_spec.update({k: spec[k] for k in _TASK_KEYS if k in spec})
        out.append((cid, {CONSUMER_KEY: task_spec}, spec.get("parallelism.hint", 1)))
    return out


def metrics_values(task_info: TaskInfo, data_points: Sequence[DataPoint]) -> list[Any]:
    """The values of one metrics tuple (sender side: the executor, once per bucket)."""
    return [dataclasses.asdict(task_info), [[p.name, p.value] for p in data_points]]


def decode_metrics(values: Sequence[Any]) -> tuple[TaskInfo, list[DataPoint]]:
    """Inverse of :func:`metrics_values`; raises ValueError on a malformed tuple."""
    try:
        info, points = values
        missing = [f for f in _TASK_INFO_FIELDS if f not in info]
        if missing:
            raise ValueError(f"task info lacks {', '.join(missing)}")
        task_info = TaskInfo(
            topology=str(info["topology"]), component=str(info["component"]),
            task=int(info["task"]), worker_host=str(info["worker_host"]),
            worker_port=int(info["worker_port"]), timestamp=float(info["timestamp"]),
            interval_secs=float(info["interval_secs"]))
        return task_info, [DataPoint(str(name), value) for name, value in points]
    except (TypeError, KeyError) as exc:
        raise ValueError(str(exc)) from exc


class MetricsConsumerBolt(Bolt):
    """Runs one :class:`squall.MetricsConsumer` as a bolt (system component ``__metrics_*``).

    All methods run on the task's own thread (``dedicated_thread``). ``initialize`` loads
    the consumer named in ``conf["squall.metrics.consumer"]`` and calls its ``prepare``;
    failures there (unknown
    name: PluginNotFoundError, missing extra: PluginLoadError, bad argument: ConfigError)
    propagate, as for any component, but an OSError (what the machine refuses: a port in
    use, a path not writable) is reported and the task runs on, dropping its data points.
    An exception from ``handle`` or a malformed tuple is
    reported with ``report_error`` and the task goes on; the tuple is acked either way.
    """

    outputs = ()
    consumer: MetricsConsumer | None = None
    #: a consumer writes where it reports (files, a database, an HTTP endpoint): on a thread of
    #: its own, a slow one delays only its own data points, not the executors of its worker
    dedicated_thread = True
    #: (patterns, whether a name one of them matches is kept): the whitelist (True) or the
    #: blacklist (False); None: every data point goes to the consumer
    _filter: tuple[list[re.Pattern[str]], bool] | None = None
    #: most metric names whose verdict is remembered (names are few: built-in and user metrics)
    _KEEP_CACHE = 10_000

    @classmethod
    def squall_queue_limit(cls, conf: Mapping[str, Any]) -> tuple[int, str]:
        """Most data-point tuples a task keeps queued (0: no limit; its executor drops the
        oldest beyond it, see ``squall.runtime.executors.threaded``), and the setting's name."""
        spec = conf.get(CONSUMER_KEY)
        retain = spec.get(RETAIN_KEY, DEFAULT_RETAIN) if isinstance(spec, Mapping) else \
            DEFAULT_RETAIN
        return (retain if isinstance(retain, int) and retain > 0 else 0), RETAIN_KEY

    def initialize(self, conf: dict[str, Any], context: TopologyContext) -> None:
        spec = conf.get(CONSUMER_KEY)
        if isinstance(spec, str):
            spec = {"class": spec}
        if not isinstance(spec, Mapping) or not isinstance(spec.get("class"), str):
            raise ConfigError(f"{CONSUMER_KEY} must be {{class: NAME, argument: ANY}}, "
                              f"got {spec!r}")
        self.name = spec["class"]
        check_entry({k: v for k, v in spec.items() if k in ENTRY_KEYS})
        for key, keep in (("whitelist", True), ("blacklist", False)):
            if spec.get(key):
                self._filter = ([re.compile(p) for p in spec[key]], keep)
        self._kept: dict[str, bool] = {}
        cls = drivers.load("squall.metrics_consumers", self.name)
        consumer = cls()
        try:
            consumer.prepare(conf, spec.get("argument"), context)
        except OSError as exc:   # its port in use, its path not writable: metrics are
            # secondary, so the topology runs on without this consumer, as without a worker's
            # own /metrics endpoint
            self.report_error(f"metrics consumer {self.name!r} cannot start: {exc}; it drops "
                              f"its data points and the topology runs on")
            return
        self.consumer = consumer

    def _keeps(self, name: str) -> bool:
        """Whether the data point named ``name`` passes the whitelist or blacklist (regular
        expressions searched in the name, as Storm's ``FilterByMetricName``)."""
        kept = self._kept.get(name)
        if kept is None:
            assert self._filter is not None
            patterns, keep = self._filter
            kept = keep if any(p.search(name) for p in patterns) else not keep
            if len(self._kept) >= self._KEEP_CACHE:
                self._kept.clear()
            self._kept[name] = kept
        return kept

    def process(self, tup: Tuple) -> None:
        if tup.stream != METRICS_STREAM or self.consumer is None:
            return
        try:
            task_info, points = decode_metrics(tup.values)
        except ValueError as exc:
            self.report_error(f"malformed metrics tuple from {tup.component}: {exc}")
            return
        if self._filter is not None:
            points = [p for p in points if self._keeps(p.name)]
            if not points:
                return
        try:
            self.consumer.handle(task_info, points)
        except Exception as exc:  # a consumer's bug must not stop metrics or the topology
            log.debug("metrics consumer %r failed", self.name, exc_info=True)
            self.report_error(f"metrics consumer {self.name!r} failed in handle: {exc!r}")

    def cleanup(self) -> None:
        consumer, self.consumer = self.consumer, None
        if consumer is not None:
            try:
                consumer.cleanup()
            except Exception as exc:  # reported; the other tasks still stop
                log.debug("metrics consumer %r failed in cleanup", self.name, exc_info=True)
                self.report_error(f"metrics consumer {self.name!r} failed in cleanup: {exc!r}")
