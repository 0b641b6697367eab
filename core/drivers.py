"""Loading drivers and named plugins from entry-point groups, with stevedore.

Drivers (exactly one active per role, :data:`ROLES`) and named plugins (groupings, metrics
consumers, hook modules; :data:`GROUPS`) are looked up by the short names users write in YAML.

Map of the module:

- **what is installed**: :func:`names`, :func:`entries`, :func:`check` and
  :func:`validate_conf` read squall's index of each group (``importlib.metadata``, kept until
  :func:`refresh`). They never import a plugin. When several distributions provide one name,
  squall's own distribution wins, else the first by distribution name; one warning names both
  (once per process) and :func:`shadowed` lists the losers.
- **one by name**: :func:`load` (and :func:`driver_class` / :func:`driver` on top of it) has a
  stevedore ``DriverManager`` import exactly that entry point, never invoking it
  (``invoke_on_load=False``: squall constructs drivers itself, with the conf), so an unused
  plugin's heavy imports (grpc, pyspark) never happen. The loaded object is cached per
  ``(group, name)``: about 0.1 µs a call afterwards, measured (start-up work, never per tuple).
- **a whole group**: :func:`load_all` has a stevedore ``ExtensionManager`` import every entry
  point of a group (``squall.plugins``: the hook modules pluggy registers).

Errors: an unknown name raises :class:`PluginNotFoundError` with the available names and a
did-you-mean; an entry point whose import fails raises :class:`PluginLoadError` (stevedore's
``on_load_failure_callback`` raises it), naming the extra to install when a dependency is
missing; so does a loaded class whose ``squall_requires`` (the libraries it imports lazily)
names a module that is not installed. A broken plugin never looks like a missing one.

Why squall indexes entry points itself rather than through stevedore's cache: stevedore keeps a
group's entry points for the life of the process (``ExtensionManager.ENTRY_POINT_CACHE``) and
across processes in files under ``~/.cache/python-entrypoints``, keyed on ``sys.path`` and on
file modification times packed as 32-bit floats (128 s apart at today's dates). A plugin
installed at run time could stay invisible, to later processes too, for two minutes; and its
entry points carry no distribution for ``squall plugins`` to show. The managers below therefore
override ``list_entry_points``, the method stevedore's managers list a group through, to read
squall's index, which :func:`refresh` drops. (stevedore's ``verify_requirements`` is a
deprecated no-op since 5.0 and is not passed.)

Everything here runs at start-up or submit time, from any thread; it blocks only on imports.
"""
from __future__ import annotations

import difflib
import functools
import importlib
import importlib.util
import logging
from importlib import metadata
from typing import Any, NoReturn

from stevedore import DriverManager, ExtensionManager

from squall.errors import PluginLoadError, PluginNotFoundError

log = logging.getLogger(__name__)

__all__ = [
    "EXTRAS", "GROUPS", "OWN_DISTRIBUTION", "ROLES", "check", "did_you_mean", "driver",
    "driver_class", "entries", "entry_point", "install_hint", "load", "load_all",
    "missing_requirement", "names", "refresh", "shadowed", "validate_conf",
]

#: role -> (entry-point group, config key choosing the driver)
ROLES: dict[str, tuple[str, str]] = {
    "transport": ("squall.transports", "squall.transport"),
    "serializer": ("squall.serializers", "squall.serializer"),
    "scheduler": ("squall.schedulers", "squall.scheduler"),
    "acker": ("squall.ackers", "squall.acker"),
    "state": ("squall.state_stores", "squall.state"),
    "state_provider": ("squall.state_providers", "topology.state.provider"),
}
GROUPS = (
    "squall.transports", "squall.serializers", "squall.schedulers", "squall.ackers",
    "squall.state_stores", "squall.groupings", "squall.metrics_consumers", "squall.plugins",
    "squall.state_providers",
)
#: top-level module of a missing dependency -> the extra that installs it
EXTRAS = {"zmq": "zmq", "pynng": "nng", "grpc": "grpc", "google": "grpc", "kazoo": "zookeeper",
          "pyspark": "spark", "pyarrow": "spark", "pandas": "spark", "redis": "redis"}


