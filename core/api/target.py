"""Resolving a topology target, ``path/to/file.py:attr`` or ``package.module:attr``.

The one place that says what a target looks like: ``squall local`` runs what it names,
``squall submit`` (through :mod:`squall.daemon.packaging`) also ships the code around it.
:func:`split_target` splits it, :func:`is_file_path` tells a file from a dotted module,
:func:`load_module` imports the module part and :func:`load_target` returns the Topology (calling
the attribute first when it is a function). Runs on the caller's thread; blocks only on the
import. Every problem is one :class:`~squall.errors.TopologyError` line naming it.

A folder whose modules go first on ``sys.path`` must not hold a module named like one of the
standard library's (:func:`check_no_stdlib_shadow`): whichever of the two a process imports
first, squall's own imports included, is the one every later import gets, so such a project
works or breaks depending on import order. ``squall local``, ``squall submit``, nimbus's check
and each worker refuse it alike.
"""
from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from squall.api.topology import Topology
from squall.errors import SquallError, TopologyError


def split_target(target: str) -> tuple[str, str]:
    """``(module part, attribute)`` of ``target``; TopologyError when it has no ``:attr``."""
    path, sep, attr = target.rpartition(":")
    if not sep or not path or not attr:
        hint = f" (e.g. '{target}:topology')" if not sep and target else ""
        raise TopologyError(f"target {target!r} must look like path/to/file.py:attr or "
                            f"package.module:attr{hint}")
    return path, attr


def is_file_path(path: str) -> bool:
    """Whether a target's module part names a ``.py`` file rather than a dotted module."""
    return path.endswith(".py") or os.sep in path or "/" in path


def project_dirs(file: Path) -> list[Path]:
    """The folders besides a target file's own whose modules it imports: for a file in a
    streamparse project's ``topologies/``, the project's ``src/`` (where its ``bolts/`` and
    ``spouts/`` live; ``sparse`` puts it on the path the same way)."""
    folder = file.resolve().parent
    src = folder.parent / "src"
    return [src] if folder.name == "topologies" and src.is_dir() else []


#: the file endings of a module Python imports (``.py``, ``.cpython-311-x86_64-linux-gnu.so``...)
_MODULE_SUFFIXES = tuple(sorted({*importlib.machinery.SOURCE_SUFFIXES,
                                 *importlib.machinery.EXTENSION_SUFFIXES}, key=len, reverse=True))


def top_level_modules(folder: Path) -> dict[str, str]:
    """``{module name: entry name}`` of the modules and packages ``import`` finds in
    ``folder`` (``x.py``, an extension module, a directory with an ``__init__.py``; a
    directory without one does not hide a module found elsewhere, so it is not listed).
    Empty when ``folder`` cannot be read."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return {}
    found: dict[str, str] = {}
    for entry in entries:
        try:
            is_dir = entry.is_dir()
        except OSError:
            continue
        if is_dir:
            if any(os.path.isfile(os.path.join(entry.path, "__init__" + suffix))
                   for suffix in _MODULE_SUFFIXES):
                found.setdefault(entry.name, entry.name + "/")
            continue
        suffix = next((s for s in _MODULE_SUFFIXES if entry.name.endswith(s)), None)
        if suffix is not None and len(entry.name) > len(suffix):
            found.setdefault(entry.name[:-len(suffix)], entry.name)
    return found


def stdlib_shadow_error(entry: str, module: str) -> TopologyError:
    """The one-line refusal of ``entry`` (a file or folder, as the user should find it) named
    like the standard-library module ``module``."""
    return TopologyError(f"{entry} shadows the standard library module {module!r} (every "
                         f"import of {module!r} would get it, squall's own included); rename it")


def check_no_stdlib_shadow(folder: Path, where: str | None = None) -> None:
    """Raise TopologyError naming the first module of ``folder`` (:func:`top_level_modules`)
    named like a standard-library module (``sys.stdlib_module_names``), as found ``where``
    (default: in ``folder``). Call it before ``folder`` goes on ``sys.path``; it reads the
    folder's listing only."""
    for module, entry in top_level_modules(folder).items():
        if module in sys.stdlib_module_names:
            raise stdlib_shadow_error(f"{entry} in {where or folder}", module)


