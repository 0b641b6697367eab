"""Running a benchmark's subprocesses on another checkout's ``core/`` and ``plugins/``."""
from __future__ import annotations

import contextlib
import os
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def tree_env(tree: Path | None, **extra: str) -> Iterator[dict[str, str]]:
    """An environment whose ``import squall`` finds ``tree``'s ``core/`` (and
    ``squall.plugins`` its ``plugins/``) ahead of the installed package, with the benchmarks
    on the path; with ``tree`` None, this checkout's. The link that makes ``plugins/`` a
    sub-package is removed on exit, so the tree stays clean."""
    env = dict(os.environ, **extra)
    paths = [str(ROOT)]
    made: Path | None = None
    with tempfile.TemporaryDirectory(prefix="squall-tree-") as tmp:
        if tree is not None:
            tree = tree.resolve()
            shim = Path(tmp) / "shim"
            shim.mkdir()
            (shim / "squall").symlink_to(tree / "core")      # `import squall` -> tree's core/
            plugins = tree / "core" / "plugins"
            if not plugins.exists():
                plugins.symlink_to(tree / "plugins")
                made = plugins
            _entry_points(tree, shim)
            (shim / "sitecustomize.py").write_text(_HIDE_INSTALLED, encoding="utf-8")
            paths.insert(0, str(shim))
        env["PYTHONPATH"] = os.pathsep.join(paths)
        try:
            yield env
        finally:
            if made is not None:
                made.unlink(missing_ok=True)


#: run at start-up from the shim path: the installed squall's distribution is not listed, so
#: its entry points (modules of this checkout) never mix with the measured tree's
_HIDE_INSTALLED = """\
import importlib.metadata as _metadata

_all = _metadata.distributions


def _without_installed(**kwargs):
    return (d for d in _all(**kwargs) if d.metadata["Name"] != "squall")


_metadata.distributions = _without_installed
"""


def _entry_points(tree: Path, shim: Path) -> None:
    """Declare ``tree``'s own entry points in a distribution on the shim path, found before
    the installed squall's: its drivers and plugins load from its own modules, wherever
    this checkout has moved them."""
    project = tomllib.loads((tree / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    dist = shim / "squall_tree-0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: squall-tree\nVersion: 0\n",
                                   encoding="utf-8")
    lines = []
    for group, points in project.get("entry-points", {}).items():
        lines.append(f"[{group}]")
        lines.extend(f"{name} = {target}" for name, target in points.items())
        lines.append("")
    (dist / "entry_points.txt").write_text("\n".join(lines), encoding="utf-8")