# -- what is installed -------------------------------------------------------------------------
#: the distribution whose entry point wins a name several distributions provide
OWN_DISTRIBUTION = "squall"
#: ``(group, name, winner, shadowed)`` clashes warned of already (once per process)
_warned: set[tuple[str, str, str, str]] = set()


def _dist_name(ep: metadata.EntryPoint) -> str:
    return ep.dist.name if ep.dist is not None else "?"


def _precedence(ep: metadata.EntryPoint) -> tuple[bool, str]:
    """Sort key of the providers of one name: squall's own distribution first, then the others
    by distribution name (never importlib.metadata's arbitrary order)."""
    dist = _dist_name(ep)
    return (dist.lower() != OWN_DISTRIBUTION, dist.lower())


@functools.cache
def _providers(group: str) -> dict[str, list[metadata.EntryPoint]]:
    """``name -> every entry point of that name in ``group``, the winner first``, sorted by
    name. A name several distributions provide is warned of (one line, once per process)."""
    found: dict[str, list[metadata.EntryPoint]] = {}
    for ep in metadata.entry_points(group=group):
        found.setdefault(ep.name, []).append(ep)
    for name, eps in found.items():
        eps.sort(key=_precedence)
        for other in eps[1:]:
            clash = (group, name, _dist_name(eps[0]), _dist_name(other))
            if clash not in _warned:
                _warned.add(clash)
                log.warning("%s %r is provided by both %s and %s: %s's is used, %s's is "
                            "ignored (shadowed)", group, name, clash[2], clash[3], clash[2],
                            clash[3])
    return dict(sorted(found.items()))


def _index(group: str) -> dict[str, metadata.EntryPoint]:
    """``name -> entry point`` of ``group``, sorted by name: the winner of each name
    (:func:`_precedence`)."""
    return {name: eps[0] for name, eps in _providers(group).items()}


def refresh() -> None:
    """Forget what was indexed and loaded, after a plugin was installed or removed at run time.

    Modules already imported stay imported; the next lookup reads the installed entry points
    again (``importlib``'s path and metadata caches are invalidated too).
    """
    importlib.invalidate_caches()
    _providers.cache_clear()
    _load.cache_clear()


def names(group: str) -> list[str]:
    """The entry-point names of ``group``, sorted (nothing is imported)."""
    return list(_index(group))


def entries(group: str) -> list[tuple[str, str]]:
    """``(name, "distribution version")`` for every entry point of ``group``, sorted by name."""
    return [(name, _describe(ep)) for name, ep in _index(group).items()]


def _describe(ep: metadata.EntryPoint) -> str:
    dist = ep.dist
    return f"{dist.name} {dist.version}" if dist is not None else "?"


def shadowed(group: str) -> list[tuple[str, str, str]]:
    """``(name, "distribution version", winner's distribution)`` for every entry point of
    ``group`` another distribution's entry point of the same name overrides, sorted by name."""
    return [(name, _describe(ep), _dist_name(eps[0]))
            for name, eps in _providers(group).items() for ep in eps[1:]]


def entry_point(group: str, name: str) -> metadata.EntryPoint | None:
    """The entry point ``name`` of ``group`` squall uses (None: not installed); no import."""
    return _index(group).get(name)


def did_you_mean(name: str, candidates: list[str]) -> str | None:
    """The candidate closest to a mistyped ``name``, if any is close."""
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    return close[0] if close else None


def check(group: str, name: str) -> None:
    """Raise PluginNotFoundError unless ``name`` is an entry point of ``group`` (no import)."""
    available = names(group)
    if name not in available:
        raise PluginNotFoundError(group, name, available, did_you_mean(str(name), available))


def validate_conf(conf: dict[str, Any]) -> None:
    """Check every driver name in ``conf`` exists (without importing any driver)."""
    for group, key in ROLES.values():
        if key in conf and conf[key] is not None:
            check(group, str(conf[key]))
    for entry in conf.get("topology.metrics.consumer.register") or []:
        cls = entry.get("class") if isinstance(entry, dict) else entry
        check("squall.metrics_consumers", str(cls))


