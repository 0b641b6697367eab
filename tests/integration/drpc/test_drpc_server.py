"""The DRPC server over real sockets: a Trident topology (LocalCluster) serving a function
fetched from the server, answered the same over gRPC and HTTP; bad requests; a request whose
topology is gone; the ``squall drpc`` command."""
from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from urllib.parse import quote
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from squall import DRPCClient, LocalCluster
from squall.daemon.ports import free_port
from squall.drpc import DRPCServer
from squall.drpc._proto import drpc_pb2 as pb
from squall.drpc._proto import drpc_pb2_grpc as pb_grpc
from squall.errors import DRPCError
from squall.testing.waiting import wait_until
from squall.trident import (
    Count, FixedBatchSpout, Function, MapGet, MemoryMapState, Sum, TridentTopology,
)

WORDS = [["the"], ["cow"], ["the"], ["moon"], ["the"]]


class Split(Function):
    def execute(self, tup: Any, collector: Any) -> None:
        for w in tup["args"].split():
            collector.emit([w])


@pytest.fixture
def server() -> Iterator[DRPCServer]:
    s = DRPCServer({"drpc.host": "127.0.0.1", "drpc.port": 0, "drpc.http.port": 0,
                    "drpc.request.timeout.secs": 3}).start()
    yield s
    s.stop()


def test_a_drpc_server_listens_on_loopback_by_default() -> None:
    """Like nimbus and the UI: 0.0.0.0 only when drpc.host says so."""
    s = DRPCServer({"drpc.port": 0, "drpc.http.port": 0}).start()
    try:
        for port in (s.port, s.http_port):
            with socket.socket() as probe:       # 127.0.0.2: loopback, not the address bound
                probe.settimeout(2)
                assert probe.connect_ex(("127.0.0.2", port)) != 0
            with socket.create_connection(("127.0.0.1", port), timeout=5):
                pass
    finally:
        s.stop()


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_a_topology_serves_drpc_over_grpc_and_http(server: DRPCServer) -> None:
    conf = {"drpc.servers": [f"127.0.0.1:{server.port}"], "drpc.request.timeout.secs": 3,
            "topology.trident.batch.emit.interval.millis": 5}
    t = TridentTopology()
    counts = t.new_stream("words", FixedBatchSpout(["word"], 2, WORDS)).group_by(
        ["word"]).persistent_aggregate(MemoryMapState(), Count(), ["count"])
    (t.new_drpc_stream("count").each(["args"], Split(), ["word"]).group_by(["word"])
     .state_query(counts, ["word"], MapGet(), ["count"]).aggregate(["count"], Sum(), ["sum"]))
    client = DRPCClient(conf)
    with LocalCluster() as cluster:
        cluster.submit_topology("drpc-served", conf, t.build())
        wait_until(lambda: client.execute("count", "the cow") == "[[4]]", timeout=60,
                   message="the counts through DRPC")
        assert _get(server.http_port, "/drpc/count/the%20moon%20nosuch") == (200, "[[4]]")
        assert client.execute("count", "the moon nosuch") == "[[4]]"
        # the function list the server publishes
        status, body = _get(server.http_port, "/drpc")
        assert status == 200 and [f["function"] for f in json.loads(body)] == ["count"]
        assert json.loads(body)[0]["last_fetch_secs_ago"] >= 0
        # bad requests: one clear error each, the server keeps serving
        status, body = _get(server.http_port, "/drpc/a%2Fb/x")
        assert status == 400 and "bad DRPC function name" in body
        assert _get(server.http_port, "/nothing")[0] == 404
        with pytest.raises(DRPCError, match="bad DRPC function name"):
            client.execute("", "x")
        assert client.execute("count", "cow") == "[[1]]"
        cluster.kill_topology("drpc-served")
        # its topology is gone: the request times out (drpc.request.timeout.secs) clearly
        wait_until(lambda: _times_out(client), timeout=60)
    status, body = _get(server.http_port, "/drpc/count/cow")
    assert status == 504 and "timed out after 3 s" in body


