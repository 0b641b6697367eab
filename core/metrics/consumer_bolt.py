"""The system bolt that feeds one registered metrics consumer.

For every entry of ``topology.metrics.consumer.register`` the runtime adds a system component
(see :func:`consumer_components`) running :class:`MetricsConsumerBolt` with ``parallelism.hint``
tasks (default 1). Every task of every component sends its data points once per bucket on the
stream :data:`METRICS_STREAM`, shuffle-grouped to each consumer component (as in Storm).

Conf keys (in the consumer component's config):

- ``squall.metrics.consumer``: ``{class: NAME, argument: ANY}``, NAME an entry point of
  ``squall.metrics_consumers``; set by :func:`consumer_components` from the registration.

Tuple layout on :data:`METRICS_STREAM` (fields :data:`METRICS_FIELDS`), built by
:func:`metrics_values`: ``[task_info, data_points]`` where ``task_info`` is a dict of the
:class:`squall.TaskInfo` fields and ``data_points`` a list of ``[name, value]`` pairs; plain
lists and dicts so any serializer carries them.
"""
from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from squall import drivers
from squall.api.component import Bolt
from squall.api.context import TopologyContext
from squall.api.tuple import Tuple
from squall.errors import ConfigError
from squall.spi.metrics import DataPoint, MetricsConsumer, TaskInfo

__all__ = [
    "CONSUMER_KEY", "METRICS_COMPONENT_PREFIX", "METRICS_FIELDS", "METRICS_STREAM",
    "MetricsConsumerBolt", "consumer_components", "decode_metrics", "metrics_values",
]

log = logging.getLogger(__name__)

METRICS_STREAM = "__metrics"
METRICS_FIELDS = ("task_info", "data_points")
METRICS_COMPONENT_PREFIX = "__metrics_"
CONSUMER_KEY = "squall.metrics.consumer"
_TASK_INFO_FIELDS = tuple(f.name for f in dataclasses.fields(TaskInfo))


def consumer_components(conf: Mapping[str, Any]) -> list[tuple[str, dict[str, Any], int]]:
    """``(component id, component config, parallelism)`` per registered consumer.

    Ids are ``__metrics_<name>``; a name registered again gets ``__metrics_<name>#2``, ``#3``...
    An entry is a consumer name or ``{class: NAME, argument: ANY, parallelism.hint: N}``.
    Raises ConfigError for a malformed entry (names are checked by ``squall.config.validate``).
    """
    out: list[tuple[str, dict[str, Any], int]] = []
    seen: dict[str, int] = {}
    for entry in conf.get("topology.metrics.consumer.register") or []:
        spec = {"class": entry} if isinstance(entry, str) else entry
        if not isinstance(spec, Mapping) or not isinstance(spec.get("class"), str):
            raise ConfigError("each topology.metrics.consumer.register entry must be a name or "
                              f"a mapping with a 'class' key, got {entry!r}")
        name = spec["class"]
        parallelism = spec.get("parallelism.hint", 1)
        if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1:
            raise ConfigError(f"metrics consumer {name!r}: parallelism.hint must be a positive "
                              f"integer, got {parallelism!r}")
        seen[name] = seen.get(name, 0) + 1
        cid = METRICS_COMPONENT_PREFIX + name + (f"#{seen[name]}" if seen[name] > 1 else "")
        out.append((cid, {CONSUMER_KEY: {"class": name, "argument": spec.get("argument")}},
                    parallelism))
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
    propagate, as for any component. An exception from ``handle`` or a malformed tuple is
    reported with ``report_error`` and the task goes on; the tuple is acked either way.
    """

    outputs = ()
    consumer: MetricsConsumer | None = None
    #: a consumer writes where it reports (files, a database, an HTTP endpoint): on a thread of
    #: its own, a slow one delays only its own data points, not the executors of its worker
    dedicated_thread = True

    def initialize(self, conf: dict[str, Any], context: TopologyContext) -> None:
        spec = conf.get(CONSUMER_KEY)
        if isinstance(spec, str):
            spec = {"class": spec}
        if not isinstance(spec, Mapping) or not isinstance(spec.get("class"), str):
            raise ConfigError(f"{CONSUMER_KEY} must be {{class: NAME, argument: ANY}}, "
                              f"got {spec!r}")
        self.name = spec["class"]
        cls = drivers.load("squall.metrics_consumers", self.name)
        consumer = cls()
        consumer.prepare(conf, spec.get("argument"), context)
        self.consumer = consumer

    def process(self, tup: Tuple) -> None:
        if tup.stream != METRICS_STREAM or self.consumer is None:
            return
        try:
            task_info, points = decode_metrics(tup.values)
        except ValueError as exc:
            self.report_error(f"malformed metrics tuple from {tup.component}: {exc}")
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
