"""A DRPC server that cannot listen on one of its ports stops, saying which port and why in
one line (its HTTP front's bind failure was an AttributeError traceback)."""
from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from squall.daemon.ports import free_port
from squall.drpc import DRPCServer
from squall.errors import SquallError


@pytest.fixture
def busy() -> Iterator[int]:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


def _refusal(conf: dict[str, object]) -> str:
    server = DRPCServer({"drpc.host": "127.0.0.1", **conf})
    try:
        with pytest.raises(SquallError) as refused:
            server.start()
    finally:
        server.stop()
    return str(refused.value)


def _free(port: int) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", port))


def test_an_http_port_in_use_is_one_line_and_no_port_is_kept(busy: int) -> None:
    grpc_port = free_port()
    assert _refusal({"drpc.port": grpc_port, "drpc.http.port": busy}) == (
        f"DRPC cannot listen for HTTP on 127.0.0.1:{busy} (drpc.host / drpc.http.port): "
        f"Address already in use")
    _free(grpc_port)


def test_a_grpc_port_in_use_names_its_keys_and_the_http_port_is_let_go(busy: int) -> None:
    http_port = free_port()
    assert _refusal({"drpc.port": busy, "drpc.http.port": http_port}) == (
        f"DRPC cannot listen on 127.0.0.1:{busy} (drpc.host / drpc.port): Address already "
        f"in use")
    _free(http_port)


def test_one_port_for_both_fronts_is_refused() -> None:
    port = free_port()
    assert _refusal({"drpc.port": port, "drpc.http.port": port}) == (
        f"DRPC cannot listen on 127.0.0.1:{port} (drpc.host / drpc.port): Address already "
        f"in use")
    _free(port)
