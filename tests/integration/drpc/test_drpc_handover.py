"""Requests a topology fetched but did not start go back to the DRPC server (real sockets,
topologies in a LocalCluster): when it is deactivated, when it is killed, and when its worker
dies without a word (its lease runs out). Another topology serving the same function answers
them, and no caller waits out its timeout."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import grpc
import pytest

from squall import DRPCClient, LocalCluster
from squall.drpc import DRPCServer
from squall.drpc._proto import drpc_pb2 as pb
from squall.drpc._proto import drpc_pb2_grpc as pb_grpc
from squall.errors import DRPCError
from squall.testing.waiting import wait_until
from squall.trident import Function, TridentTopology

TIMEOUT = 20
#: a request of the slow topology has started: it holds one started, one waiting
SLOW_STARTED = threading.Event()


class Tag(Function):
    def __init__(self, tag: str = "A") -> None:
        self.tag = tag

    def execute(self, tup: Any, collector: Any) -> None:
        collector.emit([self.tag])


class Slow(Function):
    """Answers ``slow`` after a second (on the worker's loop: its batches wait behind it)."""

    def execute(self, tup: Any, collector: Any) -> None:
        SLOW_STARTED.set()
        time.sleep(1.0)
        collector.emit(["slow"])


def _serving(function: Function) -> Any:
    t = TridentTopology()
    t.new_drpc_stream("who").each(["args"], function, ["tag"]).project(["tag"])
    return t.build()


@pytest.fixture
def server() -> Iterator[DRPCServer]:
    s = DRPCServer({"drpc.host": "127.0.0.1", "drpc.port": 0, "drpc.http.port": 0,
                    "drpc.request.timeout.secs": TIMEOUT, "drpc.fetch.lease.secs": 1}).start()
    yield s
    s.stop()


def _conf(server: DRPCServer) -> dict[str, Any]:
    return {"drpc.servers": [f"127.0.0.1:{server.port}"], "drpc.request.timeout.secs": TIMEOUT,
            "topology.trident.batch.emit.interval.millis": 5}


def _concurrently(calls: list[Callable[[], str]]) -> list[str]:
    """Each call's result (or its DRPCError's text) from threads of their own, started at
    once; all back within the callers' timeout and a margin."""
    out: list[str] = [""] * len(calls)

    def run(i: int) -> None:
        try:
            out[i] = calls[i]()
        except DRPCError as exc:
            out[i] = f"DRPCError: {exc}"
    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(calls))]
    for t in threads:
        t.start()
    deadline = time.monotonic() + TIMEOUT + 15
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), f"callers still waiting: {out}"
    return out


def test_a_deactivated_topology_leaves_the_requests_to_another(server: DRPCServer) -> None:
    """Two topologies serve ``who``; one deactivated takes no more requests and gives back
    what it held, so the other answers them all; activated again, it serves again."""
    conf = _conf(server)
    client = DRPCClient(conf)
    with LocalCluster() as cluster:
        cluster.submit_topology("tag-a", conf, _serving(Tag("A")))
        cluster.submit_topology("tag-b", conf, _serving(Tag("B")))
        seen: set[str] = set()

        def both_served() -> bool:
            seen.add(client.execute("who", "x"))
            return len(seen) == 2
        wait_until(both_served, timeout=60, message=lambda: f"both topologies serving: {seen}")
        cluster.deactivate("tag-a")
        got = _concurrently([partial(client.execute, "who", str(i)) for i in range(12)])
        assert got == ['[["B"]]'] * 12
        cluster.activate("tag-a")
        wait_until(lambda: client.execute("who", "again") == '[["A"]]', timeout=60,
                   message="tag-a serving again")


def test_a_killed_topology_gives_back_what_it_held(server: DRPCServer) -> None:
    """A slow topology holds requests (one started, one waiting) when it is killed: they go
    back to the server and the topology started next answers them with the rest."""
    conf = _conf(server)
    client = DRPCClient(conf)
    SLOW_STARTED.clear()
    with LocalCluster() as cluster:
        cluster.submit_topology("slow", conf, _serving(Slow()))
        out: list[list[str]] = []
        callers = threading.Thread(target=lambda: out.append(_concurrently(
            [partial(client.execute, "who", str(i)) for i in range(6)])), daemon=True)
        callers.start()
        assert SLOW_STARTED.wait(60), "the slow topology never started a request"
        cluster.kill_topology("slow")
        cluster.submit_topology("tag-b", conf, _serving(Tag("B")))
        callers.join(TIMEOUT + 30)
        assert out and all(r in ('[["slow"]]', '[["B"]]') for r in out[0]), out
        assert out[0].count('[["B"]]') >= 4, out


def test_a_worker_that_dies_loses_no_request_it_had_not_started(server: DRPCServer) -> None:
    """A topology's worker killed with kill -9 renews nothing: when the lease
    (drpc.fetch.lease.secs, 1 s here) runs out, a request it had not started goes to another
    topology, and the caller of one it had started hears why at once (not after its
    timeout)."""
    client = DRPCClient(_conf(server))
    out: list[list[str]] = []
    callers = threading.Thread(target=lambda: out.append(_concurrently(
        [partial(client.execute, "who", "started"), partial(client.execute, "who", "waiting")])),
        daemon=True)
    callers.start()
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        stub = pb_grpc.DRPCStub(channel)

        def fetch(holder: str, n: int, into: list[Any]) -> bool:
            """What ``holder`` fetches, into ``into``: has it ``n`` now?"""
            into.extend(stub.Fetch(pb.FetchRequest(function="who", max=n - len(into),
                                                   wait_secs=1, holder=holder),
                                   timeout=30).requests)
            return len(into) == n
        got: list[Any] = []
        wait_until(lambda: fetch("dies", 2, got), timeout=30,
                   message=lambda: f"the dying worker fetched {got}")
        by_args = {r.args: r.id for r in got}
        stub.Renew(pb.RenewRequest(holder="dies", ids=[by_args["waiting"]],
                                   started=[by_args["started"]]), timeout=30)
        started = time.monotonic()
        # the worker dies here; another topology's task fetches what it had not started
        again: list[Any] = []
        wait_until(lambda: fetch("lives", 1, again), timeout=TIMEOUT,
                   message="the waiting request given to another topology")
        assert [r.args for r in again] == ["waiting"]
        stub.Result(pb.ResultRequest(id=again[0].id, result='[["B"]]'), timeout=30)
    callers.join(TIMEOUT + 30)
    assert time.monotonic() - started < TIMEOUT - 5
    assert out[0][1] == '[["B"]]'
    assert "failed: the topology that started it stopped answering for it" in out[0][0]
