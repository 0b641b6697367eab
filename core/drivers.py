"""Loading drivers and named plugins from entry-point groups.

Drivers (exactly one active per role) and named plugins (groupings, metrics consumers) are
looked up by the short names users write in YAML and loaded lazily, so an unused plugin's heavy
imports never happen. Unknown names raise :class:`PluginNotFoundError` listing what exists, with
a did-you-mean; an entry point whose import fails raises :class:`PluginLoadError` naming the
extra to install.
"""
from __future__ import annotations

import difflib
import functools
from importlib import metadata
from typing import Any

from squall.errors import PluginLoadError, PluginNotFoundError

#: role -> (entry-point group, config key choosing the driver)
ROLES: dict[str, tuple[str, str]] = {
    "transport": ("squall.transports", "squall.transport"),
    "serializer": ("squall.serializers", "squall.serializer"),
    "scheduler": ("squall.schedulers", "squall.scheduler"),
    "acker": ("squall.ackers", "squall.acker"),
    "state": ("squall.state_stores", "squall.state"),
}
GROUPS = (
    "squall.transports", "squall.serializers", "squall.schedulers", "squall.ackers",
    "squall.state_stores", "squall.groupings", "squall.metrics_consumers", "squall.plugins",
)
#: top-level module of a missing dependency -> the extra that installs it
EXTRAS = {"zmq": "zmq", "pynng": "nng", "grpc": "grpc", "google": "grpc", "kazoo": "zookeeper",
          "pyspark": "spark", "pyarrow": "spark", "pandas": "spark"}


@functools.cache
def _entry_points(group: str) -> dict[str, metadata.EntryPoint]:
    found: dict[str, metadata.EntryPoint] = {}
    for ep in metadata.entry_points(group=group):
        found.setdefault(ep.name, ep)
    return found


def refresh() -> None:
    """Forget cached entry points (after installing a plugin at run time)."""
    _entry_points.cache_clear()
    clear = getattr(metadata.distributions, "cache_clear", None)
    if clear is not None:
        clear()
    _load.cache_clear()


def names(group: str) -> list[str]:
    return sorted(_entry_points(group))


def entries(group: str) -> list[tuple[str, str]]:
    """``(name, distribution)`` for every entry point of ``group``."""
    out = []
    for name, ep in sorted(_entry_points(group).items()):
        dist = getattr(ep, "dist", None)
        out.append((name, f"{dist.name} {dist.version}" if dist is not None else "?"))
    return out


def did_you_mean(name: str, candidates: list[str]) -> str | None:
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    return close[0] if close else None


def check(group: str, name: str) -> None:
    """Raise PluginNotFoundError unless ``name`` is an entry point of ``group`` (no import)."""
    available = names(group)
    if name not in available:
        raise PluginNotFoundError(group, name, available, did_you_mean(str(name), available))


@functools.cache
def _load(group: str, name: str) -> Any:
    check(group, name)
    ep = _entry_points(group)[name]
    try:
        return ep.load()
    except ImportError as exc:
        missing = (getattr(exc, "name", None) or "").split(".")[0]
        extra = EXTRAS.get(missing)
        how = f"; install it with: pip install 'squall[{extra}]'" if extra else ""
        raise PluginLoadError(
            f"{group} {name!r} could not be loaded: {exc}{how}") from exc
    except Exception as exc:  # a broken plugin must not look like a missing one
        raise PluginLoadError(f"{group} {name!r} failed to load: {exc!r}") from exc


def load(group: str, name: str) -> Any:
    """Return the object an entry point names (a class, or a module for ``squall.plugins``)."""
    return _load(group, name)


def driver_class(role: str, conf: dict[str, Any]) -> Any:
    """The class of the configured driver for ``role`` (``transport``, ``acker``, ...)."""
    group, key = ROLES[role]
    return load(group, str(conf.get(key)))


def driver(role: str, conf: dict[str, Any], *args: Any) -> Any:
    """Instantiate the configured driver for ``role`` with ``conf``."""
    return driver_class(role, conf)(conf, *args)


def validate_conf(conf: dict[str, Any]) -> None:
    """Check every driver name in ``conf`` exists (without importing any driver)."""
    for group, key in ROLES.values():
        if key in conf and conf[key] is not None:
            check(group, str(conf[key]))
    for entry in conf.get("topology.metrics.consumer.register") or []:
        cls = entry.get("class") if isinstance(entry, dict) else entry
        check("squall.metrics_consumers", str(cls))
