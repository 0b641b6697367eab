"""The nimbus client: how long a submit may take, what a call that changes state says when
nimbus does not answer in time (it may have done it: no other seed is tried), how a call
waits out a leader election, and how it passes over a seed that accepts connections and does
not answer (a stopped nimbus)."""
from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest

from squall.daemon._proto import nimbus_pb2 as pb
from squall.daemon._proto import nimbus_pb2_grpc as pb_grpc
from squall.daemon.nimbus_client import LEADER_KEY, NimbusClient, NimbusUnavailableError
from squall.daemon.validate import TIMEOUT_SECS


class Late(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode) -> None:
        self._code = code

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return "late"


def test_a_submit_may_take_the_load_and_the_replication_wait() -> None:
    client = NimbusClient({"nimbus.seeds": ["127.0.0.1:1"]}, timeout=30)
    assert client._submit_timeout({}) == 30 + TIMEOUT_SECS
    assert client._submit_timeout({"topology.min.replication.count": 2,
                                   "topology.max.replication.wait.time.sec": 60}) == (
        30 + TIMEOUT_SECS + 60)
    assert client._submit_timeout({"topology.min.replication.count": 2,
                                   "topology.max.replication.wait.time.sec": -1}) is None


def test_a_change_nimbus_did_not_answer_in_time_may_have_happened() -> None:
    client = NimbusClient({"nimbus.seeds": ["127.0.0.1:1", "127.0.0.1:2"]}, timeout=5)
    tried: list[Any] = []

    def late(stub: Any, timeout: Any) -> Any:
        tried.append(timeout)
        raise Late(grpc.StatusCode.DEADLINE_EXCEEDED)

    with pytest.raises(NimbusUnavailableError, match=r"nimbus at 127.0.0.1:1 did not answer "
                       r"within 5 s; the kill may have gone through: see `squall list`"):
        client._call(late, change="the kill")
    assert tried == [5]                     # the other seed was not asked to do it again
    tried.clear()
    with pytest.raises(NimbusUnavailableError, match="no nimbus leader answered"):
        client._call(late)                  # a read: every seed is tried
    assert tried == [5, 5]


class NotLeader(Late):
    """What a nimbus that does not lead answers, naming the leader it knows ('' for none)."""

    def __init__(self, leader: str) -> None:
        super().__init__(grpc.StatusCode.FAILED_PRECONDITION)
        self.leader = leader

    def trailing_metadata(self) -> tuple[tuple[str, str], ...]:
        return ((LEADER_KEY, self.leader),)


def test_a_call_waits_while_a_leader_is_being_elected() -> None:
    # a nimbus just started answers "not the leader" until its election ends; the submit
    # (a change: the refusal did nothing) goes through once it leads
    client = NimbusClient({"nimbus.seeds": ["127.0.0.1:1"]}, timeout=10)
    calls: list[float] = []

    def electing(stub: Any, timeout: Any) -> Any:
        calls.append(time.monotonic())
        if len(calls) < 4:
            raise NotLeader("127.0.0.1:1" if len(calls) == 2 else "")
        return "submitted"

    assert client._call(electing, change="the submit") == "submitted"
    assert len(calls) == 4


def test_a_call_gives_up_when_no_leader_is_elected_within_its_wait() -> None:
    client = NimbusClient({"nimbus.seeds": ["127.0.0.1:1", "127.0.0.1:2"]}, timeout=10,
                          election_wait=0.5)
    asked: list[str] = []

    def standby(stub: Any, timeout: Any) -> Any:
        asked.append("x")
        raise NotLeader("")

    began = time.monotonic()
    with pytest.raises(NimbusUnavailableError, match=r"127.0.0.1:1: not the leader; "
                       r"127.0.0.1:2: not the leader") as info:
        client._call(standby)
    # nimbus runs: the cause is its election (ZooKeeper), not the seeds or a stopped nimbus
    assert "none was elected leader within 0.5 s" in str(info.value)
    assert "ZooKeeper" in str(info.value) and "nimbus.seeds right" not in str(info.value)
    assert 0.3 <= time.monotonic() - began < 5
    assert len(asked) >= 4 and len(asked) % 2 == 0      # whole rounds, asked again

    once = NimbusClient({"nimbus.seeds": ["127.0.0.1:1"]}, timeout=10, election_wait=0)
    asked.clear()
    with pytest.raises(NimbusUnavailableError, match="not the leader"):
        once._call(standby)
    assert asked == ["x"]           # a daemon's client does not wait: it retries on its own


class DroppingStub:
    """A nimbus stub whose connection drops during a submit: after reading the whole request
    (``read_all``; nimbus may have stored the topology) or before reading any."""

    def __init__(self, read_all: bool, asked: list[str]) -> None:
        self.read_all, self.asked = read_all, asked

    def SubmitTopology(self, chunks: Any, timeout: Any) -> Any:
        self.asked.append("submit")
        if self.read_all:
            list(chunks)
        raise Late(grpc.StatusCode.UNAVAILABLE)


