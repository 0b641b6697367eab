"""A daemon that cannot listen says why and which keys chose the address, in one line: a port
in use, a host that does not resolve, an address that is not this machine's (gRPC said
"Failed to bind to address" for all three, naming no key)."""
from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from squall import ConfigError, config
from squall.daemon.addresses import listen_error, listen_problem
from squall.daemon.nimbus import Nimbus
from squall.daemon.ports import free_port
from squall.errors import SquallError
from squall.ui import UiServer

#: an address no interface of this machine has (TEST-NET-3)
FOREIGN = "203.0.113.9"


@pytest.fixture
def busy() -> Iterator[int]:
    """A port on 127.0.0.1 another socket listens on."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


def test_the_reason_is_the_systems(busy: int) -> None:
    assert listen_problem("127.0.0.1", busy) == "Address already in use"
    assert listen_problem("0.0.0.0", busy) == "Address already in use"
    assert listen_problem(FOREIGN, 0) == "Cannot assign requested address"
    assert listen_problem("no-such-host.invalid", 0).startswith(
        "host 'no-such-host.invalid' does not resolve (")
    assert listen_problem("127.0.0.1", 0) == ""       # it binds: the caller's reason stands
    assert listen_error("nimbus", "127.0.0.1", 0, "nimbus.host / nimbus.port",
                        RuntimeError("Failed to bind")) == \
        "nimbus cannot listen on 127.0.0.1:0 (nimbus.host / nimbus.port): Failed to bind"


@pytest.mark.parametrize("host,reason", [
    ("127.0.0.1", "Address already in use"),
    ("no-such-host.invalid", "host 'no-such-host.invalid' does not resolve ("),
    (FOREIGN, "Cannot assign requested address"),
])
def test_nimbus_names_its_keys_and_the_reason(tmp_path: Path, busy: int, host: str,
                                              reason: str) -> None:
    port = busy if host == "127.0.0.1" else free_port()
    nimbus = Nimbus({**config.defaults(), "storm.local.dir": str(tmp_path),
                     "squall.state": "memory", "nimbus.host": host, "nimbus.port": port})
    try:
        with pytest.raises(SquallError) as refused:
            nimbus.start()
    finally:
        nimbus.stop()
    assert str(refused.value).startswith(
        f"nimbus cannot listen on {host}:{port} (nimbus.host / nimbus.port): {reason}")


def test_the_ui_names_where_its_address_came_from(busy: int) -> None:
    with pytest.raises(ConfigError, match=rf"^squall ui cannot listen on 127.0.0.1:{busy} "
                                          rf"\(ui.host / ui.port\): Address already in use$"):
        UiServer({"ui.host": "127.0.0.1", "ui.port": busy}, make_client=lambda c: None).start()
    with pytest.raises(ConfigError, match=rf"^squall ui cannot listen on {FOREIGN}:{busy} "
                                          rf"\(--host / ui.port\): Cannot assign requested "
                                          rf"address$"):
        UiServer({"ui.port": busy}, host=FOREIGN, make_client=lambda c: None).start()