# -- loading, through stevedore ----------------------------------------------------------------
class _Driver(DriverManager[Any]):
    """stevedore's DriverManager listing entry points from squall's index (see the module
    docstring): it imports the one entry point named, nothing else."""

    def list_entry_points(self) -> list[metadata.EntryPoint]:
        return list(_index(self.namespace).values())


class _Extensions(ExtensionManager[Any]):
    """stevedore's ExtensionManager listing entry points from squall's index: it imports every
    entry point of the group, in name order."""

    def list_entry_points(self) -> list[metadata.EntryPoint]:
        return list(_index(self.namespace).values())


def install_hint(module: str) -> str:
    """``"; install it with: pip install 'squall[EXTRA]'"`` for a missing ``module`` one of
    squall's extras installs (:data:`EXTRAS`), else ``""``."""
    extra = EXTRAS.get(module.split(".")[0])
    return f"; install it with: pip install 'squall[{extra}]'" if extra else ""


def _load_error(group: str, name: str, exc: BaseException) -> PluginLoadError:
    """The PluginLoadError for an entry point whose import raised ``exc``."""
    if isinstance(exc, ImportError):
        how = install_hint(exc.name or "")
        return PluginLoadError(f"{group} {name!r} could not be loaded: {exc}{how}")
    # a broken plugin must not look like a missing one
    return PluginLoadError(f"{group} {name!r} failed to load: {exc!r}")


def _failed(manager: ExtensionManager[Any], ep: metadata.EntryPoint,
            exc: BaseException) -> NoReturn:
    """stevedore's ``on_load_failure_callback``: raise the PluginLoadError (stevedore calls it
    inside its ``except``; the import's exception is chained as the cause)."""
    raise _load_error(manager.namespace, ep.name, exc) from exc


def missing_requirement(obj: Any) -> str | None:
    """The first module of ``obj``'s ``squall_requires`` (the libraries a plugin class
    imports lazily) that is not installed, or None; found without importing it."""
    for module in getattr(obj, "squall_requires", ()) or ():
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):   # a dotted name whose parent is missing
            found = False
        if not found:
            return str(module)
    return None


@functools.cache
def _load(group: str, name: str) -> Any:
    check(group, name)
    try:
        manager = _Driver(group, name, invoke_on_load=False, on_load_failure_callback=_failed)
    except AssertionError as exc:   # stevedore re-raises these instead of calling _failed
        raise _load_error(group, name, exc) from exc
    missing = missing_requirement(manager.driver)
    if missing is not None:     # as if its import had failed: refused when it is chosen
        absent = ModuleNotFoundError(f"No module named {missing!r}", name=missing)
        raise _load_error(group, name, absent) from absent
    return manager.driver


def load(group: str, name: str) -> Any:
    """Return the object an entry point names (a class, or a module for ``squall.plugins``),
    importing it on the first call only.

    Raises PluginNotFoundError (no such name in ``group``) or PluginLoadError (its import
    failed, or a module its ``squall_requires`` lists is not installed).
    """
    return _load(group, name)


def load_all(group: str) -> list[tuple[str, Any]]:
    """``(name, object)`` for every entry point of ``group``, in name order, each imported.

    Raises PluginLoadError naming the first entry point whose import fails: a configured
    plugin's failure is never skipped.
    """
    if not _index(group):
        return []
    try:
        manager = _Extensions(group, invoke_on_load=False, on_load_failure_callback=_failed)
    except AssertionError as exc:   # stevedore re-raises these instead of calling _failed
        raise PluginLoadError(f"{group}: a plugin failed to load: {exc!r}") from exc
    return [(ext.name, ext.plugin) for ext in manager.extensions]


def driver_class(role: str, conf: dict[str, Any]) -> Any:
    """The class of the configured driver for ``role`` (``transport``, ``acker``, ...)."""
    group, key = ROLES[role]
    return load(group, str(conf.get(key)))


def driver(role: str, conf: dict[str, Any], *args: Any) -> Any:
    """Instantiate the configured driver for ``role`` with ``conf`` (and ``args``)."""
    return driver_class(role, conf)(conf, *args)
