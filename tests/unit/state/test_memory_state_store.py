"""What the memory store adds to the contract: sharing, threads, ordering, bookkeeping."""
from __future__ import annotations

import threading
import uuid

import pytest
from squall import drivers
from squall.errors import StateError
from squall.state.memory import MemoryServer, MemoryStateStore
from squall.testing.waiting import wait_until


@pytest.fixture
def server() -> MemoryServer:
    return MemoryServer()


def test_clients_naming_one_namespace_share_the_tree() -> None:
    ns = f"test-{uuid.uuid4().hex}"
    a = MemoryStateStore({"squall.state.memory.namespace": ns})
    b = MemoryStateStore({"squall.state.memory.namespace": ns})
    elsewhere = MemoryStateStore({"squall.state.memory.namespace": ns + "-other"})
    private = MemoryStateStore({})
    try:
        a.put("/shared", b"1")
        assert b.get("/shared") == b"1"
        assert a.server is b.server
        assert elsewhere.get("/shared") is None
        assert private.get("/shared") is None
    finally:
        for store in (a, b, elsewhere, private):
            store.close()


def test_the_driver_is_registered_as_memory() -> None:
    store = drivers.driver("state", {"squall.state": "memory"})
    assert isinstance(store, MemoryStateStore) and store.name == "memory"
    store.close()


def test_watches_run_on_a_store_thread_in_change_order(server: MemoryServer) -> None:
    a, b = MemoryStateStore(server=server), MemoryStateStore(server=server)
    seen: list[tuple[str, str]] = []
    try:
        for i in range(5):
            a.get(f"/n{i}", watch=lambda p: seen.append((p, threading.current_thread().name)))
        for i in range(5):
            b.put(f"/n{i}", b"x")
        wait_until(lambda: len(seen) == 5)
        assert [p for p, _ in seen] == [f"/n{i}" for i in range(5)]
        assert all(name != threading.current_thread().name for _, name in seen)
    finally:
        a.close()
        b.close()


def test_the_same_callback_registered_twice_fires_once(server: MemoryServer) -> None:
    a, b = MemoryStateStore(server=server), MemoryStateStore(server=server)
    calls: list[str] = []

    def cb(path: str) -> None:
        calls.append(path)

    try:
        a.get("/d", watch=cb)
        a.get("/d", watch=cb)
        b.put("/d", b"1")
        marker: list[str] = []
        a.get("/e", watch=marker.append)
        b.put("/e", b"1")
        wait_until(lambda: marker)
        assert calls == ["/d"]
    finally:
        a.close()
        b.close()


def test_a_failing_callback_does_not_stop_later_ones(server: MemoryServer,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    a = MemoryStateStore(server=server)
    later: list[str] = []

    def boom(path: str) -> None:
        raise RuntimeError("bad watcher")

    try:
        a.get("/f", watch=boom)
        a.get("/g", watch=later.append)
        a.put("/f", b"")
        a.put("/g", b"")
        wait_until(lambda: later == ["/g"])
        assert "bad watcher" in caplog.text
    finally:
        a.close()


def test_a_closed_client_drops_its_watches(server: MemoryServer) -> None:
    a, b = MemoryStateStore(server=server), MemoryStateStore(server=server)
    a.get("/h", watch=lambda p: None)
    a.children("/h", watch=lambda p: None)
    a.close()
    assert server._data_watches == {} and server._child_watches == {}
    b.close()


def test_sequence_numbers_are_never_reused(server: MemoryServer) -> None:
    a = MemoryStateStore(server=server)
    first = a.create("/s/n-", sequence=True)
    a.delete(first)
    second = a.create("/s/n-", sequence=True)
    assert second > first
    a.close()


def test_closing_cancels_a_waiting_election(server: MemoryServer) -> None:
    a, b = MemoryStateStore(server=server), MemoryStateStore(server=server)
    release = threading.Event()
    leader = a.leader_election("/l", "A")
    t = threading.Thread(target=leader.run, args=(release.wait,), daemon=True)
    t.start()
    wait_until(lambda: leader.is_leader)
    waiter = b.leader_election("/l", "B")
    result: list[bool] = []
    tw = threading.Thread(target=lambda: result.append(waiter.run(lambda: None)), daemon=True)
    tw.start()
    wait_until(lambda: leader.contenders() == ["A", "B"])
    b.close()
    tw.join(10)
    assert result == [False]
    assert leader.contenders() == ["A"]
    release.set()
    t.join(10)
    a.close()


def test_elections_refuse_a_closed_store(server: MemoryServer) -> None:
    a = MemoryStateStore(server=server)
    a.close()
    with pytest.raises(StateError):
        a.leader_election("/l", "A")
