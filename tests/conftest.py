"""How the suite spreads over pytest-xdist's processes (``./dev test`` runs it with
``-n 3 --dist loadfile``).

Each test file is one unit of work, run by one process from start to end: a module's fixtures
are made once, and tests that look at the machine as a whole (the processes running a script,
a network namespace's subnet) never overlap a test of their own file. The Spark integration
tests are one unit, so the suite starts one Spark session, not one per process."""
from __future__ import annotations

from typing import Any

import pytest

SPARK = "tests/integration/spark/"


@pytest.hookimpl(optionalhook=True)      # pytest-xdist's hook: pytest without it runs on
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class FileScheduling(LoadFileScheduling):
        """``loadfile``, with the Spark integration tests' files one unit."""

        def _split_scope(self, nodeid: str) -> str:
            return SPARK if nodeid.startswith(SPARK) else super()._split_scope(nodeid)

    return FileScheduling(config, log)
