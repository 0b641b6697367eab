"""The pluggy plugin manager, built once per process from the ``squall.plugins`` group.

Every module of the group (squall's own :mod:`squall.builtin_hooks` and each plugin's hook
module) is imported through :func:`squall.drivers.load_all`, registered under its entry-point
name and validated against :mod:`squall.hookspecs` at once (``check_pending``, as pytest does):
a misspelt hook or an argument no spec has fails when the plugins load, not when the hook is
first called.
"""
from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from typing import Any

import pluggy

from squall import drivers, hookspecs
from squall.errors import PluginLoadError, SquallError

log = logging.getLogger("squall.plugins")

__all__ = ["build_plugin_manager", "get_plugin_manager"]

GROUP = "squall.plugins"


def build_plugin_manager() -> pluggy.PluginManager:
    """A new plugin manager with every ``squall.plugins`` module registered and validated.

    Raises PluginLoadError when a module cannot be imported or does not match the hookspecs.
    """
    pm = pluggy.PluginManager("squall")
    pm.add_hookspecs(hookspecs)
    for name, module in drivers.load_all(GROUP):
        try:
            pm.register(module, name=name)
            pm.check_pending()
        except (pluggy.PluginValidationError, ValueError) as exc:
            why = " ".join(str(exc).split())   # pluggy's message spans lines: one line
            raise PluginLoadError(f"{GROUP} {name!r} does not match squall's hookspecs: "
                                  f"{why}") from exc
    return pm


@functools.lru_cache(maxsize=1)
def get_plugin_manager() -> pluggy.PluginManager:
    """This process's plugin manager (:func:`build_plugin_manager`, on the first call)."""
    return build_plugin_manager()


def _call_checked(hook_name: str, **kwargs: Any) -> None:
    """Call every implementation of ``hook_name``: a SquallError is what the hook means (a
    refusal) and propagates; another exception is a plugin's bug, one line naming it."""
    caller = getattr(get_plugin_manager().hook, hook_name)
    try:
        caller(**kwargs)
    except SquallError:
        raise
    except Exception as exc:        # a plugin's bug: one line naming it
        raise PluginLoadError(f"plugin {_culprit(caller, exc)!r} failed in {hook_name}: "
                              f"{exc!r}") from exc


def configure(conf: dict[str, Any]) -> dict[str, Any]:
    """Run every ``squall_configure`` hook on ``conf`` (which they may change in place) and
    return it. Called once by each process that runs topologies, when its configuration is
    final (see :func:`squall.hookspecs.squall_configure` for where); a hook's SquallError
    propagates and stops the start."""
    _call_checked("squall_configure", conf=conf)
    return conf


def worker_starting(topology_id: str, port: Any, conf: dict[str, Any]) -> None:
    """Run every ``squall_worker_start`` hook (a worker built, its loop not started): what
    one raises stops that worker's start, a plugin's bug as one line naming it."""
    _call_checked("squall_worker_start", topology_id=topology_id, port=port, conf=conf)


def validate_config(conf: Mapping[str, Any]) -> None:
    """Run every ``squall_validate_config`` hook: a ConfigError (any SquallError) is the
    refusal it means; another exception is a plugin's bug, one line naming it."""
    _call_checked("squall_validate_config", conf=conf)


def validate_topology(topology: Any, conf: dict[str, Any]) -> None:
    """Run every ``squall_validate_topology`` hook: a TopologyError (any SquallError) is the
    refusal it means; another exception is a plugin's bug, one line naming it."""
    _call_checked("squall_validate_topology", topology=topology, conf=conf)


def notify(hook_name: str, **kwargs: Any) -> None:
    """Call every implementation of the notification hook ``hook_name`` (a topology submitted
    or killed, a worker started or stopping), in pluggy's order; one that raises is logged,
    one line naming its plugin, and the others are still called, so a plugin's bug never
    stops what it is told about halfway."""
    hook = getattr(get_plugin_manager().hook, hook_name)
    for impl in reversed(hook.get_hookimpls()):
        try:
            impl.function(*(kwargs[name] for name in impl.argnames))
        except Exception as exc:
            log.error("plugin %r failed in %s: %s", impl.plugin_name, hook_name,
                      f"{type(exc).__name__}: {exc}"[:300])


def _culprit(hook: Any, exc: BaseException) -> str:
    """The plugin whose implementation of ``hook`` raised ``exc`` (by its traceback)."""
    owners = {impl.function.__code__: impl.plugin_name for impl in hook.get_hookimpls()}
    tb = exc.__traceback__
    while tb is not None:
        owner = owners.get(tb.tb_frame.f_code)
        if owner is not None:
            return owner
        tb = tb.tb_next
    return "unknown"
