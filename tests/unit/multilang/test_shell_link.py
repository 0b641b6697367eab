"""ShellLink's handling of a subprocess's ``metrics`` messages: a name the component lists
in ``shell_metrics`` adds up in its metric; an undeclared one is dropped with one error line
per name, not one per message."""
from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from squall.api.context import TopologyContext
from squall.multilang.link import ShellLink, ShellMetric


@pytest.fixture
def reports() -> list[Any]:
    """What the link reports as the component's errors."""
    return []


@pytest.fixture
def link(reports: list[Any]) -> Iterator[ShellLink]:
    registered: dict[str, Any] = {}
    ctx = TopologyContext(topology_id="t-1", topology_name="t", component_id="split",
                          task_id=2, task_to_component={1: "spout", 2: "split"},
                          this_worker_port=None,
                          register_metric=lambda n, m, b: registered.setdefault(n, m))
    shell = ShellLink({}, ctx, command=[sys.executable, "-c", "pass"], cwd=".",
                      metric_names=["parsed"], emit=lambda *a, **k: None,
                      report=reports.append, on_messages=lambda p, m: None,
                      on_exit=lambda p, why: None)
    assert isinstance(registered["parsed"], ShellMetric)
    yield shell
    shell.host.stop()        # never launched: removes what it registered


def test_an_undeclared_metric_name_is_one_error_line_per_name(link, caplog):
    caplog.set_level(logging.INFO, logger="squall.component.split")
    for _ in range(50):
        link.common({"command": "metrics", "name": "parsed", "params": 1}, "metrics")
        link.common({"command": "metrics", "name": "rows", "params": 1}, "metrics")
        link.common({"command": "metrics", "name": "bytes", "params": 1}, "metrics")
    assert link.metrics["parsed"].get_value_and_reset() == 50
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 2, errors
    assert "metric 'rows'" in errors[0] and "shell_metrics (parsed)" in errors[0]
    assert "metric 'bytes'" in errors[1]


@pytest.mark.parametrize("params", ["1", None, {"n": 1}])
def test_params_that_are_no_number_are_one_error_per_metric(link, reports, caplog, params):
    # an ERROR line per message (500 for 500 tuples) and nothing in the topology's errors
    caplog.set_level(logging.INFO, logger="squall.component.split")
    for _ in range(50):
        link.common({"command": "metrics", "name": "parsed", "params": params}, "metrics")
        link.common({"command": "metrics", "name": "parsed", "params": 2}, "metrics")
    assert link.metrics["parsed"].get_value_and_reset() == 100
    assert len(reports) == 1, reports
    assert reports[0].startswith("metric 'parsed': params must be a number, got ")
    assert "\n" not in reports[0]
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
