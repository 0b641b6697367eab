"""Log levels set at run time (Storm's dynamic log levels, ``squall set-log-level``).

Nimbus keeps a topology's requests in ``/logconfigs/<topology-id>`` as
``{"loggers": {NAME: {"level": "DEBUG", "expires": EPOCH_SECS_OR_0, "timeout": SECS}}}``
(``ROOT`` names the root logger; ``expires`` 0: until changed, without ``timeout``; an earlier
release wrote no ``timeout``). :func:`merge_request` computes that record from a request; every
worker of the topology reads it when it changes (and on its sync timer) and hands it to its
:class:`LogLevels`, which sets the levels and puts each logger back to the level it had before
once its request expires or is removed.

``expires`` is by nimbus's clock; a worker does not compare it with its own (a worker host
ahead of nimbus's by more than the timeout ignored the request): a request it sees appear ends
``timeout`` seconds later on its monotonic clock. One already there when the worker starts may
be old: it ends then, or when ``expires`` comes by the worker's clock if that is sooner.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from squall.errors import ConfigError

log = logging.getLogger(__name__)
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
#: the level that removes a request (the logger goes back to its own level)
RESET = "RESET"
ROOT = "ROOT"


def parse_assignment(item: str) -> tuple[str, str]:
    """``"squall.worker=DEBUG"`` -> ``("squall.worker", "DEBUG")``; ConfigError naming the
    item when it is malformed or the level unknown (``WARN`` is accepted for WARNING).

    The logger is what comes before the last ``=``, as it is: a component id with ``=`` or
    with spaces at either end is named too (``squall.component.a=b=DEBUG``)."""
    name, sep, level = item.rpartition("=")
    level = level.strip().upper()
    level = "WARNING" if level == "WARN" else level
    if not sep or not name.strip():
        raise ConfigError(f"bad log level {item!r}: expected LOGGER=LEVEL (ROOT for the root "
                          "logger)")
    if level not in LEVELS and level != RESET:
        raise ConfigError(f"bad log level {item!r}: the level must be one of "
                          f"{', '.join(LEVELS)} or {RESET}")
    return name, level


def check_worker_level(conf: Mapping[str, Any]) -> None:
    """ConfigError unless ``worker.log.level`` is one of :data:`LEVELS` (any case; ``WARN``
    for WARNING), as the worker reads it: ``config.validate`` calls it, so a daemon refuses
    a level its workers would crash on."""
    level = conf.get("worker.log.level")
    if isinstance(level, str) and level.upper() not in (*LEVELS, "WARN"):
        raise ConfigError(f"config key 'worker.log.level' must be one of {', '.join(LEVELS)}, "
                          f"got {level!r}")


def merge_request(current: Mapping[str, Any] | None, levels: Mapping[str, str],
                  timeout_secs: float, now: float | None = None) -> dict[str, Any]:
    """The ``/logconfigs`` record after a request: ``levels`` (logger -> level or RESET) set
    with ``timeout_secs`` (0: no expiry) over ``current``, expired entries dropped."""
    now = time.time() if now is None else now
    loggers = {name: dict(entry) for name, entry in
               ((current or {}).get("loggers") or {}).items()
               if isinstance(entry, Mapping) and not _expired(entry, now)}
    for name, level in levels.items():
        if level == RESET:
            loggers.pop(name, None)
        else:
            loggers[name] = {"level": level, "expires": 0} if timeout_secs <= 0 else {
                "level": level, "expires": now + timeout_secs, "timeout": timeout_secs}
    return {"loggers": loggers}


def _expired(entry: Mapping[str, Any], now: float) -> bool:
    expires = float(entry.get("expires") or 0)
    return bool(expires) and expires <= now


def _logger(name: str) -> logging.Logger:
    return logging.getLogger() if name == ROOT else logging.getLogger(name)


def _set_level(name: str, level: int, how: str) -> None:
    """Set logger ``name`` to ``level`` and say so at INFO, before the change when the line
    shows at the level it had (``ROOT=WARNING`` would swallow a line logged after it), after
    it otherwise (``ROOT=DEBUG`` in a worker at WARNING)."""
    logger = _logger(name)
    if log.isEnabledFor(logging.INFO):
        log.info("log level of %s %s %s", name, how, logging.getLevelName(level))
        logger.setLevel(level)
    else:
        logger.setLevel(level)
        log.info("log level of %s %s %s", name, how, logging.getLevelName(level))


class LogLevels:
    """The levels a worker set on request, and the levels to restore. Used from the worker
    process's main thread only; ``clock`` is monotonic."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._saved: dict[str, int] = {}    # logger -> level before the first request
        #: logger -> (its request's level and ``expires``, when (``clock``) it ends)
        self._ends: dict[str, tuple[tuple[str, float], float]] = {}
        self._applied = False               # a record was applied before (at the start)

    def apply(self, record: Mapping[str, Any] | None, now: float | None = None) -> None:
        """Make the process's loggers match ``record`` (a ``/logconfigs`` value or None);
        ``now``: ``time.time()`` when None."""
        now = time.time() if now is None else now
        wanted: dict[str, str] = {}
        ends: dict[str, tuple[tuple[str, float], float]] = {}
        for name, entry in ((record or {}).get("loggers") or {}).items():
            if isinstance(entry, Mapping):
                level = str(entry.get("level") or "").upper()
                if level in LEVELS and self._in_force(str(name), level, entry, now, ends):
                    wanted[str(name)] = level
        self._ends = ends
        self._applied = True
        for name in [n for n in self._saved if n not in wanted]:
            before = self._saved.pop(name)
            _set_level(name, before, "back to")
        for name, level in wanted.items():
            logger = _logger(name)
            if name not in self._saved:
                self._saved[name] = logger.level
            if logger.level != logging.getLevelName(level):
                _set_level(name, logging.getLevelName(level), "set to")

    def _in_force(self, name: str, level: str, entry: Mapping[str, Any], now: float,
                  ends: dict[str, tuple[tuple[str, float], float]]) -> bool:
        """Whether the request ``entry`` for logger ``name`` holds (see the module
        docstring); when it ends goes into ``ends``."""
        expires = float(entry.get("expires") or 0)
        timeout = entry.get("timeout")
        if not expires or timeout is None:      # no expiry, or an earlier release's nimbus
            return not _expired(entry, now)
        key = (level, expires)
        known = self._ends.get(name)
        if known is None or known[0] != key:
            left = float(timeout)
            if not self._applied:               # there before this worker: it may be old
                left = min(left, expires - now)
            known = (key, self.clock() + left)
        ends[name] = known
        return self.clock() < known[1]

    def active(self) -> dict[str, str]:
        """logger -> level for the requests in force."""
        return {n: logging.getLevelName(_logger(n).level) for n in self._saved}
