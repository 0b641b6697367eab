"""The garbage collector's thresholds in processes that run executors.

Executors allocate many short-lived container objects (tuples, lists, :class:`Tuple`), so
with CPython's default thresholds (700, 10, 10) the collector runs a young-generation pass
every few hundred tuples, and the full passes walk every pending tuple tree the spouts and
ackers hold. ``worker.gc.thresholds`` (three integers; ``[700, 10, 10]`` is the
interpreter's own) sets them in worker processes (from the topology's conf) and, while a
:class:`~squall.LocalCluster` runs, in its process (from the cluster's conf). Memory still
comes back: only how often the collector looks for cycles changes.
"""
from __future__ import annotations

import gc
from collections.abc import Callable, Mapping
from typing import Any

from squall.errors import ConfigError

__all__ = ["KEY", "apply", "thresholds"]

KEY = "worker.gc.thresholds"


def thresholds(conf: Mapping[str, Any]) -> tuple[int, int, int] | None:
    """The configured thresholds (None when the key is absent); ConfigError unless three
    non-negative integers."""
    value = conf.get(KEY)
    if value is None:
        return None
    if (not isinstance(value, (list, tuple)) or len(value) != 3
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                       for v in value)):
        raise ConfigError(f"config key {KEY!r} must be three non-negative integers "
                          f"(generations 0, 1, 2), got {value!r}")
    return int(value[0]), int(value[1]), int(value[2])


def apply(conf: Mapping[str, Any]) -> Callable[[], None]:
    """Set the thresholds ``conf`` asks for; returns a function that puts back the old ones."""
    wanted = thresholds(conf)
    before = gc.get_threshold()
    if wanted is None:
        return lambda: None
    gc.set_threshold(*wanted)
    return lambda: gc.set_threshold(*before)
