"""worker.gc.thresholds: set where executors run, put back when a LocalCluster stops."""
from __future__ import annotations

import gc

import pytest

from squall import ConfigError, LocalCluster
from squall.config import defaults, validate
from squall.runtime import gc_tuning


def test_default_is_set_while_a_local_cluster_runs_and_restored_after() -> None:
    before = gc.get_threshold()
    assert tuple(defaults()["worker.gc.thresholds"]) != before
    with LocalCluster():
        assert gc.get_threshold() == tuple(defaults()["worker.gc.thresholds"])
    assert gc.get_threshold() == before


def test_configured_thresholds_are_used() -> None:
    before = gc.get_threshold()
    with LocalCluster({"worker.gc.thresholds": [1234, 5, 6]}):
        assert gc.get_threshold() == (1234, 5, 6)
    assert gc.get_threshold() == before


@pytest.mark.parametrize("bad", [[1, 2], [1, 2, -3], ["a", 1, 1], [True, 1, 1], 700])
def test_bad_thresholds_are_one_config_error(bad: object) -> None:
    before = gc.get_threshold()
    with pytest.raises(ConfigError, match="worker.gc.thresholds"):
        validate({**defaults(), "worker.gc.thresholds": bad}, warn=False)
    with pytest.raises(ConfigError, match="worker.gc.thresholds"):
        gc_tuning.apply({"worker.gc.thresholds": bad})
    with pytest.raises(ConfigError, match="worker.gc.thresholds"):
        LocalCluster({"worker.gc.thresholds": bad})
    assert gc.get_threshold() == before
