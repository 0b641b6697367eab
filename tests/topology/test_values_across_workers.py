"""Values beyond msgpack's own cross workers intact; a value the serializer refuses is one
clear error and a failed tree, never a stuck topology; ``topology.testing.always.try.serialize``
shows the difference in one worker; LocalCluster refuses a transport over sockets."""
from __future__ import annotations

import datetime as dt
import threading
import uuid
from decimal import Decimal
from typing import Any

import pytest

from squall import Bolt, ConfigError, LocalCluster, Spout, TopologyBuilder
from squall.testing import complete_topology, wait_until
from squall.testing.contracts.serializer import Point

from tests.topology.conftest import install_driver

LOCK = threading.Lock()
SEEN: list[tuple[Any, ...]] = []
ACKED: list[int] = []
FAILED: list[int] = []

RICH = [
    [dt.datetime(2026, 11, 25, 18, 30, tzinfo=dt.timezone.utc), dt.date(2026, 1, 1)],
    [dt.time(7, 30), Decimal("19.99")],
    [uuid.UUID(int=42), {"a", "b"}],
    [frozenset({1, 2}), {"nested": [{(1, "x")}]}],
    [Point(3, 4), [Point(5, 6)]],
]
REGISTER = {"squall.testing.contracts.serializer:Point": [
    "squall.testing.contracts.serializer:point_to_list",
    "squall.testing.contracts.serializer:point_from_list"]}


@pytest.fixture(autouse=True)
def _clear() -> None:
    for x in (SEEN, ACKED, FAILED):
        x.clear()


class Record(Bolt):
    outputs = ["a", "b"]

    def process(self, tup: Any) -> None:
        with LOCK:
            SEEN.append(tup.values)
        self.emit(list(tup.values))


class Values(Spout):
    outputs = ["a", "b"]


def _topology(bolt: type[Bolt] = Record, parallelism: int = 2) -> Any:
    b = TopologyBuilder()
    b.set_spout("values", Values)
    b.set_bolt("record", bolt, parallelism=parallelism).shuffle_grouping("values")
    return b.create_topology()


def test_rich_values_cross_two_workers_with_their_types() -> None:
    conf = {"topology.workers": 2, "topology.serializer.register": REGISTER}
    result = complete_topology(_topology(), sources={"values": RICH}, conf=conf, timeout=60)
    assert result.acked == set(range(len(RICH))) and not result.failed
    got = sorted(SEEN, key=repr)
    assert len(got) == len(RICH)
    for values in RICH:
        match = [v for v in got if list(v) == values]
        assert match, f"{values!r} arrived changed: {got!r}"
        assert [type(x) for x in match[0]] == [type(x) for x in values]


class Poison(Spout):
    """Emits one good tuple, then one whose value no serializer takes, then good ones."""

    outputs = ["a", "b"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.n = 0

    def next_tuple(self) -> None:
        if self.n < 6:
            value: Any = object() if self.n == 1 else self.n
            self.emit([value, self.n], tup_id=self.n)
            self.n += 1

    def ack(self, tup_id: Any) -> None:
        with LOCK:
            ACKED.append(tup_id)

    def fail(self, tup_id: Any) -> None:
        with LOCK:
            FAILED.append(tup_id)


class Sink(Bolt):
    outputs = ["a"]

    def process(self, tup: Any) -> None:
        with LOCK:
            SEEN.append(tup.values)


def _grumpy(conf: Any) -> Any:
    """A serializer plugin with a bug: where msgpack refuses a value it raises RuntimeError,
    not SerializationError."""
    from squall.errors import SerializationError
    from squall.serializers.msgpack import MsgpackSerializer

    class Grumpy(MsgpackSerializer):
        def dumps(self, obj: Any) -> bytes:
            try:
                return super().dumps(obj)
            except SerializationError:
                raise RuntimeError("serializer plugin bug") from None
    return Grumpy(conf)


@pytest.mark.parametrize("serializer", ["msgpack", "grumpy"])
def test_unencodable_value_across_workers_fails_its_tree_and_is_reported(
        serializer: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a serializer that raises anything else (a plugin's bug) too: the worker's loop
    died on it, again after every restart."""
    install_driver(monkeypatch, "squall.serializers", "grumpy", _grumpy)
    ACKED.clear()
    FAILED.clear()
    b = TopologyBuilder()
    b.set_spout("poison", Poison)
    b.set_bolt("sink", Sink, parallelism=2).all_grouping("poison")     # one copy crosses
    conf = {"topology.workers": 2, "topology.message.timeout.secs": 60,
            "squall.serializer": serializer}
    with LocalCluster() as cluster:
        cluster.submit_topology("poison", conf, b.create_topology())
        wait_until(lambda: len(ACKED) + len(FAILED) == 6, timeout=60,
                   message="every spout tuple acked or failed")
        # the refused tuple fails at once (not after the message timeout); the others, on the
        # same connection, arrive
        assert FAILED == [1]
        assert sorted(ACKED) == [0, 2, 3, 4, 5]

        def reported() -> list[dict[str, Any]]:
            return cluster.get_topology_info("poison")["errors"].get("poison", [])
        wait_until(reported, timeout=30, message="the serialization error reported")
        text = reported()[0]["error"]
        assert "poison" in text and "'default'" in text
        assert ("object" if serializer == "msgpack" else
                "the serializer raised RuntimeError('serializer plugin bug')") in text


class EmitsASet(Bolt):
    outputs = ["word"]

    def process(self, tup: Any) -> None:
        self.emit([object()])


def test_always_try_serialize_shows_the_difference_in_one_worker() -> None:
    plain = complete_topology(_topology(EmitsASet, 1), sources={"values": [[1, 2]]}, timeout=30)
    assert plain.acked == {0}                 # one worker: the value never meets a serializer
    checked = complete_topology(_topology(EmitsASet, 1), sources={"values": [[1, 2]]},
                                conf={"topology.testing.always.try.serialize": True},
                                timeout=30)
    assert checked.failed == {0}


def test_always_try_serialize_delivers_what_another_worker_would_get() -> None:
    conf = {"topology.testing.always.try.serialize": True}
    result = complete_topology(_topology(Record, 1), sources={"values": [[("t", 1), {2}]]},
                               conf=conf, timeout=30)
    assert result.acked == {0}
    assert SEEN == [(["t", 1], {2})]          # a tuple arrives as a list, as across workers


def test_local_cluster_refuses_a_socket_transport() -> None:
    with LocalCluster() as cluster:
        with pytest.raises(ConfigError, match="in-process transport"):
            cluster.submit_topology("zmq", {"squall.transport": "zmq"}, _topology())
        cluster.submit_topology("fine", {}, _topology())      # and it keeps working
