"""Errors reported by components: kept for ``get_topology_info`` / ZooKeeper and logged, at
most ``topology.max.error.report.per.interval`` per component per interval (Storm's
throttle); which task a thread's frames were in (:func:`task_in`), and the status reason a
worker's recent death gives a topology (:func:`death_reason`)."""
from __future__ import annotations

import logging
import threading
import time
import traceback
from collections import defaultdict, deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from squall.runtime.executors.base import Executor
    from squall.runtime.task import TaskState

log = logging.getLogger("squall.errors")
KEEP_PER_COMPONENT = 10
#: the component the errors of a worker's own code are listed under (a start failure, a
#: loop stuck outside every component's call)
WORKER_COMPONENT = "__worker"
#: set on an exception once it is recorded: an emit's error is recorded where it is raised
#: (the component may catch it), and again by its executor if it escapes ``process``
_RECORDED = "__squall_recorded__"
#: a worker's death this recent is its topology's status reason (:func:`death_reason`), as
#: long as nimbus shows a recent start failure (a failing slot is relaunched at least every
#: minute)
DEATH_RECENT_SECS = 150
#: the longest error text recorded (the worker's log has it whole): a longer one keeps its
#: first ERROR_HEAD_CHARS and its end (a traceback's innermost frames and its error line),
#: with how many characters were cut between. An entry then fits ZooKeeper's 1 MB value
#: even were every character a JSON escape of 12 bytes.
ERROR_TEXT_MAX, ERROR_HEAD_CHARS = 1 << 16, 1 << 14


class ErrorLog:
    """Records errors per component (newest 10 kept; secret values of the conf replaced by
    ``******``; a text over :data:`ERROR_TEXT_MAX` characters cut in the middle, the log line
    keeping it whole), as Storm reports them: at most ``topology.max.error.report.per.interval``
    per component per ``topology.error.throttle.interval.secs``. An error past that is
    counted, not recorded nor logged; the first one says so in one line, and when the
    interval ends (the next error of the component, or the next :meth:`drain`) one line
    gives how many were suppressed. An exception object is recorded once however often it
    is reported.

    ``record`` is called from the loop thread (or a component's own); ``drain`` and
    ``recent`` may be called from any thread."""

    def __init__(self, conf: dict[str, Any]) -> None:
        # as given: config.validate refuses 0 for both
        self.max_per_interval = int(conf.get("topology.max.error.report.per.interval", 5))
        self.interval = float(conf.get("topology.error.throttle.interval.secs", 10))
        self._recent: dict[str, deque[dict[str, Any]]] = defaultdict(
            lambda: deque(maxlen=KEEP_PER_COMPONENT))
        self._new: deque[dict[str, Any]] = deque(maxlen=1000)
        #: component -> [interval start (monotonic), errors reported in it]
        self._window: dict[str, list[float]] = {}
        self._lock = threading.Lock()
        #: errors reported, and those of them not recorded (past the throttle)
        self.count = 0
        self.suppressed = 0
        from squall.security import scrubber
        self._scrub = scrubber(conf)    # an exception's text may quote a password of the conf

    def record(self, component: str, task: int, exc: BaseException | str, host: str,
               port: int, fatal: bool = False, logged: bool = False) -> None:
        """Record (and log) ``exc`` as an error of ``component``'s ``task``, unless the
        throttle suppresses it. A ``fatal`` error (one that ended the worker: at most one per
        worker) is recorded even past the throttle, its entry marked ``"fatal": True``.
        ``logged``: the caller logged it already (a WARNING of its own), so no ERROR line."""
        if isinstance(exc, BaseException):
            if getattr(exc, _RECORDED, False):
                return
            try:
                setattr(exc, _RECORDED, True)
            except AttributeError:      # an exception class with __slots__: recorded each time
                pass
        with self._lock:
            self.count += 1
            now = time.monotonic()
            window = self._window.get(component)
            if window is None or now - window[0] > self.interval:
                if window is not None:
                    self._close(component, window)
                window = self._window[component] = [now, 0]
            window[1] += 1
            if window[1] > self.max_per_interval and not fatal:
                self.suppressed += 1
                if window[1] == self.max_per_interval + 1:
                    log.error("component %s: more than %d errors in %.0f s; the next ones "
                              "are counted, not reported, until the interval ends", component,
                              self.max_per_interval, self.interval)
                return
        if isinstance(exc, BaseException):
            text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            line = f"{type(exc).__name__}: {exc}"
        else:
            text = line = str(exc)
        text, line = self._scrub(text), self._scrub(line)
        entry = {"component": component, "task": task, "error": shorten(text),
                 "time_secs": int(time.time()), "host": host, "port": port}
        if fatal:
            entry["fatal"] = True
        self._recent[component].append(entry)
        self._new.append(entry)
        if not logged:
            log.error("component %s task %d: %s", component, task, text.rstrip() or line)

    def _close(self, component: str, window: list[float]) -> None:
        """The end of ``component``'s interval: one line for the errors it suppressed."""
        over = int(window[1]) - self.max_per_interval
        if over > 0:
            log.error("component %s: %d more error(s) in %.0f s were not reported "
                      "(topology.max.error.report.per.interval is %d)", component, over,
                      self.interval, self.max_per_interval)

    def close_intervals(self) -> None:
        """End the intervals that have run out (their suppressed counts are logged)."""
        now = time.monotonic()
        with self._lock:
            for component in [c for c, w in self._window.items() if now - w[0] > self.interval]:
                self._close(component, self._window.pop(component))

    def drain(self) -> list[dict[str, Any]]:
        """The errors recorded since the last call (ending the intervals that have run out)."""
        self.close_intervals()
        out = []
        while self._new:
            out.append(self._new.popleft())
        return out

    def recent(self) -> dict[str, list[dict[str, Any]]]:
        return {c: list(d) for c, d in self._recent.items()}