class Length(Function):
    def execute(self, tup: Any, collector: Any) -> None:
        collector.emit([len(tup["args"])])


def _concurrently(calls: list[Callable[[], str]], within: float) -> list[str]:
    """Each call's result (or its DRPCError's text) from threads of its own, all started at
    once; every one must be back within ``within`` seconds."""
    out: list[str] = [""] * len(calls)

    def run(i: int) -> None:
        try:
            out[i] = calls[i]()
        except DRPCError as exc:
            out[i] = f"DRPCError: {exc}"
    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(calls))]
    for t in threads:
        t.start()
    deadline = time.monotonic() + within
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), f"not back within {within} s: {out}"
    return out


def test_callers_using_every_caller_thread_are_still_answered() -> None:
    """drpc.worker.threads callers at once: their topology's fetch and result calls have
    threads of their own (they queued behind the callers', and every caller timed out)."""
    s = DRPCServer({"drpc.host": "127.0.0.1", "drpc.port": 0, "drpc.http.port": 0,
                    "drpc.request.timeout.secs": 30, "drpc.worker.threads": 2}).start()
    conf = {"drpc.servers": [f"127.0.0.1:{s.port}"], "drpc.request.timeout.secs": 30,
            "topology.trident.batch.emit.interval.millis": 5}
    t = TridentTopology()
    t.new_drpc_stream("len").each(["args"], Length(), ["n"]).project(["n"])
    client = DRPCClient(conf)
    try:
        with LocalCluster() as cluster:
            cluster.submit_topology("drpc-threads", conf, t.build())
            wait_until(lambda: client.execute("len", "abc") == "[[3]]", timeout=60,
                       message="the topology serving len")
            for _ in range(3):
                got = _concurrently([lambda: client.execute("len", "x"),
                                     lambda: client.execute("len", "xy")], within=20)
                assert got == ["[[1]]", "[[2]]"]
    finally:
        s.stop()


def test_a_caller_over_the_caller_threads_is_refused_at_once_and_requests_are_served(
        ) -> None:
    """With drpc.worker.threads callers waiting, one more is a clear "busy" error at once
    (gRPC and HTTP), and the topology side still fetches and answers the waiting ones."""
    from squall.drpc.client import Invocations, respond

    s = DRPCServer({"drpc.host": "127.0.0.1", "drpc.port": 0, "drpc.http.port": 0,
                    "drpc.request.timeout.secs": 60, "drpc.worker.threads": 2}).start()
    conf = {"drpc.servers": [f"127.0.0.1:{s.port}"], "drpc.request.timeout.secs": 60}
    client = DRPCClient(conf)
    invocations = None
    waiting: list[str] = []
    callers = [threading.Thread(target=lambda a=a: waiting.append(client.execute("held", a)),
                                daemon=True) for a in ("one", "two")]
    try:
        for c in callers:
            c.start()
        wait_until(lambda: [f["waiting"] for f in s.functions()] == [2], timeout=30,
                   message=lambda: f"two callers waiting: {s.functions()}")
        started = time.monotonic()
        with pytest.raises(DRPCError, match="DRPC server is busy: 2 callers are waiting"):
            client.execute("held", "three")
        status, body = _get(s.http_port, "/drpc/held/four")
        assert status == 503 and "busy" in body and "drpc.worker.threads" in body
        assert time.monotonic() - started < 20      # refused, not queued until a timeout
        # the topology's side: fetches both and answers them
        invocations = Invocations(conf, "held")
        serve = _server_of(invocations, respond)
        serve(2)
        for c in callers:
            c.join(20)
        assert sorted(waiting) == ["[['one']]", "[['two']]"]
        # their threads are free again: a caller is served
        again = threading.Thread(target=lambda: waiting.append(client.execute("held", "six")),
                                 daemon=True)
        again.start()
        serve(1)
        again.join(20)
        assert waiting[2:] == ["[['six']]"]
    finally:
        if invocations is not None:
            invocations.close()
        s.stop()


