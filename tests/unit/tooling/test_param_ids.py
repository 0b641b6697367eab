"""``squall.testing.param_id``: the ids pytest-xdist's processes must agree on."""
from __future__ import annotations

import doctest
import os
import subprocess
import sys

from squall.testing import ids

VALUES = "({'alpha', 'beta', 'gamma', 'delta', 7}, (frozenset({'x', 'y', b'z'}),), {'k': {'u', 'v'}})"


def _written(seed: int, how: str) -> str:
    code = f"from squall.testing import param_id; print({how}({VALUES}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": str(seed)})
    return out.stdout.strip()


def test_doctests() -> None:
    assert doctest.testmod(ids).failed == 0


def test_the_id_of_values_holding_sets_is_the_same_under_every_hash_seed() -> None:
    assert len({_written(seed, "repr") for seed in range(8)}) > 1     # what pytest would write
    written = {_written(seed, "param_id") for seed in range(8)}
    assert written == {"({'alpha', 'beta', 'delta', 'gamma', 7}, (frozenset({'x', 'y', b'z'}),), "
                       "{'k': {'u', 'v'}})"}
