"""The pluggy plugin manager, loaded once per process from ``squall.plugins``."""
from __future__ import annotations

import functools

import pluggy

from squall import drivers, hookspecs


@functools.lru_cache(maxsize=1)
def get_plugin_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager("squall")
    pm.add_hookspecs(hookspecs)
    for name in drivers.names("squall.plugins"):
        module = drivers.load("squall.plugins", name)
        pm.register(module, name=name)
        pm.check_pending()   # validate implementations when registered, not when first called
    return pm
