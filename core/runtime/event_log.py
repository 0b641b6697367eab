"""Sampled emits written to the events log: ``topology.debug`` and ``squall debug``.

``topology.debug: true`` records every emit of every component; ``squall debug TOPOLOGY
[COMPONENT] --enable --sampling PCT`` records a share of one component's (or every
component's) emits while the topology runs, until ``--disable``. Each recorded emit is one line
on the ``squall.events`` logger: the time, component, task, stream, the tuple id or anchors'
ids and the values (cut at :data:`MAX_VALUES_CHARS`). A worker process sends that logger to
``<topology-id>-<port>.events.log`` (rotated like its log, served by the logviewer with
``&file=events``). In a LocalCluster the logger follows the process's logging configuration
(``squall local`` shows INFO on stderr); where nothing configured would show its records (a
plain script that configures no logging), :func:`show_events` writes them to stderr itself,
and yields as soon as a handler of the program's would show them.

What it costs: a task being sampled has its ``emit`` and ``emit_many`` wrapped (one Python call
and a random draw per emit); every other task keeps the runtime's own functions, untouched, so
a topology without debugging pays nothing. The wrappers are installed and removed on the
worker's loop thread (:meth:`EventSampler.apply`).
"""
from __future__ import annotations

import logging
import random
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from squall.errors import TopologyError
from squall.runtime.emit.general import ANCHOR_SEQUENCES, anchors_of, values_list_of
from squall.runtime.task import TaskState

events_log = logging.getLogger("squall.events")
MAX_VALUES_CHARS = 500
#: key of the setting that applies to every component
EVERY = "*"


def settings_of(conf: Mapping[str, Any], component_debug: Mapping[str, Any] | None,
                component_confs: Mapping[str, Mapping[str, Any]] | None = None
                ) -> dict[str, float]:
    """component (or ``*``) -> sampling percentage, from ``topology.debug`` (every component
    at 100 %), a component's own ``topology.debug`` where it differs (``component_confs``:
    component -> the conf its tasks run with; 0 % turns one off), and a topology's
    ``component_debug`` record (set by ``squall debug``: an entry ``{"enable": false}`` is a
    ``--disable``, which turns off what the conf turned on; one for ``*`` turns off every
    component but those enabled after it)."""
    every = bool(conf.get("topology.debug"))
    record = component_debug or {}
    everything = record.get(EVERY)
    if isinstance(everything, Mapping) and not everything.get("enable"):
        out: dict[str, float] = {EVERY: 0.0}     # squall debug NAME --disable
    else:
        out = {EVERY: 100.0} if every else {}
        for comp, cconf in (component_confs or {}).items():
            if bool(cconf.get("topology.debug")) != every:
                out[str(comp)] = 0.0 if every else 100.0
    for comp, entry in record.items():
        if isinstance(entry, Mapping) and entry.get("enable"):
            out[str(comp)] = float(entry.get("samplingpct") or 100.0)
        elif isinstance(entry, Mapping) and comp != EVERY:
            out[str(comp)] = 0.0
    return out


def _shown(logger: logging.Logger, level: int, besides: logging.Handler | None) -> bool:
    """Whether a record of ``level`` that ``logger`` passes reaches a handler (other than
    ``besides``, or a NullHandler) that outputs it, on it or on the ancestors it propagates
    to."""
    node: logging.Logger | None = logger
    while node is not None:
        for h in node.handlers:
            if h is not besides and level >= h.level and not isinstance(h, logging.NullHandler):
                return True
        if not node.propagate:
            return False
        node = node.parent
    return False


class _StderrFallback(logging.StreamHandler):
    """Writes the events to the current ``sys.stderr`` while no other handler would output
    them; once the program configures logging that does, it writes nothing (no event twice).
    Costs one walk up the logger's ancestors per event, only while debugging is on."""

    def __init__(self, logger: logging.Logger) -> None:
        logging.Handler.__init__(self, logging.INFO)
        self.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        self._logger = logger

    @property
    def stream(self) -> Any:
        return sys.stderr

    def emit(self, record: logging.LogRecord) -> None:
        if not _shown(self._logger, record.levelno, self):
            super().emit(record)


