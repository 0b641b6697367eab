"""What squall imports before a code package goes on ``sys.path``, and the package modules
that would stand in for squall's own libraries.

A worker (and nimbus's check at submit, :mod:`squall.daemon.validate`) puts the code package
first on ``sys.path``: a module at its root named like a module squall imports would be what
squall gets, if squall imported it after that. So :func:`import_squall_first` imports squall's
plugins, the drivers the conf chooses, and any library of squall's (:func:`squall_libraries`)
that the package would shadow, before the path changes: squall's own imports keep getting
the installed modules, in nimbus's check and each worker alike. :func:`library_shadows` lists
the package modules concerned, which ``squall submit`` warns of (a worker's imports of such a
name get squall's library, not the package's module). A module named like a standard-library
one is refused instead (:func:`squall.api.target.check_no_stdlib_shadow`).

Runs at submit and at a worker's start, on the caller's thread; blocks on imports only.
"""
from __future__ import annotations

import importlib
import importlib.machinery
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from squall.api.target import top_level_modules
from squall.errors import SquallError

log = logging.getLogger(__name__)

__all__ = ["import_squall_first", "library_shadows", "squall_libraries", "warn_of_library_shadows"]

#: top-level modules squall imports besides those naming an extra (``drivers.EXTRAS``): its
#: dependencies and the libraries of its UI and security
_OWN_LIBRARIES = ("pluggy", "stevedore", "yaml", "msgpack", "cryptography", "starlette",
                  "uvicorn", "py4j")


def squall_libraries() -> frozenset[str]:
    """The top-level names of the third-party libraries squall imports (its dependencies and
    those of its extras: ``kazoo``, ``zmq``, ``redis``..., many only when first used)."""
    from squall import drivers
    return frozenset({*drivers.EXTRAS, *_OWN_LIBRARIES})


def _installed(name: str, away_from: Path) -> str | None:
    """Where the module ``name`` is found on ``sys.path`` without ``away_from``; None when it
    is not (or only there)."""
    away = os.path.realpath(away_from)
    path = [p for p in sys.path if isinstance(p, str) and os.path.realpath(p or ".") != away]
    try:
        spec = importlib.machinery.PathFinder.find_spec(name, path)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    return spec.origin or ", ".join(spec.submodule_search_locations or ()) or name


def library_shadows(folder: Path) -> list[tuple[str, str, str]]:
    """``(entry, module, where installed)`` for each module at the root of ``folder`` named
    like one of :func:`squall_libraries` that is installed elsewhere. Reads the folder's
    listing and looks those names up on ``sys.path``; imports nothing."""
    libraries = squall_libraries()
    out = []
    for module, entry in top_level_modules(folder).items():
        if module in libraries:
            where = _installed(module, folder)
            if where is not None:
                out.append((entry, module, where))
    return out


def warn_of_library_shadows(folder: Path, where: str | None = None) -> None:
    """Log one warning line for each of :func:`library_shadows` of ``folder`` (shown as
    ``where``, default the folder)."""
    for entry, module, installed in library_shadows(folder):
        log.warning("%s in %s has the name of the library %r that squall uses (installed: %s): "
                    "on a cluster squall's imports and the topology's alike get that library, "
                    "not this module; rename it unless it is a copy of that library", entry,
                    where or folder, module, installed)


def import_squall_first(conf: Mapping[str, Any], code: Path) -> None:
    """Import squall's plugins (the ``squall.plugins`` group), the driver of each role that
    ``conf`` over the defaults chooses, and the installed libraries of squall's that modules
    at the root of the code package ``code`` are named like (:func:`library_shadows`): call
    it before ``code`` goes on ``sys.path``. A plugin that fails raises PluginLoadError; a
    driver or library that fails is left for whoever uses it to report (a supervisor's own
    conf may choose another driver)."""
    from squall import config, drivers
    from squall.plugin_manager import get_plugin_manager
    get_plugin_manager()
    chosen = {**config.defaults(), **conf}
    for role in drivers.ROLES:
        try:
            drivers.driver_class(role, chosen)
        except SquallError as exc:
            log.debug("not importing the %s driver ahead of the code: %s", role, exc)
    for _entry, module, _where in library_shadows(code):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            log.debug("not importing %s ahead of the code: %s", module, exc)
