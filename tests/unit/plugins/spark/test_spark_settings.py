"""The SparkSpout's own keys are refused where squall validates a conf (``squall submit``,
nimbus, LocalCluster), with the rules the spout applies at ``initialize``, and without Spark."""
from __future__ import annotations

import subprocess
import sys

import pytest

from squall import ConfigError, TopologyError, config
from squall.plugins.spark.fetch import RetryPolicy, retry_policy

BAD = [
    ("spark.spout.emit.batch", 0, "spark.spout.emit.batch must be a positive integer, got 0"),
    ("spark.spout.progress.interval.secs", -1,
     "spark.spout.progress.interval.secs must be a positive number, got -1"),
    ("spark.source.retry.report.after", 0,
     "spark.source.retry.report.after must be a positive integer, got 0"),
    ("spark.source.retry.backoff.min.secs", -1,
     r"spark.source.retry.backoff.min.secs must be a number of seconds >= 0, got -1"),
    ("spark.spout.fetch", "bogus", "spark.spout.fetch must be 'auto' or 'filter', got 'bogus'"),
    ("spark.spout.progress.id", 3, "spark.spout.progress.id must be a string, got 3"),
]


@pytest.mark.parametrize("key,value,message", BAD)
def test_a_spark_spout_setting_it_cannot_use_is_refused_at_submit(key: str, value: object,
                                                                  message: str) -> None:
    # they passed every submit-time check; each spout task refused them after Spark started
    with pytest.raises(ConfigError, match=rf"^{message}$"):
        config.validate({**config.defaults(), key: value}, warn=False)
    with pytest.raises(ConfigError, match=rf"^{message}$"):
        config.validate({key: value}, warn=False)            # a topology's own conf
    with pytest.raises(ConfigError, match=rf"^component 'rows': {message}$"):
        config.validate_component("rows", {key: value}, warn=False)


def test_the_retry_backoffs_are_checked_together_where_both_are_known() -> None:
    both = {"spark.source.retry.backoff.min.secs": 9, "spark.source.retry.backoff.max.secs": 2}
    with pytest.raises(ConfigError, match=r"min.secs \(9\) is above .*max.secs \(2\)"):
        config.validate(both, warn=False)
    with pytest.raises(ConfigError, match="is above"):
        config.validate({**config.defaults(), "spark.source.retry.backoff.min.secs": 40},
                        warn=False)
    # a component's own config may hold one: the topology's conf may hold the other
    config.validate_component("rows", {"spark.source.retry.backoff.min.secs": 40}, warn=False)


def test_good_settings_pass() -> None:
    good = {"spark.spout.emit.batch": 1, "spark.spout.progress.interval.secs": 0.5,
            "spark.source.retry.report.after": 1, "spark.source.retry.backoff.min.secs": 0,
            "spark.spout.fetch": "filter", "spark.spout.progress.id": "load/rows",
            "spark.spout.progress": False}
    config.validate({**config.defaults(), **good}, warn=False)
    assert config.validate_component("rows", good, warn=False) == []


def test_the_spout_applies_the_same_rules_at_run_time() -> None:
    assert retry_policy({}) == RetryPolicy(0.5, 30.0, 5)
    with pytest.raises(TopologyError, match=r"^spout 'rows': spark.source.retry.report.after "
                                            r"must be a positive integer, got 0$"):
        retry_policy({"spark.source.retry.report.after": 0}, "spout 'rows'")
    with pytest.raises(TopologyError, match="is above"):     # against the default max
        retry_policy({"spark.source.retry.backoff.min.secs": 40})


def test_validating_spark_keys_does_not_import_spark() -> None:
    code = ("import sys\n"
            "from squall import config\n"
            "config.validate({**config.defaults(), 'spark.spout.emit.batch': 7}, warn=False)\n"
            "config.validate_component('rows', {'spark.spout.fetch': 'filter'}, warn=False)\n"
            "heavy = [m for m in sys.modules if m.split('.')[0] in ('pyspark', 'pyarrow', "
            "'pandas', 'py4j')]\n"
            "assert not heavy, heavy\n")
    subprocess.run([sys.executable, "-c", code], check=True)