def shorten(text: str) -> str:
    """``text``, or when it is over :data:`ERROR_TEXT_MAX` characters, that many of it: its
    first :data:`ERROR_HEAD_CHARS` and its end, with a line between saying how many
    characters were cut."""
    cut = len(text) - ERROR_TEXT_MAX
    if cut <= 0:
        return text
    return (f"{text[:ERROR_HEAD_CHARS]}\n... ({cut} characters cut) ...\n"
            f"{text[ERROR_HEAD_CHARS + cut:]}")


def outward(frame: FrameType | None) -> Iterator[FrameType]:
    """A live thread's frames from ``frame`` outward (innermost first)."""
    while frame is not None:
        yield frame
        frame = frame.f_back


def raised_in(tb: TracebackType | None) -> list[FrameType]:
    """The frames a traceback went through, from where it was raised outward (innermost
    first)."""
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    frames.reverse()
    return frames


def task_in(frames: Iterable[FrameType], tasks: Iterable[TaskState],
            executors: Iterable[Executor] = ()) -> TaskState | None:
    """The task of ``tasks`` whose call ``frames`` (innermost first: :func:`outward` or
    :func:`raised_in`) are in: the innermost frame of a method of its component instance;
    else the innermost frame that runs for one (a local ``ts`` that is one of ``tasks``, or
    one of ``executors`` as ``self``: its first task); None when no frame does."""
    tasks = list(tasks)
    instances = {id(ts.instance): ts for ts in tasks}
    known = {id(ts) for ts in tasks}
    runs = {id(ex): ex for ex in executors}
    fallback: TaskState | None = None
    for frame in frames:
        try:
            local = frame.f_locals
        except Exception:   # a frame that cannot say: the next one may
            continue
        me = local.get("self")
        ts = instances.get(id(me))
        if ts is not None and ts.instance is me:
            return ts
        if fallback is None:
            cand = local.get("ts")
            ex = runs.get(id(me))     # ``me`` lives: an id is its own meanwhile
            if id(cand) in known:
                fallback = cand
            elif ex is not None:
                fallback = ex.tasks[0]
    return fallback


def death_text(exc: BaseException, ts: TaskState | None, own_thread: bool) -> str:
    """What a worker's death of ``exc`` is recorded as (``Loop.died``): the traceback, then
    one line naming the task whose call raised it (None: the worker's own code), said last as
    what ``squall local``, ``squall list`` and the status reason show of an error."""
    what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    where = "the worker's loop" if ts is None else \
        f"component {ts.component_id!r} (task {ts.task}{', on its own thread' if own_thread else ''})"
    why = "" if isinstance(exc, Exception) else \
        " (not an Exception: sys.exit(), KeyboardInterrupt and the like stop the worker)"
    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return f"{trace}worker stopped: {where} raised {what}{why}; it restarts"


def death_reason(errors: Mapping[str, Sequence[Mapping[str, Any]]], now: float) -> str:
    """The status reason of a topology whose worker died within :data:`DEATH_RECENT_SECS`
    of ``now`` (``time.time()``): its newest fatal error among ``errors`` (component ->
    entries); ``""`` when there is none that recent."""
    newest: Mapping[str, Any] | None = None
    for entries in errors.values():
        for entry in entries:
            if entry.get("fatal") and (newest is None or float(entry.get("time_secs") or 0)
                                       > float(newest.get("time_secs") or 0)):
                newest = entry
    if newest is None:
        return ""
    age = now - float(newest.get("time_secs") or 0)
    if age > DEATH_RECENT_SECS:
        return ""
    lines = str(newest.get("error") or "").strip().splitlines()
    return (f"a worker died {max(0, int(age))} s ago ({newest.get('host')}:"
            f"{newest.get('port')}): {lines[-1] if lines else 'unknown error'}")
