"""The contract every ``squall.state_stores`` driver passes.

Subclass :class:`StateStoreContract` in a test module and override the ``store_factory``
fixture: it returns a callable that gives a NEW, started client of ONE shared store on every
call (separate sessions: ephemeral nodes, watches and elections are checked across clients) and
closes every client it made when the test ends::

    class TestMyStore(StateStoreContract):
        @pytest.fixture
        def store_factory(self):
            made = []
            def make():
                store = MyStore(conf); store.start(); made.append(store); return store
            yield make
            for store in made:
                store.close()

Watch tests never sleep: to show a watch did NOT fire again, they make a later change seen by
a second "sentinel" watch of the same client; callbacks of one client arrive in change order,
so once the sentinel fired, an extra firing would have arrived already.
"""
from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from squall.errors import StateError
from squall.spi.state import MAX_PATH_BYTES, MAX_VALUE_BYTES, StateStore
from squall.testing.waiting import wait_until

Factory = Callable[[], StateStore]


class _Recorder:
    """A watch callback counting the paths it was called with."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, path: str) -> None:
        with self._lock:
            self.calls[path] += 1

    def count(self, path: str) -> int:
        with self._lock:
            return self.calls[path]


def _sentinel(store: StateStore, writer: StateStore, path: str) -> None:
    """Set a watch on ``path`` through ``store``, change ``path`` with ``writer``, wait for it."""
    seen = _Recorder()
    store.get(path, watch=seen)
    writer.put(path, b"sentinel")
    wait_until(lambda: seen.count(path), message="sentinel watch did not fire")


class StateStoreContract:
    """Behaviour shared by every state store (see the module docstring)."""

    @pytest.fixture
    def store_factory(self) -> Any:
        raise NotImplementedError("override store_factory in the subclass")

    @pytest.fixture
    def store(self, store_factory: Factory) -> StateStore:
        return store_factory()

    @pytest.fixture
    def other(self, store_factory: Factory) -> StateStore:
        return store_factory()

    # -- nodes
    def test_create_then_get_returns_the_data(self, store: StateStore) -> None:
        assert store.create("/a/b/c", b"hello") == "/a/b/c"
        assert store.get("/a/b/c") == b"hello"
        assert store.get("/a/b") == b""  # parents made by makepath hold nothing

    def test_create_refuses_an_existing_node(self, store: StateStore) -> None:
        store.create("/x", b"1")
        with pytest.raises(StateError):
            store.create("/x", b"2")
        assert store.get("/x") == b"1"

    def test_create_without_makepath_needs_the_parent(self, store: StateStore) -> None:
        with pytest.raises(StateError):
            store.create("/missing/child", b"", makepath=False)
        assert not store.exists("/missing")

    def test_put_creates_then_overwrites(self, store: StateStore, other: StateStore) -> None:
        store.put("/p/q", b"one")
        assert other.get("/p/q") == b"one"
        other.put("/p/q", b"two")
        assert store.get("/p/q") == b"two"

    def test_absent_nodes_read_as_none_and_empty(self, store: StateStore) -> None:
        assert store.get("/nope") is None
        assert store.children("/nope") == []
        assert not store.exists("/nope")

    def test_children_are_sorted_names(self, store: StateStore) -> None:
        for name in ["c", "a", "b"]:
            store.put(f"/kids/{name}", b"")
        store.put("/kids/a/deeper", b"")
        assert store.children("/kids") == ["a", "b", "c"]
        assert "kids" in store.children("/")

    def test_delete_removes_and_ignores_absent(self, store: StateStore, other: StateStore) -> None:
        store.put("/d/e", b"x")
        store.delete("/d/e")
        assert not other.exists("/d/e")
        assert other.exists("/d")
        store.delete("/d/e")  # absent: ignored
        store.delete("/never/there")

    def test_delete_of_a_parent_needs_recursive(self, store: StateStore) -> None:
        store.put("/tree/a/b", b"1")
        store.put("/tree/c", b"2")
        with pytest.raises(StateError):
            store.delete("/tree")
        assert store.get("/tree/a/b") == b"1"
        store.delete("/tree", recursive=True)
        assert not store.exists("/tree")
        assert not store.exists("/tree/a/b")

    def test_root_cannot_be_deleted(self, store: StateStore) -> None:
        with pytest.raises(StateError):
            store.delete("/", recursive=True)

    # -- sequence and ephemeral nodes
    def test_sequence_nodes_get_increasing_ten_digit_suffixes(self, store: StateStore,
                                                               other: StateStore) -> None:
        made = [store.create("/q/item-", b"a", sequence=True),
                other.create("/q/item-", b"b", sequence=True),
                store.create("/q/item-", b"c", sequence=True)]
        assert len(set(made)) == 3
        for path in made:
            assert path.startswith("/q/item-")
            suffix = path[len("/q/item-"):]
            assert len(suffix) == 10 and suffix.isdigit()
        assert sorted(made) == made
        assert store.children("/q") == [p.rsplit("/", 1)[1] for p in made]
        bare = store.create("/q2/", b"", sequence=True)
        assert bare.startswith("/q2/") and len(bare) == len("/q2/") + 10

    def test_ephemeral_node_vanishes_when_its_client_closes(self, store_factory: Factory,
                                                            other: StateStore) -> None:
        owner = store_factory()
        owner.create("/live/me", b"here", ephemeral=True)
        owner.put("/live/also", b"too", ephemeral=True)
        owner.put("/live/kept", b"persistent")
        assert other.get("/live/me") == b"here"
        owner.close()
        wait_until(lambda: not other.exists("/live/me") and not other.exists("/live/also"))
        assert other.get("/live/kept") == b"persistent"

    def test_ephemeral_nodes_have_no_children(self, store: StateStore) -> None:
        store.create("/eph", b"", ephemeral=True)
        with pytest.raises(StateError):
            store.create("/eph/child", b"")

    def test_put_on_an_existing_node_keeps_it_persistent(self, store_factory: Factory,
                                                         other: StateStore) -> None:
        owner = store_factory()
        other.put("/stays", b"1")
        owner.put("/stays", b"2", ephemeral=True)
        owner.close()
        assert other.get("/stays") == b"2"

    def test_ephemeral_put_takes_over_another_sessions_node(self, store_factory: Factory,
                                                          other: StateStore) -> None:
        old_life = store_factory()
        old_life.put("/sup/s1", b"old", ephemeral=True)
        new_life = store_factory()
        new_life.put("/sup/s1", b"new", ephemeral=True)
        assert other.get("/sup/s1") == b"new"
        old_life.close()               # the old session's end no longer removes the node
        assert other.get("/sup/s1") == b"new"
        assert other.children("/sup") == ["s1"]
        new_life.close()
        wait_until(lambda: not other.exists("/sup/s1"))

    # -- watches
    def test_data_watch_fires_once(self, store: StateStore, other: StateStore) -> None:
        rec = _Recorder()
        other.put("/w", b"0")
        assert store.get("/w", watch=rec) == b"0"
        other.put("/w", b"1")
        wait_until(lambda: rec.count("/w") == 1)
        other.put("/w", b"2")
        _sentinel(store, other, "/w")
        assert rec.count("/w") == 1

    def test_data_watch_fires_on_delete(self, store: StateStore, other: StateStore) -> None:
        rec = _Recorder()
        other.put("/gone", b"x")
        store.get("/gone", watch=rec)
        other.delete("/gone")
        wait_until(lambda: rec.count("/gone") == 1)

    def test_data_watch_on_absent_node_fires_on_creation(self, store: StateStore,
                                                         other: StateStore) -> None:
        rec = _Recorder()
        assert store.get("/later", watch=rec) is None
        other.create("/later", b"now")
        wait_until(lambda: rec.count("/later") == 1)
        assert store.get("/later") == b"now"

    def test_child_watch_fires_once_on_add_and_again_when_rearmed(
            self, store: StateStore, other: StateStore) -> None:
        rec = _Recorder()
        other.put("/c", b"")
        assert store.children("/c", watch=rec) == []
        other.put("/c/one", b"")
        wait_until(lambda: rec.count("/c") == 1)
        other.put("/c/two", b"")
        _sentinel(store, other, "/c/one")
        assert rec.count("/c") == 1
        assert store.children("/c", watch=rec) == ["one", "two"]
        other.delete("/c/one")
        wait_until(lambda: rec.count("/c") == 2)

    def test_child_watch_ignores_data_changes(self, store: StateStore, other: StateStore) -> None:
        rec = _Recorder()
        other.put("/cd/x", b"")
        store.children("/cd", watch=rec)
        other.put("/cd", b"new data")
        other.put("/cd/x", b"child data")
        _sentinel(store, other, "/cd/x")
        assert rec.count("/cd") == 0

    def test_watch_fires_when_an_ephemeral_owner_closes(self, store_factory: Factory,
                                                        other: StateStore) -> None:
        owner = store_factory()
        owner.create("/sup/node-1", b"{}", ephemeral=True)
        data, kids = _Recorder(), _Recorder()
        other.get("/sup/node-1", watch=data)
        other.children("/sup", watch=kids)
        owner.close()
        wait_until(lambda: data.count("/sup/node-1") == 1 and kids.count("/sup") == 1)

    def test_a_watch_callback_may_call_the_store(self, store: StateStore,
                                                 other: StateStore) -> None:
        seen: list[bytes | None] = []

        def rearm(path: str) -> None:
            seen.append(store.get(path, watch=rearm))

        store.get("/loop", watch=rearm)
        other.put("/loop", b"1")
        wait_until(lambda: b"1" in seen)
        other.put("/loop", b"2")
        wait_until(lambda: b"2" in seen)

    # -- values and paths
    def test_binary_values_round_trip(self, store: StateStore, other: StateStore) -> None:
        every_byte = bytes(range(256)) * 4
        store.put("/bin", every_byte)
        assert other.get("/bin") == every_byte
        store.put("/empty", b"")
        assert other.get("/empty") == b""
        big = bytes(range(256)) * (MAX_VALUE_BYTES // 512)
        store.put("/big", big)
        assert other.get("/big") == big

    def test_unicode_values_and_names_round_trip(self, store: StateStore,
                                                 other: StateStore) -> None:
        text = '{"name": "wörter-zählen", "emoji": "⚡🌩", "cjk": "风暴"}'.encode()
        store.put("/topologies/风暴-⚡", text)
        assert other.get("/topologies/风暴-⚡") == text
        assert other.children("/topologies") == ["风暴-⚡"]

    def test_oversized_values_are_refused(self, store: StateStore) -> None:
        with pytest.raises(StateError):
            store.put("/huge", b"x" * (MAX_VALUE_BYTES + 1))
        assert not store.exists("/huge")

    def test_overlong_paths_are_refused(self, store: StateStore, other: StateStore) -> None:
        # a request carries its path and value: the longest path with the largest value
        # still fits ZooKeeper's request limit, while a longer path made ZooKeeper drop the
        # connection, for ever as the client retried
        longest = "/" + "p" * (MAX_PATH_BYTES - 1)
        big = b"v" * MAX_VALUE_BYTES
        store.put(longest, big)
        assert other.get(longest) == big
        too_long = "/" + "\u00e9" * (MAX_PATH_BYTES // 2)     # two bytes each in UTF-8
        for call in (lambda: store.put(too_long, b"v"), lambda: store.create(too_long),
                     lambda: store.get(too_long), lambda: store.exists(too_long)):
            with pytest.raises(StateError, match=f"{MAX_PATH_BYTES}-byte limit"):
                call()
        store.put("/after", b"ok")
        assert other.get("/after") == b"ok"

    @pytest.mark.parametrize("path", ["relative", "/trailing/", "//double", "/a/../b", "/a/./b"])
    def test_bad_paths_are_a_state_error(self, store: StateStore, path: str) -> None:
        with pytest.raises(StateError):
            store.put(path, b"")
        with pytest.raises(StateError):
            store.get(path)

    def test_values_must_be_bytes(self, store: StateStore) -> None:
        with pytest.raises(TypeError):
            store.put("/text", "not bytes")  # type: ignore[arg-type]

    def test_a_closed_store_refuses_work(self, store_factory: Factory) -> None:
        store = store_factory()
        store.close()
        store.close()  # idempotent
        with pytest.raises(StateError):
            store.get("/x")
        with pytest.raises(StateError):
            store.put("/x", b"")

    # -- leader election
    def test_second_candidate_takes_over_when_the_leader_closes(
            self, store_factory: Factory, other: StateStore) -> None:
        first, second = store_factory(), store_factory()
        ea, eb = first.leader_election("/leader", "A"), second.leader_election("/leader", "B")
        led = {"A": threading.Event(), "B": threading.Event()}
        release = threading.Event()
        results: dict[str, bool] = {}

        def candidate(name: str, election: Any) -> None:
            def lead() -> None:
                led[name].set()
                release.wait(30)
            results[name] = election.run(lead)

        ta = threading.Thread(target=candidate, args=("A", ea), daemon=True)
        ta.start()
        assert led["A"].wait(20)
        assert ea.is_leader
        tb = threading.Thread(target=candidate, args=("B", eb), daemon=True)
        tb.start()
        wait_until(lambda: eb.contenders() == ["A", "B"])
        assert not led["B"].is_set() and not eb.is_leader
        first.close()
        assert led["B"].wait(20), "the second candidate never took over"
        assert eb.is_leader and not ea.is_leader
        release.set()
        ta.join(20)
        tb.join(20)
        assert results == {"A": True, "B": True}
        wait_until(lambda: other.children("/leader") == [])

    def test_leadership_passes_on_when_the_leader_function_returns(
            self, store: StateStore, other: StateStore) -> None:
        order: list[str] = []
        ea = store.leader_election("/lead2", "A")
        assert ea.run(lambda: order.append("A")) is True
        assert not ea.is_leader
        eb = other.leader_election("/lead2", "B")
        assert eb.run(lambda: order.append("B")) is True
        assert order == ["A", "B"]

    def test_cancel_stops_a_waiting_candidate(self, store: StateStore, other: StateStore) -> None:
        release = threading.Event()
        leading = threading.Event()
        leader = store.leader_election("/lead3", "A")
        def lead() -> None:
            leading.set()
            release.wait(30)

        t = threading.Thread(target=leader.run, args=(lead,), daemon=True)
        t.start()
        assert leading.wait(20)
        waiter = other.leader_election("/lead3", "B")
        outcome: list[bool] = []
        tw = threading.Thread(target=lambda: outcome.append(waiter.run(lambda: None)),
                              daemon=True)
        tw.start()
        wait_until(lambda: waiter.contenders() == ["A", "B"])
        waiter.cancel()
        tw.join(20)
        assert outcome == [False]
        wait_until(lambda: leader.contenders() == ["A"])
        release.set()
        t.join(20)
