"""The pluggy plugin manager, built once per process from the ``squall.plugins`` group.

Every module of the group (squall's own :mod:`squall.builtin_hooks` and each plugin's hook
module) is imported through :func:`squall.drivers.load_all`, registered under its entry-point
name and validated against :mod:`squall.hookspecs` at once (``check_pending``, as pytest does):
a misspelt hook or an argument no spec has fails when the plugins load, not when the hook is
first called.
"""
from __future__ import annotations

import functools
from typing import Any

import pluggy

from squall import drivers, hookspecs
from squall.errors import PluginLoadError

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
            raise PluginLoadError(f"{GROUP} {name!r} does not match squall's hookspecs: "
                                  f"{exc}") from exc
    return pm


@functools.lru_cache(maxsize=1)
def get_plugin_manager() -> pluggy.PluginManager:
    """This process's plugin manager (:func:`build_plugin_manager`, on the first call)."""
    return build_plugin_manager()


def configure(conf: dict[str, Any]) -> dict[str, Any]:
    """Run every ``squall_configure`` hook on ``conf`` (which they may change in place) and
    return it. Called once by each process that runs topologies, when its configuration is
    final (see :func:`squall.hookspecs.squall_configure` for where); a hook's SquallError
    propagates and stops the start."""
    get_plugin_manager().hook.squall_configure(conf=conf)
    return conf
