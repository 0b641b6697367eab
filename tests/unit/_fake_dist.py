"""A throw-away distribution with entry points, on ``sys.path`` for the length of a ``with``.

It is a directory holding ``NAME-0.1.dist-info`` (``METADATA`` and ``entry_points.txt``) and
the modules the entry points name: what pip would leave behind, without running pip, so unit
tests can add plugins (broken ones included) at run time. :func:`squall.drivers.refresh` is
called on the way in and out.
"""
from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from squall import drivers


@contextmanager
def fake_distribution(root: Path, name: str, entry_points: Mapping[str, Mapping[str, str]],
                      modules: Mapping[str, str] | None = None) -> Iterator[Path]:
    """Install ``name`` under ``root``: ``entry_points`` is group -> {entry name: target},
    ``modules`` is module name -> source. Yields ``root``."""
    modules = modules or {}
    info = root / f"{name.replace('-', '_')}-0.1.dist-info"   # as pip names it (PEP 427)
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    lines = []
    for group, entries in entry_points.items():
        lines.append(f"[{group}]")
        lines.extend(f"{entry} = {target}" for entry, target in entries.items())
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    for module, source in modules.items():
        (root / f"{module}.py").write_text(source)
    sys.path.insert(0, str(root))
    drivers.refresh()
    try:
        yield root
    finally:
        sys.path.remove(str(root))
        for module in modules:
            sys.modules.pop(module, None)
        drivers.refresh()
