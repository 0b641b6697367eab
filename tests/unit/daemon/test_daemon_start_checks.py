"""What a daemon refuses when it is built or started, with one line naming the key: a loop
period no thread can wait (its thread died while the daemon ran on, doing nothing), and a state
store that lives in one process (nimbus and the supervisors each had their own: a topology
pending for ever)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from squall import ConfigError, drivers
from squall.cli import cluster
from squall.cli import main as cli_main
from squall.daemon.nimbus import Nimbus
from squall.daemon.supervisor import Supervisor
from squall.daemon.validate import check_state_store
from squall.spi.state import StateStore
from squall.ui import UiServer


@pytest.mark.parametrize("value", [10**10, 0, -1])
def test_nimbus_refuses_a_monitor_period_its_thread_cannot_wait(tmp_path: Path,
                                                                 value: int) -> None:
    with pytest.raises(ConfigError, match=r"^config key 'nimbus.monitor.freq.secs' must be a "
                                          r"number of seconds above 0 and at most 31536000"):
        Nimbus({"storm.local.dir": str(tmp_path), "nimbus.monitor.freq.secs": value})


@pytest.mark.parametrize("key", ["supervisor.monitor.frequency.secs",
                                 "supervisor.heartbeat.frequency.secs"])
def test_a_supervisor_refuses_a_period_its_threads_cannot_wait(tmp_path: Path,
                                                               key: str) -> None:
    with pytest.raises(ConfigError, match=rf"^config key {key!r} must be a number of seconds"):
        Supervisor({"storm.local.dir": str(tmp_path), key: 10**10})


class _NoNimbus:
    def close(self) -> None:
        pass


@pytest.mark.parametrize("conf,message", [
    ({"ui.sample.secs": 1e10}, "'ui.sample.secs' must be a number of seconds above 0"),
    ({"ui.sample.secs": -1}, "'ui.sample.secs' must be a number of seconds above 0"),
    ({"ui.sample.secs": 0}, "'ui.sample.secs' must be a number of seconds above 0"),
    ({"ui.history.size": 0}, "'ui.history.size' must be at least 2, got 0"),
])
def test_the_ui_refuses_what_it_used_to_change_without_a_word(conf: dict[str, Any],
                                                              message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        UiServer(conf, make_client=lambda c: _NoNimbus())


def test_the_ui_takes_its_defaults_for_missing_keys_and_the_least_history() -> None:
    UiServer({}, make_client=lambda c: _NoNimbus())
    UiServer({"ui.history.size": 2, "ui.sample.secs": 0.01}, make_client=lambda c: _NoNimbus())


def test_a_state_store_of_one_process_is_refused_by_the_cluster_daemons() -> None:
    with pytest.raises(ConfigError, match=r"^squall.state 'memory' keeps the cluster's state "
                                          r"inside one process and `squall nimbus` runs in a "
                                          r"process of its own.*'zookeeper' is the default"):
        check_state_store({"squall.state": "memory"}, "nimbus")
    check_state_store({"squall.state": "zookeeper"}, "nimbus")
    check_state_store({}, "nimbus")          # none chosen: the default


def test_the_stores_own_attribute_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    class ThirdParty(StateStore):     # abstract: only its class is looked at
        in_process = True
    monkeypatch.setattr(drivers, "driver_class", lambda role, conf: ThirdParty)
    with pytest.raises(ConfigError, match=r"^squall.state 'mine' keeps the cluster's state"):
        check_state_store({"squall.state": "mine"}, "supervisor")


@pytest.mark.parametrize("command", ["nimbus", "supervisor", "ui", "drpc"])
def test_squall_daemons_refuse_the_memory_store_with_one_line(
        command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("SQUALL_CONF", raising=False)
    ran: list[str] = []
    monkeypatch.setattr(cluster, "_run_daemon", lambda daemon, conf, name: ran.append(name) or 0)
    assert cli_main.main([command, "-c", "squall.state=memory"]) == 2
    assert ran == []
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"squall: error: squall.state 'memory' keeps the cluster's state "
                              f"inside one process and `squall {command}` runs")


def test_a_history_of_fewer_than_two_samples_is_refused_not_enlarged() -> None:
    from squall.ui.history import History
    with pytest.raises(ValueError, match="at least 2 samples"):
        History(1)
