"""Running a benchmark's subprocesses on another checkout's ``core/`` and ``plugins/``."""
from __future__ import annotations

import contextlib
import os
import tempfile
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
            paths.insert(0, str(shim))
        env["PYTHONPATH"] = os.pathsep.join(paths)
        try:
            yield env
        finally:
            if made is not None:
                made.unlink()
