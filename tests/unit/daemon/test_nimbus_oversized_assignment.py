"""A topology whose assignment is too big for the state store is not scheduled, says why in
its status reason and in one error line, and every other topology is still scheduled.
Nimbus's parts over the memory store, with a small value limit."""
from __future__ import annotations

from typing import Any

import pytest

from leader_parts import ROOMY, LeaderParts

BIG, SMALL = "big-1-1000", "small-2-1001"
LIMIT = 3000


@pytest.fixture
def parts(tmp_path: Any, monkeypatch: Any) -> Any:
    monkeypatch.setattr("squall.spi.state.MAX_VALUE_BYTES", LIMIT)
    monkeypatch.setattr("squall.state._paths.MAX_VALUE_BYTES", LIMIT)
    p = LeaderParts(tmp_path, {"squall.scheduler": "even"}, tid=BIG, name="big", parallelism=40)
    p.add(SMALL, "small", 1, launch_time=1001)
    p.state.register_supervisor("sup-a", {"hostname": "host-a", "ports": list(range(6700, 6800)),
                                          "resources": ROOMY, "time_secs": 1000,
                                          "uptime_secs": 100})
    yield p
    p.store.close()


def _executors(parts: LeaderParts, tid: str) -> int:
    return len((parts.state.get_assignment(tid) or {}).get("executor_node_port") or {})


def _reason(parts: LeaderParts, tid: str) -> str:
    return str((parts.state.get_storm(tid) or {}).get("status_reason") or "")


def test_an_oversized_assignment_is_its_own_status_and_the_others_are_scheduled(
        parts: LeaderParts, caplog: Any) -> None:
    caplog.set_level("INFO")
    for _ in range(3):
        parts.lifecycle.monitor_pass()
    assert _executors(parts, SMALL) == 2
    assert _reason(parts, SMALL) == ""
    assert _executors(parts, BIG) == 0
    reason = _reason(parts, BIG)
    assert reason.startswith("not scheduled: its assignment of 80 executors is "), reason
    assert f"over the state store's {LIMIT}-byte limit; give it fewer executors" in reason
    lines = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(lines) == 1 and f"topology {BIG} not scheduled" in lines[0], lines
