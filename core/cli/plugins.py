"""What ``squall plugins`` and the CLI's error line say about missing optional dependencies.

An entry point is unavailable when importing it fails: :func:`unavailable_reason` names the
missing module and the extra that installs it. A plugin class whose module imports its library
lazily may list the top-level modules it needs in ``squall_requires`` (checked without
importing them).
"""
from __future__ import annotations

from squall import drivers

#: top-level module a command needs -> the extra that installs it (pyproject.toml): the
#: cluster daemons' and commands' (kazoo, grpc, zmq; starlette and uvicorn for ``squall ui``)
#: and the TLS certificates' (cryptography); the plugins' are ``drivers.EXTRAS``
COMMAND_EXTRAS = {"kazoo": "cluster", "grpc": "cluster", "google": "cluster",
                  "zmq": "cluster", "starlette": "cluster", "uvicorn": "cluster",
                  "cryptography": "security"}


def missing_extra(exc: ModuleNotFoundError) -> str | None:
    """The extra that installs the module ``exc`` names (None: not one of squall's)."""
    top = (exc.name or "").split(".")[0]
    return COMMAND_EXTRAS.get(top) or drivers.EXTRAS.get(top)


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
    missing = drivers.missing_requirement(obj)
    return None if missing is None else _needs(missing)


def _needs(module: str) -> str:
    top = module.split(".")[0]
    extra = drivers.EXTRAS.get(top)
    how = f": pip install 'squall[{extra}]'" if extra else ""
    return f"needs the {top!r} module{how}"
