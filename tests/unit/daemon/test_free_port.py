"""free_port: ports handed out for a later bind must not be taken by the kernel meanwhile."""
from __future__ import annotations

import socket
from pathlib import Path

import pytest

from squall.daemon import ports
from squall.daemon.ports import free_port, outside_ephemeral


def test_ports_come_from_outside_the_kernels_ephemeral_range() -> None:
    # a worker's metrics server binds port 0, and every outgoing connection takes a local
    # port from this range: a slot port drawn from it could be gone when its worker starts
    low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    ports = [free_port() for _ in range(200)]
    assert len(set(ports)) == 200
    assert not [p for p in ports if low <= p <= high]
    assert all(1024 <= p <= 65535 for p in ports)


def test_a_handed_out_port_can_be_bound_and_is_not_handed_out_again() -> None:
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        sock.listen()
        assert port not in {free_port() for _ in range(100)}


def test_the_range_next_to_the_ephemeral_one(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    ranges = tmp_path / "ip_local_port_range"
    monkeypatch.setattr(ports, "EPHEMERAL_RANGE", ranges)
    ranges.write_text("32768\t60999\n")
    assert outside_ephemeral() == range(20768, 32768)
    ranges.write_text("1024 50000\n")           # no room below: above it
    assert outside_ephemeral() == range(50001, 62001)
    ranges.write_text("1024 65000\n")           # no room either side
    assert outside_ephemeral() is None
    ranges.unlink()                             # not Linux
    assert outside_ephemeral() is None
    assert free_port() > 0                      # the kernel's choice then


def test_a_supervisor_is_told_which_slot_ports_the_kernel_may_take(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ranges = tmp_path / "ip_local_port_range"
    monkeypatch.setattr(ports, "EPHEMERAL_RANGE", ranges)
    ranges.write_text("32768\t60999\n")
    assert ports.slot_ports_warning([6700, 6701, 6702, 6703]) == ""
    line = ports.slot_ports_warning([6700, 40001, 32768])
    assert line.startswith("supervisor.slots.ports in the kernel's ephemeral port range "
                           "(32768-60999, net.ipv4.ip_local_port_range): 32768, 40001. ")
    assert "choose ports below 32768" in line
    ranges.unlink()                             # not Linux: nothing to say
    assert ports.slot_ports_warning([40001]) == ""


def test_a_supervisor_without_slot_ports_is_told_it_runs_no_worker() -> None:
    # `supervisor.slots.ports: []` is allowed (a supervisor that runs nothing), but said once
    assert ports.slot_ports_warning([]) == ("supervisor.slots.ports is empty: this supervisor "
                                            "registers, but nimbus can place no worker on it")