def _server_of(invocations: Any, respond: Any) -> Callable[[int], None]:
    """A topology's part, played by hand: ``serve(n)`` takes ``n`` requests as they are
    fetched and answers each with ``[[args]]``."""
    def serve(n: int) -> None:
        got: list[tuple[str, str, str]] = []

        def fetched() -> bool:
            request = invocations.take()
            if request is not None:
                got.append(request)
            return len(got) == n
        wait_until(fetched, timeout=20, message=lambda: f"fetched {got}")
        for address, request_id, args in got:
            respond(address, request_id, f"[[{args!r}]]")
    return serve


FAILED_3_TIMES = "its batch failed 3 times (the topology's errors say why)"


class Parse(Function):
    def execute(self, tup: Any, collector: Any) -> None:
        collector.emit([int(tup["args"])])


def test_a_request_the_topology_fails_is_an_error_for_its_caller_at_once(
        server: DRPCServer) -> None:
    conf = {"drpc.servers": [f"127.0.0.1:{server.port}"], "drpc.request.timeout.secs": 60,
            "topology.trident.batch.emit.interval.millis": 5}
    t = TridentTopology()
    t.new_drpc_stream("parse").each(["args"], Parse(), ["n"]).project(["n"])
    client = DRPCClient(conf)
    with LocalCluster() as cluster:
        cluster.submit_topology("drpc-fails", conf, t.build())
        wait_until(lambda: client.execute("parse", "42") == "[[42]]", timeout=60,
                   message="the topology serving parse")
        # the reason the topology gave, as LocalDRPC says it
        with pytest.raises(DRPCError, match=re.escape(f"failed: {FAILED_3_TIMES}")):
            client.execute("parse", "oops")         # well before the 60 s timeout
        assert client.execute("parse", "7") == "[[7]]"
        # the server's failure, not the caller's bad input: 500 over HTTP, INTERNAL over
        # gRPC, whatever words the args (quoted in the message) hold
        for args in ("oops", "must be timed out", "bad shutdown"):
            status, body = _get(server.http_port, f"/drpc/parse/{quote(args)}")
            assert (status, body) == (
                500, f"DRPC request parse({args!r}) failed: {FAILED_3_TIMES}\n")
            with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                with pytest.raises(grpc.RpcError) as failed:
                    pb_grpc.DRPCStub(channel).Execute(
                        pb.ExecuteRequest(function="parse", args=args), timeout=30)
            assert failed.value.code() == grpc.StatusCode.INTERNAL
            assert FAILED_3_TIMES in failed.value.details()
            assert dict(failed.value.trailing_metadata())["squall-error"] == "DRPCError"
        assert _get(server.http_port, "/drpc/parse/8") == (200, "[[8]]")


class Big(Function):
    """A result of ``int(args)`` characters."""

    def execute(self, tup: Any, collector: Any) -> None:
        collector.emit(["x" * int(tup["args"])])


