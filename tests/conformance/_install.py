"""Install a small test distribution into the running venv for the length of a fixture.

Conformance tests use it to prove that a third-party plugin registered through an entry point
is found like a built-in one. The source directory is copied first, so the build leaves no
``build/`` or ``*.egg-info`` behind in the repository; the distribution is uninstalled after.
"""
from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from squall import drivers


def _pip(*args: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "pip", *args, "-q", "--disable-pip-version-check"],
                          capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"pip {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")


@contextmanager
def installed_distribution(source: Path, workdir: Path, dist_name: str) -> Iterator[None]:
    """Install the project in ``source`` (a directory with a pyproject.toml) for the duration
    of the ``with`` block, then uninstall ``dist_name``. Entry points are refreshed both ways."""
    build_dir = workdir / source.name
    shutil.copytree(source, build_dir, ignore=shutil.ignore_patterns(
        "build", "*.egg-info", "__pycache__"))
    _pip("install", "--no-deps", "--no-build-isolation", str(build_dir))
    importlib.invalidate_caches()
    drivers.refresh()
    try:
        yield
    finally:
        _pip("uninstall", "-y", dist_name)
        importlib.invalidate_caches()
        drivers.refresh()
