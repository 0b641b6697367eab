"""Resolving a topology target, ``path/to/file.py:attr`` or ``package.module:attr``.

The one place that says what a target looks like: ``squall local`` runs what it names,
``squall submit`` (through :mod:`squall.daemon.packaging`) also ships the code around it.
:func:`split_target` splits it, :func:`is_file_path` tells a file from a dotted module,
:func:`load_module` imports the module part and :func:`load_target` returns the Topology (calling
the attribute first when it is a function). Runs on the caller's thread; blocks only on the
import. Every problem is one :class:`~squall.errors.TopologyError` line naming it.
"""
from __future__ import annotations

import importlib
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


def load_module(path: str) -> Any:
    """Import a ``.py`` file (its directory goes first on sys.path, then its
    :func:`project_dirs`) or a dotted module (the working directory goes on sys.path);
    TopologyError naming what went wrong."""
    if is_file_path(path):
        file = Path(path)
        if not file.is_file():
            raise TopologyError(f"no such file: {path}")
        for extra in reversed(project_dirs(file)):
            if str(extra) not in sys.path:
                sys.path.insert(0, str(extra))
        folder = str(file.resolve().parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        name = file.stem
        spec = importlib.util.spec_from_file_location(name, file)
        if spec is None or spec.loader is None:
            raise TopologyError(f"cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        loader = spec.loader

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
        raise TopologyError(f"importing {path} raised {type(exc).__name__}: {exc} "
                            f"({frame.filename}, line {frame.lineno})") from exc


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
    obj = getattr(module, attr, None)
    if obj is None:
        raise TopologyError(f"{path} has no attribute {attr!r}")
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