def test_results_over_4_mib_reach_the_caller_and_one_over_the_limit_fails_at_once() -> None:
    """gRPC's default 4 MiB limit lost every larger result (the caller waited out its
    timeout); drpc.max.message.bytes sets the limit, and a result over it fails its request
    at once, saying so."""
    limit = 8 << 20
    s = DRPCServer({"drpc.host": "127.0.0.1", "drpc.port": 0, "drpc.http.port": 0,
                    "drpc.request.timeout.secs": 30, "drpc.max.message.bytes": limit}).start()
    conf = {"drpc.servers": [f"127.0.0.1:{s.port}"], "drpc.request.timeout.secs": 30,
            "topology.trident.batch.emit.interval.millis": 5}
    t = TridentTopology()
    t.new_drpc_stream("big").each(["args"], Big(), ["s"]).project(["s"])
    client = DRPCClient(conf)
    try:
        with LocalCluster() as cluster:
            cluster.submit_topology("drpc-big", conf, t.build())
            wait_until(lambda: client.execute("big", "1") == '[["x"]]', timeout=60,
                       message="the topology serving big")
            assert client.execute("big", "5000000") == '[["' + "x" * 5_000_000 + '"]]'
            status, body = _get(s.http_port, "/drpc/big/5000000")
            assert (status, len(body)) == (200, 5_000_006)
            started = time.monotonic()
            with pytest.raises(DRPCError, match=re.escape(
                    f"big('9000000') failed: result too large: 9000006 bytes > {limit}")):
                client.execute("big", "9000000")
            assert time.monotonic() - started < 20         # not after the 30 s timeout
            with pytest.raises(DRPCError, match=r"refused it: .*drpc.max.message.bytes"):
                client.execute("big", "9" * (limit + 1))   # args over the limit
            assert client.execute("big", "2") == '[["xx"]]'
    finally:
        s.stop()


def test_a_clients_own_timeout_bounds_its_call_and_frees_the_servers_thread() -> None:
    """A DRPCClient's drpc.request.timeout.secs shorter than the server's: its call ends
    then, with the same error as the server's timeout, and the server drops the request, so
    callers that gave up do not keep others out as "busy" (drpc.worker.threads 2 here)."""
    s = DRPCServer({"drpc.host": "127.0.0.1", "drpc.port": 0, "drpc.http.port": 0,
                    "drpc.request.timeout.secs": 60, "drpc.worker.threads": 2}).start()
    short = DRPCClient({"drpc.servers": [f"127.0.0.1:{s.port}"],
                        "drpc.request.timeout.secs": 1})
    try:
        for _ in range(3):
            started = time.monotonic()
            with pytest.raises(DRPCError, match=r"^DRPC request nobody\('x'\) timed out after "
                                                r"1 s \(drpc.request.timeout.secs\)$"):
                short.execute("nobody", "x")
            assert time.monotonic() - started < 10
        wait_until(lambda: s.functions() == [], timeout=30,
                   message=lambda: f"the abandoned requests dropped: {s.functions()}")
        got = _concurrently([lambda: short.execute("nobody", "y")] * 2, within=15)
        assert all("timed out after 1 s" in g for g in got), got      # not "busy"
    finally:
        s.stop()


