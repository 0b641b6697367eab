"""Errors reported by components: kept for ``get_topology_info`` / ZooKeeper and logged, at
most ``topology.max.error.report.per.interval`` per component per interval (Storm's
throttle)."""
from __future__ import annotations

import logging
import threading
import time
import traceback
from collections import defaultdict, deque
from typing import Any

log = logging.getLogger("squall.errors")
KEEP_PER_COMPONENT = 10
#: the component the errors of a worker's own code are listed under (a start failure, a
#: loop stuck outside every component's call)
WORKER_COMPONENT = "__worker"
#: set on an exception once it is recorded: an emit's error is recorded where it is raised
#: (the component may catch it), and again by its executor if it escapes ``process``
_RECORDED = "__squall_recorded__"


class ErrorLog:
    """Records errors per component (newest 10 kept; secret values of the conf replaced by
    ``******``), as Storm reports them: at most ``topology.max.error.report.per.interval``
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
               port: int) -> None:
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
            if window[1] > self.max_per_interval:
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
        entry = {"component": component, "task": task, "error": text, "time_secs": int(time.time()),
                 "host": host, "port": port}
        self._recent[component].append(entry)
        self._new.append(entry)
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