def show_events(logger: logging.Logger = events_log) -> None:
    """Make sure sampled emits are seen: unless a handler of ``logger`` or of the ancestors
    it propagates to outputs INFO records (the program configured logging: then they follow
    that configuration, levels included), add a stderr fallback to it once (and set it to
    INFO unless its own level was set). Called where sampling starts, on the worker's loop
    thread; a worker process has the events log's handler by then, so it adds nothing."""
    if any(isinstance(h, _StderrFallback) for h in logger.handlers) \
            or _shown(logger, logging.INFO, None):
        return
    logger.addHandler(_StderrFallback(logger))
    if logger.level == logging.NOTSET and logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)


def _line(ts: TaskState, stream: Any, ident: Any, values: Any) -> str:
    text = repr(values)
    if len(text) > MAX_VALUES_CHARS:
        text = text[:MAX_VALUES_CHARS] + "..."
    return f"{time.time():.3f}\t{ts.component_id}\t{ts.task}\t{stream}\t{ident}\t{text}"


def _ident(ts: TaskState, kw: dict[str, Any]) -> Any:
    """The tuple id or the anchors' ids of one emit's keywords ``kw``. Anchors given as an
    iterator (any iterable but a list or tuple) are read once, into ``kw`` as a list, so the
    emit gets what was logged; what is no iterable of them is left for the emit to refuse."""
    if kw.get("tup_id") is not None:
        return kw["tup_id"]
    anchors = kw.get("anchors")
    if anchors is None:
        return "-"
    if anchors.__class__ not in ANCHOR_SEQUENCES:
        try:
            kw["anchors"] = anchors = anchors_of(ts, anchors)
        except TopologyError:
            return str(getattr(anchors, "id", anchors))
    return ",".join(str(getattr(a, "id", a)) for a in anchors) or "-"


def _sampled_emit(ts: TaskState, original: Callable[..., Any], rate: float
                  ) -> Callable[..., Any]:
    draw = random.random

    def emit(*args: Any, **kw: Any) -> Any:
        if rate >= 1.0 or draw() < rate:
            stream = args[1] if len(args) > 1 else kw.get("stream")
            if stream is None:          # the default stream, as emit takes it
                stream = "default"
            events_log.info("%s", _line(ts, stream, _ident(ts, kw), args[0] if args else None))
        return original(*args, **kw)
    emit.squall_event_original = original  # type: ignore[attr-defined]
    return emit


def _sampled_many(ts: TaskState, original: Callable[..., Any], rate: float
                  ) -> Callable[..., Any]:
    draw = random.random

    def emit_many(*args: Any, **kw: Any) -> Any:
        if args and (rate >= 1.0 or draw() < rate):
            stream = args[1] if len(args) > 1 else kw.get("stream")
            if stream is None:
                stream = "default"
            values_list = values_list_of(ts, stream, args[0])    # a generator: read once
            args = (values_list, *args[1:])
            for values in values_list:
                events_log.info("%s", _line(ts, stream, _ident(ts, kw), values))
        return original(*args, **kw)
    emit_many.squall_event_original = original  # type: ignore[attr-defined]
    return emit_many


class EventSampler:
    """Installs and removes the sampling wrappers on a worker's component tasks (those that
    emit: ackers are left alone). Owns what it wrapped; called on the loop thread only."""

    def __init__(self, tasks: Mapping[int, TaskState]) -> None:
        self._tasks = tasks
        self._rates: dict[int, float] = {}        # task -> rate it is sampled at

    def apply(self, settings: Mapping[str, float]) -> None:
        """Sample each task at its component's percentage (or ``*``'s); stop elsewhere."""
        for task, ts in self._tasks.items():
            inst = ts.instance
            if "emit" not in vars(inst):           # not a component that emits (an acker)
                continue
            pct = settings.get(ts.component_id, settings.get(EVERY))
            rate = min(1.0, max(0.0, float(pct) / 100.0)) if pct else 0.0
            if self._rates.get(task, 0.0) == rate:
                continue
            self._restore(task, inst)
            if rate > 0.0:
                show_events()
                inst.emit = _sampled_emit(ts, inst.emit, rate)
                inst.emit_many = _sampled_many(ts, inst.emit_many, rate)
                self._rates[task] = rate

    def _restore(self, task: int, inst: Any) -> None:
        if self._rates.pop(task, None) is None:
            return
        inst.emit = inst.emit.squall_event_original
        inst.emit_many = inst.emit_many.squall_event_original

    def sampled(self) -> dict[int, float]:
        """task -> the rate (0..1) its emits are sampled at, for the tasks being sampled."""
        return dict(self._rates)