def _http_caller(port: int, path: str) -> socket.socket:
    """A raw HTTP caller's connection, its ``GET path`` sent (it reads its answer itself)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    return sock


def _answer(sock: socket.socket) -> bytes:
    """The HTTP answer read from ``sock``: its head and its Content-Length of body."""
    reply = b""
    while b"\r\n\r\n" not in reply or len(reply.partition(b"\r\n\r\n")[2]) < int(
            re.search(rb"Content-Length: (\d+)", reply).group(1)):   # type: ignore[union-attr]
        chunk = sock.recv(4096)
        if not chunk:
            break
        reply += chunk
    return reply


def _waiting(s: DRPCServer) -> dict[str, int]:
    return {str(f["function"]): int(str(f["waiting"])) for f in s.functions()}


def test_http_callers_that_hang_up_free_their_requests_and_slots_at_once() -> None:
    """drpc.worker.threads 2, drpc.request.timeout.secs 600: two HTTP callers that give up
    (curl -m, a client's timeout: they close the connection) no longer make every later caller
    "busy" for 10 minutes; a caller still connected, however quiet, keeps its request."""
    s = DRPCServer({"drpc.host": "127.0.0.1", "drpc.port": 0, "drpc.http.port": 0,
                    "drpc.request.timeout.secs": 600, "drpc.worker.threads": 2}).start()
    try:
        impatient = [_http_caller(s.http_port, f"/drpc/slow/x{i}") for i in range(2)]
        wait_until(lambda: _waiting(s) == {"slow": 2}, timeout=30,
                   message=lambda: f"{_waiting(s)}")
        assert _get(s.http_port, "/drpc/other/y")[0] == 503       # busy
        for sock in impatient:
            sock.close()
        left = time.monotonic()
        wait_until(lambda: _waiting(s) == {}, timeout=30,
                   message=lambda: f"the abandoned requests dropped: {_waiting(s)}")
        assert time.monotonic() - left < 5
        # a quiet caller stays; one beside it that hangs up goes
        quiet = _http_caller(s.http_port, "/drpc/slow/quiet")
        gone = _http_caller(s.http_port, "/drpc/slow/gone")
        wait_until(lambda: _waiting(s) == {"slow": 2}, timeout=30,
                   message=lambda: f"{_waiting(s)}")
        gone.close()
        wait_until(lambda: _waiting(s) == {"slow": 1}, timeout=30,
                   message=lambda: f"{_waiting(s)}")
        (request_id, args), = s.book.fetch("slow", 10, 0, "h")
        assert args == "quiet" and s.book.result(request_id, "[[1]]")
        reply = _answer(quiet)
        assert reply.startswith(b"HTTP/1.1 200") and reply.endswith(b"[[1]]"), reply
        quiet.close()
    finally:
        s.stop()


def test_an_http_caller_that_shuts_its_sending_side_is_told_its_request_was_dropped(
        server: DRPCServer) -> None:
    """A client that half-closes after its request looks as gone as one that closed: its
    request is dropped at once, and it reads one line saying why."""
    sock = _http_caller(server.http_port, "/drpc/slow/x")
    sock.shutdown(socket.SHUT_WR)
    reply = _answer(sock)
    sock.close()
    assert reply.startswith(b"HTTP/1.1 400") and b"closed its connection (or its sending " \
        b"side) before its answer" in reply, reply
    assert server.functions() == []


def _times_out(client: DRPCClient) -> bool:
    try:
        client.execute("count", "cow")
    except DRPCError as exc:
        assert "timed out after 3 s (drpc.request.timeout.secs)" in str(exc)
        return True
    return False


@pytest.mark.parametrize("length", [b"abc", b"-1", b"99999999"])
def test_a_post_with_a_bad_content_length_is_one_400(server: DRPCServer, length: bytes) -> None:
    with socket.create_connection(("127.0.0.1", server.http_port), timeout=30) as sock:
        sock.sendall(b"POST /drpc/count HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " +
                     length + b"\r\n\r\n")
        reply = b""
        while chunk := sock.recv(4096):     # the server closes it after its answer
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 400") and b"Content-Length a number" in reply, reply
    assert _get(server.http_port, "/drpc")[0] == 200        # still serving


def test_no_server_answering_is_a_clear_error() -> None:
    client = DRPCClient({"drpc.servers": [f"127.0.0.1:{free_port()}"]})
    with pytest.raises(DRPCError, match="no DRPC server answered"):
        client.execute("count", "x")
    with pytest.raises(DRPCError, match="set drpc.servers"):
        DRPCClient({})


def test_squall_drpc_command_serves_until_terminated(tmp_path: Path) -> None:
    grpc_port, http_port = free_port(), free_port()
    cfg = tmp_path / "squall.yaml"
    cfg.write_text(f"drpc.port: {grpc_port}\ndrpc.http.port: {http_port}\n"
                   "drpc.host: 127.0.0.1\ndrpc.request.timeout.secs: 1\n")
    proc = subprocess.Popen([sys.executable, "-m", "squall.cli.main", "--config", str(cfg),
                             "drpc"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: _answers(http_port), timeout=60, message="squall drpc answers")
        client = DRPCClient({"drpc.servers": [f"127.0.0.1:{grpc_port}"]})
        with pytest.raises(DRPCError, match="timed out after 1 s"):
            client.execute("nobody", "x")
    finally:
        proc.terminate()
        assert proc.wait(30) == 0


def _answers(port: int) -> bool:
    try:
        return _get(port, "/drpc")[0] == 200
    except OSError:
        return False
