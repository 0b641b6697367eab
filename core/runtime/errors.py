"""Errors reported by components: kept for ``get_topology_info`` / ZooKeeper, logged throttled."""
from __future__ import annotations

import logging
import time
import traceback
from collections import defaultdict, deque
from typing import Any

log = logging.getLogger("squall.errors")
KEEP_PER_COMPONENT = 10


class ErrorLog:
    """Records errors per component (newest 10 kept; secret values of the conf replaced by
    ``******``) and logs at most
    ``topology.max.error.report.per.interval`` lines per component per
    ``topology.error.throttle.interval.secs``. Called from the loop thread; ``drain`` and
    ``recent`` may be called from any thread."""

    def __init__(self, conf: dict[str, Any]) -> None:
        self.max_per_interval = int(conf.get("topology.max.error.report.per.interval") or 5)
        self.interval = float(conf.get("topology.error.throttle.interval.secs") or 10)
        self._recent: dict[str, deque[dict[str, Any]]] = defaultdict(
            lambda: deque(maxlen=KEEP_PER_COMPONENT))
        self._new: deque[dict[str, Any]] = deque(maxlen=1000)
        self._window: dict[str, list[float]] = {}
        self.count = 0
        from squall.security import scrubber
        self._scrub = scrubber(conf)    # an exception's text may quote a password of the conf

    def record(self, component: str, task: int, exc: BaseException | str, host: str,
               port: int) -> None:
        if isinstance(exc, BaseException):
            text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            line = f"{type(exc).__name__}: {exc}"
        else:
            text = line = str(exc)
        text, line = self._scrub(text), self._scrub(line)
        entry = {"component": component, "task": task, "error": text, "time_secs": int(time.time()),
                 "host": host, "port": port}
        self.count += 1
        self._recent[component].append(entry)
        self._new.append(entry)
        now = time.monotonic()
        window = self._window.setdefault(component, [now, 0])
        if now - window[0] > self.interval:
            window[0], window[1] = now, 0
        window[1] += 1
        if window[1] <= self.max_per_interval:   # the whole traceback, for the worker log
            log.error("component %s task %d: %s", component, task, text.rstrip() or line)
        elif window[1] == self.max_per_interval + 1:
            log.error("component %s: more errors suppressed for %.0f s", component, self.interval)

    def drain(self) -> list[dict[str, Any]]:
        out = []
        while self._new:
            out.append(self._new.popleft())
        return out

    def recent(self) -> dict[str, list[dict[str, Any]]]:
        return {c: list(d) for c, d in self._recent.items()}
