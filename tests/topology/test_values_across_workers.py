"""Values beyond msgpack's own cross workers intact; a value the serializer refuses is one
clear error and a failed tree, never a stuck topology; ``topology.testing.always.try.serialize``
shows the difference in one worker; LocalCluster refuses a transport over sockets."""
from __future__ import annotations

import datetime as dt
import logging
import threading
import uuid
from decimal import Decimal
from typing import Any

import pytest

from squall import Bolt, ConfigError, LocalCluster, Spout, TopologyBuilder
from squall.testing import complete_topology, wait_until
from squall.errors import TransportError
from squall.testing.contracts.serializer import Point
from squall.transports import framing
from squall.transports.local import LocalTransport

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
    for x in (SEEN, ACKED, FAILED, BAD):
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


#: what Poison emits as its second tuple's value
BAD: list[Any] = []


class Poison(Spout):
    """Emits one good tuple, then one whose value no serializer takes (``BAD``, else an
    object), then good ones."""

    outputs = ["a", "b"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.n = 0

    def next_tuple(self) -> None:
        if self.n < 6:
            value: Any = (BAD[0] if BAD else object()) if self.n == 1 else self.n
            self.emit([value, self.n], tup_id=self.n)
            self.n += 1         # the emit of a refused value returns

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


#: two workers, and one that meets the serializer as they do
CROSSING = {"two workers": {"topology.workers": 2},
            "always.try.serialize": {"topology.testing.always.try.serialize": True}}


@pytest.mark.parametrize("where", list(CROSSING))
@pytest.mark.parametrize("serializer", ["msgpack", "grumpy"])
def test_unencodable_value_across_workers_fails_its_tree_and_is_reported(
        serializer: str, where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a serializer that raises anything else (a plugin's bug) too: the worker's loop
    died on it, again after every restart. ``always.try.serialize`` in one worker does
    the same (its emit raised: the spout's tuple was neither acked nor failed)."""
    install_driver(monkeypatch, "squall.serializers", "grumpy", _grumpy)
    ACKED.clear()
    FAILED.clear()
    b = TopologyBuilder()
    b.set_spout("poison", Poison)
    b.set_bolt("sink", Sink, parallelism=2).all_grouping("poison")     # one copy crosses
    conf = {**CROSSING[where], "topology.message.timeout.secs": 60,
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


class EmitsAndGoesOn(Bolt):
    """Emits a value no serializer takes, with a good one before it in an emit_many, then
    records that it went on; acks the tuple itself."""

    outputs = ["word"]
    auto_ack = False

    def process(self, tup: Any) -> None:
        self.emit_many([["fine"], [object()]])
        self.emit([object()], anchors=[tup])
        with LOCK:
            SEEN.append(("went on", tup.values[0]))
        self.ack(tup)


def test_always_try_serialize_fails_a_bolts_refused_tuple_and_its_emit_returns() -> None:
    # as between two workers: the emit returns (it raised out of process) and the input's
    # tree fails though the bolt acked it; what the serializer takes goes through
    b = TopologyBuilder()
    b.set_spout("values", Values)
    b.set_bolt("record", EmitsAndGoesOn).shuffle_grouping("values")
    b.set_bolt("sink", Sink).shuffle_grouping("record")
    result = complete_topology(b.create_topology(), sources={"values": [[1, 2]]},
                               conf={"topology.testing.always.try.serialize": True},
                               timeout=30)
    assert result.failed == {0} and not result.acked
    assert ("went on", 1) in SEEN and ("fine",) in SEEN
    assert result.tuples("record") == [("fine",)]      # what was sent


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


#: what OneBatch emits, one tracked tuple ``[value, index]`` each, all in one pass (so the
#: copies for the other worker travel in one batch)
BATCH: list[Any] = []


class OneBatch(Spout):
    outputs = ["a", "b"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.done = False

    def next_tuple(self) -> None:
        if not self.done:
            self.done = True
            for i, value in enumerate(BATCH):
                self.emit([value, i], tup_id=i)

    def ack(self, tup_id: Any) -> None:
        with LOCK:
            ACKED.append(tup_id)

    def fail(self, tup_id: Any) -> None:
        with LOCK:
            FAILED.append(tup_id)


def _one_batch_to_two_workers(cluster: LocalCluster, name: str, conf: dict[str, Any]) -> None:
    b = TopologyBuilder()
    b.set_spout("batch", OneBatch)
    b.set_bolt("sink", Sink, parallelism=2).all_grouping("batch")     # one copy crosses
    cluster.submit_topology(name, {"topology.workers": 2, "topology.message.timeout.secs": 60,
                                   **conf}, b.create_topology())
    wait_until(lambda: len(ACKED) + len(FAILED) == len(BATCH), timeout=30,
               message=lambda: f"acked {sorted(ACKED)}, failed {sorted(FAILED)}")


def test_a_dict_keyed_by_tuples_crosses_workers_and_so_does_its_batch() -> None:
    """msgpack writes a tuple key as an array and read it back as an unhashable list: the
    receiving worker dropped the whole batch, whose trees then waited for the timeout."""
    keyed = {(1, 2): "x", (3, (4, "y")): [5], "plain": {(6,): None}}
    BATCH[:] = [{"k": i} for i in range(50)]
    BATCH[25] = keyed
    with LocalCluster() as cluster:
        _one_batch_to_two_workers(cluster, "keys", {})
        assert sorted(ACKED) == list(range(50)) and not FAILED
        assert not cluster.get_topology_info("keys")["errors"]
    with LOCK:
        copies = [values[0] for values in SEEN if values[1] == 25]
    assert copies == [keyed, keyed]
    assert all(isinstance(k, tuple) for c in copies for k in c if k != "plain")


def test_json_refuses_what_would_cross_changed_and_the_rest_of_the_batch_goes_through() -> None:
    """json wrote the key 1 as "1": the task in the other worker got ``{"1": "a"}`` while
    the one in the emitting worker got ``{1: "a"}``."""
    deep: list[Any] = []
    for _ in range(5000):
        deep = [deep]
    BATCH[:] = [{"k": i} for i in range(10)]
    BATCH[3] = {1: "a"}
    BATCH[5] = {"__bytes__": "aGk="}        # how json carries bytes: read back as b"hi"
    BATCH[7] = deep
    with LocalCluster() as cluster:
        _one_batch_to_two_workers(cluster, "json", {"squall.serializer": "json"})
        assert sorted(FAILED) == [3, 5, 7]
        assert sorted(ACKED) == [0, 1, 2, 4, 6, 8, 9]

        def reported() -> list[dict[str, Any]]:
            return cluster.get_topology_info("json")["errors"].get("batch", [])
        wait_until(reported, timeout=30, message="the refusal reported")
        text = reported()[0]["error"]
        assert "batch" in text and "'default'" in text and "dict key 1 of type int" in text
    with LOCK:
        arrived = [values for values in SEEN if values[1] in (3, 5, 7)]
    assert all(values[0] == BATCH[values[1]] for values in arrived)     # the local copies


def test_each_cause_of_a_batchs_refusals_is_reported_with_its_count_and_field() -> None:
    """Only the first refusal of a batch was reported (the int): the object and the lone
    surrogate failed their trees without a word in the topology's errors or the log."""
    BATCH[:] = [2**70, object(), "\udcff", -2**70, "fine"]
    with LocalCluster() as cluster:
        _one_batch_to_two_workers(cluster, "causes", {})
        assert sorted(FAILED) == [0, 1, 2, 3] and ACKED == [4]

        def reported() -> list[str]:
            return [e["error"] for e in
                    cluster.get_topology_info("causes")["errors"].get("batch", [])]
        wait_until(lambda: len(reported()) >= 3, timeout=30, message=reported)
        texts = sorted(reported())
    assert len(texts) == 3
    assert texts[0].startswith("1 tuple of batch on stream 'default' cannot be sent to "
                               "another worker and fails (the value of field 'a'): ")
    assert "cannot serialize an object of type object" in texts[0]
    assert "surrogates not allowed" in texts[1]
    assert texts[2].startswith("2 tuples of batch on stream 'default' cannot be sent to "
                               "another worker and fail (the value of field 'a' in the first)")
    assert "beyond the 64 bits" in texts[2]


class Fragile:
    """A registered type whose decoder fails: what a worker writes and cannot read."""

    def __init__(self, n: int) -> None:
        self.n = n


def fragile_to_list(value: Fragile) -> list[int]:
    return [value.n]


def fragile_from_list(value: list[int]) -> Fragile:
    raise ValueError("this decoder is broken")


def test_a_batch_the_receiver_cannot_decode_is_logged_as_such(caplog: Any) -> None:
    here = __name__
    register = {f"{here}:Fragile": [f"{here}:fragile_to_list", f"{here}:fragile_from_list"]}
    BATCH[:] = [1, Fragile(2), 3]
    with LocalCluster() as cluster, caplog.at_level(logging.WARNING):
        _submit = cluster.submit_topology
        b = TopologyBuilder()
        b.set_spout("batch", OneBatch)
        b.set_bolt("sink", Sink, parallelism=2).all_grouping("batch")
        _submit("fragile", {"topology.workers": 2, "topology.message.timeout.secs": 60,
                            "topology.serializer.register": register}, b.create_topology())
        wait_until(lambda: any("cannot decode" in r.getMessage() for r in caplog.records),
                   timeout=30, message=lambda: caplog.text[-2000:])
    line = next(r.getMessage() for r in caplog.records if "cannot decode" in r.getMessage())
    # what failed and where, not a sender it cannot know
    assert "sink" in line and "this decoder is broken" in line and "sender" not in line
    assert "time out" in line


def _buggy_loads(conf: Any) -> Any:
    """A json serializer plugin that writes and cannot read back."""
    from squall.serializers.json import JsonSerializer

    class Buggy(JsonSerializer):
        def loads(self, data: bytes) -> Any:
            raise RuntimeError("plugin bug")
    return Buggy(conf)


@pytest.mark.parametrize("serializer, why, failed", [
    ("json", "nested", [1]),        # a RecursionError of a value nested too deep
    ("buggy", "the serializer raised RuntimeError('plugin bug')", [0, 1, 2, 3, 4, 5])])
def test_always_try_serialize_turns_whatever_the_serializer_raises_into_its_error(
        serializer: str, why: str, failed: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    install_driver(monkeypatch, "squall.serializers", "buggy", _buggy_loads)
    deep: list[Any] = []
    for _ in range(5000):
        deep = [deep]
    BAD[:] = [deep]
    b = TopologyBuilder()
    b.set_spout("poison", Poison)
    b.set_bolt("sink", Sink).shuffle_grouping("poison")
    with LocalCluster() as cluster:
        cluster.submit_topology("buggy", {"topology.testing.always.try.serialize": True,
                                          "topology.message.timeout.secs": 60,
                                          "squall.serializer": serializer},
                                b.create_topology())
        wait_until(lambda: len(ACKED) + len(FAILED) == 6, timeout=30,
                   message=lambda: f"acked {sorted(ACKED)}, failed {sorted(FAILED)}")
        assert sorted(FAILED) == failed
        assert sorted(ACKED) == sorted(set(range(6)) - set(failed))

        def reported() -> list[dict[str, Any]]:
            return cluster.get_topology_info("buggy")["errors"].get("poison", [])
        wait_until(reported, timeout=30, message="the serialization error reported")
        text = reported()[0]["error"]
    assert "poison emitted on stream 'default' values that cannot be sent" in text
    assert why in text


class SmallFrames(LocalTransport):
    """The local transport with a limit on a batch's size, as nng's and grpc's."""

    name = "smallframes"
    max_frame_bytes = 64 << 10

    def connect(self, topology_id: str, host: str, port: int) -> Any:
        inner = super().connect(topology_id, host, port)
        limit = self.max_frame_bytes

        class Sender:
            port = inner.port

            def send(self, messages: list[tuple[int, bytes]]) -> None:
                if len(framing.encode(messages)) > limit:
                    raise TransportError(f"a batch over {limit} bytes")
                inner.send(messages)

            def close(self) -> None:
                inner.close()
        return Sender()


def test_a_batch_over_the_transports_limit_is_sent_in_parts_and_a_tuple_over_it_fails(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The outbox sent each destination's batch whole: 300 tuples of 20 KB (6 MB) to a
    transport that takes 64 KB a batch, and every one failed, though each fits."""
    install_driver(monkeypatch, "squall.transports", "smallframes", SmallFrames)
    BATCH[:] = [bytes([i % 256]) * 20_000 for i in range(300)]
    BATCH[150] = b"big" * 30_000
    with LocalCluster() as cluster:
        _one_batch_to_two_workers(cluster, "frames", {"squall.transport": "smallframes"})
        assert FAILED == [150]                  # at once, not after the message timeout
        assert sorted(ACKED) == [i for i in range(300) if i != 150]

        def reported() -> list[dict[str, Any]]:
            return cluster.get_topology_info("frames")["errors"].get("batch", [])
        wait_until(reported, timeout=30, message="the tuple too large reported")
        text = reported()[0]["error"]
        assert "batch on stream 'default'" in text and "a tuple serialized to 900" in text
        assert "transport 'smallframes'" in text and len(reported()) == 1
    with LOCK:
        got = sorted(values[1] for values in SEEN)
    assert got.count(150) == 1 and len(got) == 599      # 150: the copy in its own worker
