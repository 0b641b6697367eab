"""Every socket transport listens where its ``bind.host`` says (``0.0.0.0`` on a cluster of
several machines), and gRPC refuses a message size it cannot use with one config error."""
from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path
from typing import Any

import pytest

from squall import ConfigError, Spout, TopologyBuilder, TopologyError, drivers
from squall.testing.contracts.transport import collect

# 127.0.0.2 is loopback too: a listener there is not reachable at 127.0.0.1, so delivery
# through it shows the key was used
OTHER = "127.0.0.2"


def _own_listeners(port: int) -> set[str]:
    """The addresses this process's listening TCP sockets on ``port`` are bound to (another
    process may listen on the same port at another address: a connect would reach it)."""
    fd_dir = Path("/proc/self/fd")
    inodes = set()
    for fd in fd_dir.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:         # closed since listed
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].split(":")
            if fields[3] == "0A" and int(hex_port, 16) == port and fields[9] in inodes:
                raw = bytes.fromhex(address)
                if len(raw) == 4:
                    found.add(socket.inet_ntop(socket.AF_INET, raw[::-1]))
                else:           # an IPv4 address mapped into IPv6 (gRPC) counts as itself
                    ip = ipaddress.IPv6Address(b"".join(raw[i:i + 4][::-1]
                                                        for i in range(0, 16, 4)))
                    found.add(str(ip.ipv4_mapped or ip))
    return found


@pytest.mark.parametrize("name", ["zmq", "nng", "grpc"])
def test_a_receiver_listens_on_its_bind_host(name: str) -> None:
    conf = {"squall.transport": name, f"squall.transport.{name}.bind.host": OTHER}
    transport = drivers.driver("transport", conf)
    try:
        receiver = transport.bind("bind-topo", 0)
        assert _own_listeners(receiver.port) == {OTHER}
        sender = transport.connect("bind-topo", OTHER, receiver.port)
        sender.send([(1, b"over the other address")])
        assert collect(receiver, 1) == [(1, b"over the other address")]
    finally:
        transport.close()


def test_the_bind_hosts_default_to_loopback() -> None:
    from squall import config
    defaults = config.defaults()
    assert {defaults[f"squall.transport.{n}.bind.host"] for n in ("zmq", "nng", "grpc")} == {
        "127.0.0.1"}


@pytest.mark.parametrize("mb", [2048, 4096, 0, -1, True, "big"])
def test_grpc_refuses_a_message_size_it_cannot_use(mb: Any) -> None:
    from squall.plugin_manager import get_plugin_manager
    conf = {"squall.transport": "grpc", "squall.transport.grpc.max.message.mb": mb}
    with pytest.raises(ConfigError, match="max.message.mb must be a number above 0 and below "
                                          "2048"):
        drivers.driver("transport", conf)
    hooks = get_plugin_manager().hook
    with pytest.raises(ConfigError, match="max.message.mb"):         # nimbus, supervisors
        hooks.squall_configure(conf=dict(conf))
    b = TopologyBuilder()
    b.set_spout("src", Spout)
    with pytest.raises(TopologyError, match="max.message.mb"):       # at submit
        hooks.squall_validate_topology(topology=b.create_topology(), conf=dict(conf))


def test_grpc_takes_its_largest_message_size() -> None:
    transport = drivers.driver("transport", {"squall.transport": "grpc",
                                             "squall.transport.grpc.max.message.mb": 2047})
    try:
        receiver = transport.bind("size-topo", 0)
        sender = transport.connect("size-topo", "127.0.0.1", receiver.port)
        sender.send([(1, b"x" * 100)])
        assert collect(receiver, 1) == [(1, b"x" * 100)]
    finally:
        transport.close()
