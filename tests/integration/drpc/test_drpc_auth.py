"""DRPC with nimbus's authentication (API.md section 14), over real sockets: callers need a
token over gRPC and HTTP, only admins (topologies' workers) may serve requests, and a served
request completes end to end with the workers' credentials."""
from __future__ import annotations

import logging
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from squall import DRPCClient
from squall.drpc import DRPCServer
from squall.drpc import client as drpc_client
from squall.drpc._proto import drpc_pb2 as pb
from squall.errors import DRPCError

TOKENS = {"t-alice": "alice", "t-workers": "squall"}


@pytest.fixture
def server() -> Iterator[DRPCServer]:
    s = DRPCServer({"drpc.host": "127.0.0.1", "drpc.port": 0, "drpc.http.port": 0,
                    "drpc.request.timeout.secs": 20, "nimbus.authentication": "token",
                    "nimbus.auth.tokens": TOKENS, "nimbus.admins": ["squall"]}).start()
    yield s
    s.stop()


def _conf(server: DRPCServer, token: str | None) -> dict[str, Any]:
    conf: dict[str, Any] = {"drpc.servers": [f"127.0.0.1:{server.port}"],
                            "drpc.request.timeout.secs": 20}
    if token:
        conf["squall.auth.token"] = token
    return conf


def _get(port: int, path: str, token: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_callers_without_a_valid_token_are_refused_once_logged(
        server: DRPCServer, caplog: Any) -> None:
    with caplog.at_level(logging.WARNING, logger="squall"):
        for token, reason in ((None, "no token"), ("t-eve", "unknown token")):
            with pytest.raises(DRPCError, match=reason):
                DRPCClient(_conf(server, token)).execute("count", "x")
            with pytest.raises(DRPCError, match=reason):
                DRPCClient(_conf(server, token)).execute("count", "y")
            status, body = _get(server.http_port, "/drpc/count/x", token)
            assert status == 401 and reason in body
        status, body = _get(server.http_port, "/drpc", "t-alice")
        assert status == 200 and body == "[]"
    assert caplog.text.count("unknown token") == 2      # once per transport, not per call


def test_only_admins_serve_requests(server: DRPCServer) -> None:
    alice = drpc_client._stub(f"127.0.0.1:{server.port}", _conf(server, "t-alice"))
    with pytest.raises(grpc.RpcError) as refused:
        alice.Fetch(pb.FetchRequest(function="count", max=1, wait_secs=0), timeout=10)
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "may not serve DRPC requests" in (refused.value.details() or "")


def test_a_request_is_served_with_the_workers_credentials(server: DRPCServer) -> None:
    workers = _conf(server, "t-workers")
    invocations = drpc_client.Invocations(workers, "count")
    drpc_client.use_process_credentials(workers)        # what a worker's start does
    stop = threading.Event()

    def serve() -> None:                                 # the topology's part
        while not stop.is_set():
            got = invocations.take()
            if got is None:
                stop.wait(0.01)
                continue
            address, request_id, args = got
            drpc_client.respond(address, request_id, f"[[{len(args.split())}]]")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        alice = DRPCClient(_conf(server, "t-alice"))
        assert alice.execute("count", "the cow jumped") == "[[3]]"
        status, body = _get(server.http_port, "/drpc/count/over%20the%20moon", "t-alice")
        assert (status, body) == (200, "[[3]]")
    finally:
        stop.set()
        invocations.close()
        thread.join(10)
        drpc_client.use_process_credentials({})
