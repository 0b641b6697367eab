"""A kill's or a rebalance's wait is counted on nimbus's monotonic clock: a step of the
leader's clock (NTP) neither stretches nor cuts it, and after a failover to a nimbus whose
clock is behind it ends at most the wait asked for after that nimbus first saw it."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from squall import drivers
from squall.daemon.nimbus_schedule import Scheduling
from squall.daemon.nimbus_topologies import TopologyLifecycle
from squall.daemon.nimbus_waits import TransitionWaits
from squall.errors import NotAliveError
from squall.testing.waiting import wait_until

from leader_parts import ROOMY, LeaderParts

TID = "wc-1-1000"
KILLED, REBALANCING = "killed", "rebalancing"


class Clock:
    def __init__(self) -> None:
        self.now = 500.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def wall(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``step(secs)``: this host's clock (``time.time``) steps by ``secs`` (an NTP step)."""
    real = time.time
    offset = [0.0]
    monkeypatch.setattr(time, "time", lambda: real() + offset[0])

    def step(secs: float) -> None:
        offset[0] += secs
    return step


@pytest.fixture
def parts(tmp_path: Path) -> Any:
    parts = LeaderParts(tmp_path, {"squall.scheduler": "even"}, tid=TID, name="wc",
                        parallelism=1)
    parts.state.register_supervisor("s1", {"hostname": "h1", "ports": [6700, 6701],
                                           "resources": ROOMY})
    parts.lifecycle.monitor_pass()
    yield parts
    parts.store.close()


def status(parts: LeaderParts) -> str | None:
    base = parts.state.get_storm(TID)
    return None if base is None else str(base["status"])


def test_a_step_of_the_leaders_clock_changes_no_wait(wall):
    clock = Clock()
    waits = TransitionWaits(clock)
    end = time.time() + 30                   # what the leader stored
    waits.began(TID, KILLED, end, 30)
    wall(-3600)
    clock.now += 10
    assert waits.left(TID, KILLED, end, 30) == 20
    wall(+7200)
    assert waits.left(TID, KILLED, end, 30) == 20
    clock.now += 20
    assert waits.left(TID, KILLED, end, 30) == 0


def test_a_nimbus_that_first_sees_a_wait_ends_it_at_most_the_wait_asked_for_later(wall):
    clock = Clock()
    end = time.time() + 30                   # stored by the leader, its wait asked: 30 s
    behind = TransitionWaits(clock)
    wall(-3600)                              # a standby whose clock is an hour behind
    assert behind.left(TID, REBALANCING, end, 30) == 30
    clock.now += 30
    assert behind.left(TID, REBALANCING, end, 30) == 0
    # a record of an earlier release (no wait stored): at most a day
    assert TransitionWaits(clock).left(TID, REBALANCING, end, None) == \
        pytest.approx(3630, abs=1)
    wall(+3610)                              # one 10 s ahead: what is left by its clock
    assert TransitionWaits(clock).left(TID, REBALANCING, end, 30) == pytest.approx(20, abs=1)


def test_a_new_end_is_a_new_wait():
    clock = Clock()
    waits = TransitionWaits(clock)
    waits.began(TID, KILLED, time.time() + 60, 60)
    clock.now += 10
    assert waits.left(TID, KILLED, time.time() + 5, 5) == pytest.approx(5, abs=1)  # a 2nd kill


def test_a_rebalance_and_a_kill_end_on_time_when_the_leaders_clock_steps_back(parts, wall):
    parts.lifecycle.rebalance("wc", wait_secs=0.3, num_workers=2)
    assert status(parts) == REBALANCING
    wall(-3600)
    wait_until(lambda: parts.lifecycle.monitor_pass() is None and status(parts) == "active",
               5, message="the rebalance did not end")
    assert parts.state.get_storm(TID)["num_workers"] == 2
    parts.lifecycle.kill("wc", 0.3)
    wall(-3600)
    wait_until(lambda: parts.lifecycle.monitor_pass() is None and status(parts) is None, 5,
               message="the kill did not end")


def test_a_new_leader_whose_clock_is_behind_ends_a_kill_on_time(parts, tmp_path, wall):
    parts.lifecycle.kill("wc", 0.5)
    assert status(parts) == KILLED
    conf = {"squall.state": "memory", "squall.scheduler": "even",
            "storm.local.dir": str(tmp_path)}
    standby = TopologyLifecycle(conf, parts.state, parts.code, Scheduling(
        conf, parts.state, drivers.driver("scheduler", conf), parts.code),
        require_leader=lambda: None, wake=lambda: None)
    wall(-3600)                              # its clock is an hour behind the leader's
    standby.watch_transitions()              # its pass while it is a standby
    # the leader is gone; the standby leads now
    wait_until(lambda: standby.monitor_pass() is None and status(parts) is None, 5,
               message="the new leader did not end the kill")


def test_the_kill_wait_left_is_never_said_to_be_more_than_the_wait(parts, wall):
    parts.lifecycle.kill("wc", 60)
    wall(-3600)
    with pytest.raises(NotAliveError, match=r"\((59|60) s of its kill wait left\)"):
        parts.lifecycle.set_active("wc", True)