@pytest.mark.parametrize("read_all", [True, False])
def test_a_submit_whose_connection_dropped_after_it_was_sent_may_have_gone_through(
        monkeypatch: pytest.MonkeyPatch, read_all: bool) -> None:
    client = NimbusClient({"nimbus.seeds": ["127.0.0.1:1", "127.0.0.1:2"]}, timeout=5,
                          election_wait=0)
    asked: list[str] = []
    monkeypatch.setattr(client, "_stub", lambda address: DroppingStub(read_all, asked))
    with pytest.raises(NimbusUnavailableError) as info:
        client.submit_topology("wc", {}, {"components": {}}, b"zip" * 1000)
    if read_all:
        assert str(info.value) == (
            "the connection to nimbus at 127.0.0.1:1 dropped after the request was sent; "
            "the submit may have gone through: see `squall list`")
        assert asked == ["submit"]          # no other seed is asked to store it again
    else:       # nothing reached nimbus: the other seeds are tried
        assert "no nimbus leader answered" in str(info.value)
        assert asked == ["submit", "submit"]


def test_a_rebalance_count_nimbus_cannot_carry_is_a_config_error_before_any_call() -> None:
    # protobuf's int32 fields raised a bare ValueError ("Value out of range")
    from squall.errors import ConfigError
    client = NimbusClient({"nimbus.seeds": ["127.0.0.1:1"]}, timeout=5)
    client._call = lambda *a, **k: pytest.fail("nothing may be sent")  # type: ignore[method-assign]
    for workers, executors in ((3_000_000_000, None), (None, {"split": 99_999_999_999})):
        with pytest.raises(ConfigError, match="whole numbers from 1 to 2147483647"):
            client.rebalance("wc", 0, workers, executors)


class Leader(pb_grpc.NimbusServicer):
    """A nimbus that leads and answers reads, deactivations and submits."""

    def __init__(self) -> None:
        self.done: list[str] = []

    def GetClusterInfo(self, request: Any, context: Any) -> Any:
        return pb.ClusterInfo(leader="the leader")

    def Deactivate(self, request: Any, context: Any) -> Any:
        self.done.append(f"deactivate {request.name}")
        return pb.Empty()

    def SubmitTopology(self, request_iterator: Any, context: Any) -> Any:
        name = next(iter(request_iterator)).header.name
        self.done.append(f"submit {name} ({sum(1 for _ in request_iterator)} chunks)")
        return pb.SubmitReply(topology_id=f"{name}-1")


@pytest.fixture()
def stopped_and_leader() -> Iterator[tuple[str, str, Leader]]:
    """The address of a stopped nimbus (the kernel accepts its connections, nothing answers
    them) and of a leading one, and the leader's servicer."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    leader = Leader()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    pb_grpc.add_NimbusServicer_to_server(leader, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{silent.getsockname()[1]}", f"127.0.0.1:{port}", leader
    finally:
        server.stop(None)
        silent.close()


def test_a_stopped_seed_is_passed_over_for_the_next_within_the_connect_timeout(
        stopped_and_leader: tuple[str, str, Leader]) -> None:
    # a nimbus stopped with SIGSTOP first in nimbus.seeds: gRPC alone waits 20 s for its
    # handshake; the client asks the next seed after its connect timeout
    stopped, leading, leader = stopped_and_leader
    client = NimbusClient({"nimbus.seeds": [stopped, leading]}, timeout=30, connect_timeout=1)
    try:
        began = time.monotonic()
        assert client.cluster_info().leader == "the leader"
        assert time.monotonic() - began < 10
        # changes: nothing reached the stopped seed, so the leader is asked to make them
        fresh = NimbusClient({"nimbus.seeds": [stopped, leading]}, timeout=30,
                             connect_timeout=1)
        try:
            fresh.deactivate("wc")
            assert fresh.submit_topology("wc", {}, {"components": {}}, b"zip" * 1000) == "wc-1"
        finally:
            fresh.close()
        assert leader.done == ["deactivate wc", "submit wc (1 chunks)"]
        assert time.monotonic() - began < 20
    finally:
        client.close()


def test_a_stopped_seed_alone_is_named_as_such(
        stopped_and_leader: tuple[str, str, Leader]) -> None:
    stopped, _, _ = stopped_and_leader
    client = NimbusClient({"nimbus.seeds": [stopped]}, timeout=30, connect_timeout=0.5,
                          election_wait=0)
    try:
        began = time.monotonic()
        with pytest.raises(NimbusUnavailableError, match=(
                rf"{stopped}: unavailable \(it accepted the connection but did not answer "
                rf"within 0.5 s: a nimbus stopped or frozen\?\)")):
            client.cluster_info()
        assert time.monotonic() - began < 10
    finally:
        client.close()
