"""Resources values, component needs and what a supervisor advertises."""
from __future__ import annotations

import pytest
from squall.errors import ConfigError
from squall.scheduling import resources as res_mod
from squall.scheduling.resources import (
    Resources,
    component_resources,
    default_supervisor_resources,
)


def test_arithmetic_and_comparison() -> None:
    a, b = Resources(2, 3, 1, 0), Resources(1, 1, 1, 1)
    assert a + b == Resources(3, 4, 2, 1)
    assert a - b == Resources(1, 2, 0, -1)
    assert b * 3 == Resources(3, 3, 3, 3)
    assert b.fits_in(Resources(1, 1, 1, 1)) and not a.fits_in(b)
    assert a.shortfall(b) == {"cpu": 1, "memory": 2}
    assert b.shortfall(a) == {"disk": 1}
    assert Resources().is_zero() and not b.is_zero()


def test_requests_round_up_to_whole_slots() -> None:
    r = Resources.from_request(cpu=0.5, memory_mb=1500, net=1, disk=None)
    assert r == Resources(cpu=1, memory=2, net=1, disk=0)
    assert Resources.from_request(memory_mb=1024).memory == 1
    assert r.memory_mb == 2048


@pytest.mark.parametrize("bad", [-1, "two", True])
def test_bad_request_is_a_config_error(bad: object) -> None:
    with pytest.raises(ConfigError, match="cpu"):
        Resources.from_request(cpu=bad)  # type: ignore[arg-type]


def test_dict_round_trip() -> None:
    r = Resources(3, 4, 2, 1)
    assert r.as_dict() == {"cpu": 3, "memory": 4, "net": 2, "disk": 1}
    assert Resources.from_dict(r.as_dict()) == r
    assert Resources.from_dict(None) == Resources()
    with pytest.raises(ConfigError):
        Resources.from_dict({"cpu": "lots"})


def test_component_needs_default_from_topology_conf() -> None:
    assert component_resources({}) == Resources(1, 1, 1, 0)
    conf = {"topology.component.cpu.slots": 2, "topology.component.memory.mb": 3000,
            "topology.component.net.slots": 0, "topology.component.disk.slots": 1}
    assert component_resources(conf) == Resources(2, 3, 0, 1)
    assert component_resources(conf, cpu=4, memory_mb=512) == Resources(4, 1, 0, 1)


def test_supervisor_defaults_follow_jstorm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(res_mod.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(res_mod, "_physical_memory_mb", lambda: 16 * 1024 + 300)
    got = default_supervisor_resources({"supervisor.disk.dirs": ["/d1", "/d2"]})
    assert got == {"cpu": 7, "memory": 16, "net": 7, "disk": 2}
    monkeypatch.setattr(res_mod, "_physical_memory_mb", lambda: 3 * 1024)
    assert default_supervisor_resources({})["net"] == 3


def test_supervisor_settings_win() -> None:
    conf = {"supervisor.cpu.slots": 10, "supervisor.memory.slots": 20,
            "supervisor.net.slots": None, "supervisor.disk.slots": 5}
    assert default_supervisor_resources(conf) == {"cpu": 10, "memory": 20, "net": 10, "disk": 5}
    with pytest.raises(ConfigError, match="supervisor.cpu.slots"):
        default_supervisor_resources({"supervisor.cpu.slots": -2})


def test_disk_slots_count_distinct_directories(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    dirs = ["/data/d1", "/data/d1/", "/data//d1", "/data/x/../d1", "/data/d2", "d3",
            "./d3", str(tmp_path / "d3"), "~/d4", str(tmp_path / "home" / "d4"), ""]
    assert default_supervisor_resources({"supervisor.disk.dirs": dirs})["disk"] == 4
    assert default_supervisor_resources({"supervisor.disk.dirs": None})["disk"] == 0
    assert default_supervisor_resources({"supervisor.disk.dirs": dirs,
                                         "supervisor.disk.slots": 7})["disk"] == 7


@pytest.mark.parametrize("value", [1.5, 2.0, -1, True, "3"])
def test_supervisor_rejects_fractional_negative_or_bool_slots(value: object) -> None:
    with pytest.raises(ConfigError) as info:
        default_supervisor_resources({"supervisor.memory.slots": value})
    assert str(info.value) == (f"supervisor.memory.slots must be a non-negative integer or "
                               f"null, got {value!r}")