#: module name -> file of the topology files :func:`load_module` registered (the only
#: ``sys.modules`` entries it replaces: loading a file of the same name again)
_registered: dict[str, str] = {}


def _module_name_for(file: Path) -> str:
    """The ``sys.modules`` name a topology file is registered under: its stem, refused when
    that is a standard-library name or names a module this process imported from elsewhere
    (replacing it would break every user of that module, squall included)."""
    name = file.stem
    if name in sys.stdlib_module_names:
        raise stdlib_shadow_error(f"topology file {file.name}", name)
    existing = sys.modules.get(name)
    if existing is None:
        return name
    where = getattr(existing, "__file__", None)
    if where is not None and (where == _registered.get(name) or _same_file(where, file)):
        return name             # a topology file loaded before (again, or another of its name)
    raise TopologyError(f"topology file {file.name} has the name of the module {name!r} "
                        f"this process imported already ({where or 'built in'}); rename it")


def _same_file(a: str, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _in_package_hint(file: Path) -> str:
    """For a file inside a package (its folder has an ``__init__.py``): the dotted target that
    imports it as part of that package; else ``""``."""
    parts = [file.stem]
    folder = file.resolve().parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    if len(parts) == 1:
        return ""
    return f"; it is part of the package {parts[0]!r}: run from {folder} with the target " \
           f"{'.'.join(parts)}:ATTR"


def load_module(path: str) -> Any:
    """Import a ``.py`` file (its directory goes first on sys.path, then its
    :func:`project_dirs`) or a dotted module (the working directory goes on sys.path);
    TopologyError naming what went wrong."""
    hint = ""
    if is_file_path(path):
        file = Path(path)
        if not file.is_file():
            raise TopologyError(f"no such file: {path}")
        name = _module_name_for(file)
        folders = [file.resolve().parent, *project_dirs(file)]
        for folder in folders:
            check_no_stdlib_shadow(folder)
        for extra in reversed(folders):
            if str(extra) not in sys.path:
                sys.path.insert(0, str(extra))
        spec = importlib.util.spec_from_file_location(name, file)
        if spec is None or spec.loader is None:
            raise TopologyError(f"cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        _registered[name] = str(module.__file__)
        loader = spec.loader
        hint = _in_package_hint(file)

        def runner() -> Any:
            loader.exec_module(module)
            return module
    else:
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())

        def runner() -> Any:
            return importlib.import_module(path)
    try:
        return runner()
    except SyntaxError as exc:
        raise TopologyError(f"syntax error in {exc.filename}, line {exc.lineno}: "
                            f"{exc.msg}") from exc
    except ModuleNotFoundError as exc:
        raise TopologyError(f"cannot import {path}: no module named {exc.name!r}") from exc
    except SquallError:
        raise
    except Exception as exc:
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        if not (isinstance(exc, ImportError) and "relative import" in str(exc)):
            hint = ""
        raise TopologyError(f"importing {path} raised {type(exc).__name__}: {exc} "
                            f"({frame.filename}, line {frame.lineno}){hint}") from exc


def load_target(target: str, conf: Mapping[str, Any] | None = None) -> Topology:
    """The Topology a target names (calling it first if it is a function). ``conf``, the
    configuration it is loaded for, is what its ``create_topology()`` without a conf checks
    windowed bolts against (:data:`squall.api.builder.LOADING_CONF`)."""
    from squall.api.builder import LOADING_CONF
    token = LOADING_CONF.set(conf)
    try:
        return _load(target)
    finally:
        LOADING_CONF.reset(token)


def _load(target: str) -> Topology:
    path, attr = split_target(target)
    module = load_module(path)
    if not hasattr(module, attr):
        raise TopologyError(f"{path} has no attribute {attr!r}")
    obj = getattr(module, attr)
    from squall.multilang.streamparse import from_streamparse, is_streamparse_topology
    if is_streamparse_topology(obj):
        return from_streamparse(obj)
    if callable(obj) and not isinstance(obj, Topology):
        try:
            obj = obj()
        except SquallError:
            raise
        except Exception as exc:
            raise TopologyError(f"{target}() raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(obj, Topology):
        raise TopologyError(f"{target} is a {type(obj).__name__}, not a topology "
                            "(use TopologyBuilder().create_topology())")
    return obj
