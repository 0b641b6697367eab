"""What ``squall plugins`` and the CLI's error line say about missing optional dependencies.

An entry point is unavailable when importing it fails: :func:`unavailable_reason` names the
missing module and the extra that installs it. A plugin class whose module imports its library
lazily may list the top-level modules it needs in ``squall_requires`` (checked without
importing them).
"""
from __future__ import annotations

import importlib.util

from squall import drivers

#: the extra of the cluster daemons and commands (kazoo, grpc, zmq)
CLUSTER_MODULES = {"kazoo": "cluster", "grpc": "cluster", "google": "cluster",
                   "zmq": "cluster"}


def missing_extra(exc: ModuleNotFoundError) -> str | None:
    """The extra that installs the module ``exc`` names (None: not one of squall's)."""
    top = (exc.name or "").split(".")[0]
    return CLUSTER_MODULES.get(top) or drivers.EXTRAS.get(top)


def unavailable_reason(group: str, name: str) -> str | None:
    """Why the entry point ``name`` of ``group`` cannot be used, or None when it loads.
    Imports the entry point's module (not a missing library)."""
    ep = drivers.entry_point(group, name)
    if ep is None:
        return "not installed"
    try:
        obj = ep.load()
    except ImportError as exc:
        return _needs(exc.name or "")
    except Exception as exc:  # a broken plugin: say so, the listing goes on
        return f"fails to load: {exc!r}"
    for module in getattr(obj, "squall_requires", ()) or ():
        if importlib.util.find_spec(module) is None:
            return _needs(module)
    return None


def _needs(module: str) -> str:
    top = module.split(".")[0]
    extra = drivers.EXTRAS.get(top)
    how = f": pip install 'squall[{extra}]'" if extra else ""
    return f"needs the {top!r} module{how}"
