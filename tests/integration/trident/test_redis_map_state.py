"""RedisMapState over a real Redis: exact Trident word counts with a failed batch replayed,
Storm's stored layouts, and counts read back through DRPC; keys and values of any type the
topology's serializer carries, plain values stored as the JSON earlier releases read, values
stored as JSON before, and a value it refuses; a Redis that stops answering fails the call
within the state's timeout."""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import socket
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest

from squall import LocalCluster, LocalDRPC, StateError
from squall.testing.waiting import wait_until
from squall.trident import (
    CombinerAggregator, Count, FixedBatchSpout, Function, MapGet, RedisMapState, Sum,
    TridentTopology,
)
from squall.serializers.json import JsonSerializer
from squall.trident.state.redis import FORMAT, RedisBackingMap

SENTENCES = [["the cow jumped over the moon"], ["the man went to the store"],
             ["boom goes the dynamite"], ["to be or not to be"]]
ARMED: set[str] = set()


class Split(Function):
    """Raises on "boom" once per armed tag (the batch fails and is replayed)."""

    tag = ""

    def execute(self, tup: Any, collector: Any) -> None:
        for w in tup["sentence"].split():
            if w == "boom" and self.tag in ARMED:
                ARMED.discard(self.tag)
                raise RuntimeError("injected failure")
            collector.emit([w])


class Words(Function):
    def execute(self, tup: Any, collector: Any) -> None:
        for w in tup["args"].split():
            collector.emit([w])


@pytest.mark.parametrize("kind", ["transactional", "opaque"])
def test_redis_word_count_is_exact_across_a_replay(kind: str, redis_conf: dict[str, Any]
                                                   ) -> None:
    import redis
    client = redis.Redis(host=redis_conf["host"], port=redis_conf["port"], db=redis_conf["db"])
    prefix = redis_conf["key_prefix"]
    split = Split()
    split.tag = prefix
    ARMED.add(prefix)
    state = getattr(RedisMapState, kind)(host=redis_conf["host"], port=redis_conf["port"],
                                         db=redis_conf["db"], key_prefix=prefix)
    expected = Counter(w for (s,) in SENTENCES for w in s.split())
    conf = {"topology.trident.batch.emit.interval.millis": 5, "topology.max.spout.pending": 2}
    with LocalCluster() as cluster, LocalDRPC({"drpc.request.timeout.secs": 60}) as drpc:
        t = TridentTopology()
        counts = (t.new_stream("sentences", FixedBatchSpout(["sentence"], 1, SENTENCES))
                  .each(["sentence"], split, ["word"])
                  .shuffle().parallelism_hint(2)
                  .group_by(["word"])
                  .persistent_aggregate(state, Count(), ["count"]).parallelism_hint(2))
        (t.new_drpc_stream("words", drpc).each(["args"], Words(), ["word"])
         .group_by(["word"]).state_query(counts, ["word"], MapGet(), ["count"])
         .aggregate(["count"], Sum(), ["sum"]))
        cluster.submit_topology(f"redis-{kind}", conf, t.build())

        backing = RedisBackingMap(**redis_conf)

        def stored() -> dict[str, Any]:
            keys = client.keys(prefix + "*")
            return {json.loads(k[len(prefix):])[0]: backing.decode(k, v)
                    for k, v in zip(keys, client.mget(keys))}
        value = 1 if kind == "transactional" else 2      # [txid, v] or [txid, prev, v]
        wait_until(lambda: {w: s[value] for w, s in stored().items()} == expected,
                   timeout=60, message="exact counts in Redis")
        assert prefix not in ARMED                      # the failure did happen
        layout = stored()
        # "boom" is only in txid 3; "the" last changed in txid 3 (4 before it)
        assert layout["boom"] == ([3, 1] if kind == "transactional" else [3, None, 1])
        assert layout["the"] == ([3, 5] if kind == "transactional" else [3, 4, 5])
        assert json.loads(drpc.execute("words", "the to nosuch")) == [[8]]


#: tag -> the txids a TxidsSpout was told every state wrote
ACKED_TXIDS: dict[str, list[int]] = {}


class TxidsSpout(FixedBatchSpout):
    tag = ""

    def ack(self, txid: int) -> None:
        ACKED_TXIDS.setdefault(self.tag, []).append(txid)


def test_a_topology_of_a_redis_state_submitted_again_under_its_name_goes_on(
        redis_conf: dict[str, Any]) -> None:
    """Its state outlives it, so what its coordinator kept does too: the next run under the
    same name goes on after the last committed txid, and the counts stay exact."""
    import redis
    client = redis.Redis(host=redis_conf["host"], port=redis_conf["port"], db=redis_conf["db"])
    prefix = redis_conf["key_prefix"]
    expected = Counter(w for (s,) in SENTENCES for w in s.split())
    backing = RedisBackingMap(**redis_conf)

    def counts() -> dict[str, Any]:
        keys = client.keys(prefix + "*")
        return {json.loads(k[len(prefix):])[0]: backing.decode(k, v)[1]
                for k, v in zip(keys, client.mget(keys))}
    conf = {"topology.trident.batch.emit.interval.millis": 5}
    name = f"again-{uuid.uuid4().hex[:8]}"
    with LocalCluster() as cluster:
        for run in range(2):
            spout = TxidsSpout(["sentence"], 1, SENTENCES)
            spout.tag = f"{prefix}{run}"
            t = TridentTopology()
            (t.new_stream("sentences", spout).each(["sentence"], Split(), ["word"])
             .group_by(["word"]).persistent_aggregate(RedisMapState(**redis_conf), Count(),
                                                      ["count"]))
            cluster.submit_topology(name, conf, t.build())
            # as many batches as the sentences committed in this run: each one, if it
            # started over at txid 1
            wait_until(lambda tag=spout.tag: len(ACKED_TXIDS.get(tag, [])) >= len(SENTENCES),
                       timeout=60, message=f"run {run}: too few batches committed")
            assert counts() == expected
            cluster.kill_topology(name)
            assert cluster.state.store.exists(f"/trident/{name}")
    assert ACKED_TXIDS[f"{prefix}0"][0] == 1
    assert ACKED_TXIDS[f"{prefix}1"][0] > len(SENTENCES)        # went on after run 0


def test_an_unreachable_redis_fails_batches_with_a_state_error() -> None:
    factory = RedisMapState.transactional(host="127.0.0.1", port=1, key_prefix="x:")
    state = factory.make_state()
    with pytest.raises(StateError, match="redis map state"):
        state.multi_get([("a",)])


# -- values and keys beyond JSON -----------------------------------------------------------------
#: values JSON would change (int dict keys, tuples) or refuse; each must come back as it was
VALUES: list[Any] = [
    {2: 2, 3: 1}, ("a", (1, 2)), Decimal("0.10"), dt.date(2024, 2, 29), {"x", "y"},
    b"\x00\xff", uuid.UUID(int=7), [1, "two", None, 1.5, True], {"nested": {1: (2, 3)}},
]


def _client(redis_conf: dict[str, Any]) -> Any:
    import redis
    return redis.Redis(host=redis_conf["host"], port=redis_conf["port"], db=redis_conf["db"])


@pytest.mark.parametrize("kind", ["transactional", "opaque", "non_transactional"])
def test_values_come_back_as_they_were_stored(kind: str, redis_conf: dict[str, Any]) -> None:
    factory = getattr(RedisMapState, kind)(**redis_conf)
    state = factory.make_state()
    keys = [(i,) for i in range(len(VALUES))]
    state.begin_commit(1)
    state.multi_put(keys, VALUES)
    state.commit(1)
    got = factory.make_state().multi_get(keys)     # read by another task
    assert got == VALUES
    assert [type(v) for v in got] == [type(v) for v in VALUES]
    assert type(got[1][1]) is tuple and type(got[8]["nested"][1]) is tuple


def test_a_combined_dict_with_int_keys_keeps_every_count(redis_conf: dict[str, Any]) -> None:
    state = RedisMapState.transactional(**redis_conf).make_state()

    def combine(new: dict[int, int]) -> Any:
        return lambda old: {k: (old or {}).get(k, 0) + new.get(k, 0)
                            for k in {*(old or {}), *new}}
    for txid, lengths in enumerate([{2: 1}, {2: 1, 3: 1}, {3: 2}], start=1):
        state.begin_commit(txid)
        state.multi_update([("a",)], [combine(lengths)])
        state.commit(txid)
    assert state.multi_get([("a",)]) == [{2: 2, 3: 3}]


@pytest.mark.parametrize("kind", ["transactional", "opaque"])
def test_a_replayed_txid_reads_its_stored_txid_back(kind: str, redis_conf: dict[str, Any]
                                                   ) -> None:
    state = getattr(RedisMapState, kind)(**redis_conf).make_state()

    def add(d: str) -> Any:
        return lambda old: (old or Decimal(0)) + Decimal(d)
    for txid, d in [(1, "0.1"), (2, "0.2"), (2, "0.2")]:     # txid 2 replayed
        state.begin_commit(txid)
        state.multi_update([(Decimal("1.5"),)], [add(d)])
        state.commit(txid)
    # transactional: the replay is skipped; opaque: applied again to the previous value
    assert state.multi_get([(Decimal("1.5"),)]) == [Decimal("0.3")]


#: keys not named by their JSON, and how a query may give each of them (a tuple crossed
#: workers as a list; a set or dict in another order)
KEYS: list[tuple[tuple[Any, ...], tuple[Any, ...]]] = [
    ((Decimal("0.10"),), (Decimal("0.10"),)),
    ((dt.date(2024, 1, 1), "a"), (dt.date(2024, 1, 1), "a")),
    ((b"\x00",), (b"\x00",)),
    ((frozenset({"x", "y", "z"}),), ({"z", "y", "x"},)),
    ((uuid.UUID(int=1),), (uuid.UUID(int=1),)),
    ((("a", Decimal(1)),), (["a", Decimal(1)],)),
    (({"b": 1, 2: ("x",)},), ({2: ["x"], "b": 1},)),
    (({"1": "x"},), ({"1": "x"},)),     # another key than {1: "x"}
]


def test_keys_of_any_type_the_serializer_carries(redis_conf: dict[str, Any]) -> None:
    factory = RedisMapState.transactional(**redis_conf)
    state = factory.make_state()
    state.begin_commit(1)
    plain = [("a", 1), ("a", 1.0), ("a", True), ("b", [1, ("c", None)])]
    state.multi_put([k for k, _ in KEYS] + plain, list(range(len(KEYS) + len(plain))))
    state.commit(1)
    assert factory.make_state().multi_get([q for _, q in KEYS]) == list(range(len(KEYS)))
    # keys of str, numbers, bools, None, lists keep the names they always had
    client, prefix = _client(redis_conf), redis_conf["key_prefix"]
    names = ['["a",1]', '["a",1.0]', '["a",true]', '["b",[1,["c",null]]]']
    assert client.mget([prefix + n for n in names]) == [
        RedisBackingMap(**redis_conf).encode(k, [1, i])
        for i, k in enumerate(plain, start=len(KEYS))]


def test_a_set_key_has_the_same_name_in_every_process(redis_conf: dict[str, Any]) -> None:
    code = ("import sys; from squall.trident.state.redis import RedisBackingMap; "
            "m = RedisBackingMap(host='127.0.0.1', port=1, db=0, key_prefix='p:'); "
            "sys.stdout.write(m.key_name((frozenset('abcdefghijklmnop'), 'k')).hex())")
    names = {subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                            text=True, env={**os.environ, "PYTHONHASHSEED": seed}).stdout
             for seed in ("1", "2", "3")}
    assert len(names) == 1 and names != {""}


def test_values_stored_as_json_before_are_read_and_updated(redis_conf: dict[str, Any]
                                                          ) -> None:
    client, prefix = _client(redis_conf), redis_conf["key_prefix"]
    client.set(prefix + '["old"]', json.dumps([4, {"n": 3}]))     # as values were written
    client.set(prefix + '["opaque"]', json.dumps([4, 1, 2]))
    state = RedisMapState.transactional(**redis_conf).make_state()
    assert state.multi_get([("old",), ("new",)]) == [{"n": 3}, None]
    state.begin_commit(5)
    assert state.multi_update([("old",)], [lambda old: {**old, 7: (1, 2)}]) == [
        {"n": 3, 7: (1, 2)}]
    state.commit(5)
    assert state.multi_get([("old",)]) == [{"n": 3, 7: (1, 2)}]
    assert RedisMapState.opaque(**redis_conf).make_state().multi_get([("opaque",)]) == [2]


#: values JSON gives back as they were, and the bytes earlier releases wrote for them as the
#: transactional state's [txid, value] (json.dumps with its default separators)
PLAIN: list[tuple[Any, bytes]] = [
    (5, b"[1, 5]"), (-2.5, b"[1, -2.5]"), (float("inf"), b"[1, Infinity]"),
    ("\u00e9t\u00e9", b'[1, "\\u00e9t\\u00e9"]'), (None, b"[1, null]"), (True, b"[1, true]"),
    ([1, [2.0, "x"], False], b'[1, [1, [2.0, "x"], false]]'),
    ({"n": 3, "m": [None]}, b'[1, {"n": 3, "m": [null]}]'),
    (2 ** 70, b"[1, 1180591620717411303424]"),        # beyond msgpack's 64 bits
]


@pytest.mark.parametrize("kind", ["transactional", "opaque", "non_transactional"])
def test_plain_values_are_stored_as_the_json_earlier_releases_read(
        kind: str, redis_conf: dict[str, Any]) -> None:
    factory = getattr(RedisMapState, kind)(**redis_conf)
    state = factory.make_state()
    values = [v for v, _ in PLAIN]
    keys = [("k", i) for i in range(len(PLAIN))]
    state.begin_commit(1)
    state.multi_put(keys, values)
    state.commit(1)
    client, prefix = _client(redis_conf), redis_conf["key_prefix"]
    raw = client.mget([f'{prefix}["k",{i}]' for i in range(len(PLAIN))])
    expected = [{"transactional": stored, "opaque": b"[1, null, " + stored[4:],
                 "non_transactional": stored[4:-1]}[kind] for _, stored in PLAIN]
    assert raw == expected
    got = factory.make_state().multi_get(keys)
    assert got == values and [type(v) for v in got] == [type(v) for v in values]


def test_values_json_changes_are_stored_in_the_serializers_format(
        redis_conf: dict[str, Any]) -> None:
    client, prefix = _client(redis_conf), redis_conf["key_prefix"]
    factory = RedisMapState.transactional(**redis_conf)
    state = factory.make_state()
    keys = [("v", i) for i in range(len(VALUES))]
    state.begin_commit(1)
    state.multi_put(keys, VALUES)
    state.commit(1)
    raw = client.mget([f'{prefix}["v",{i}]' for i in range(len(VALUES))])
    # [1, "two", None, 1.5, True] is plain JSON; every other one needs the serializer
    assert [r[:1] == FORMAT for r in raw] == [not isinstance(v, list) for v in VALUES]
    assert raw[VALUES.index([1, "two", None, 1.5, True])] == b'[1, [1, "two", null, 1.5, true]]'
    assert factory.make_state().multi_get(keys) == VALUES


def test_a_serializer_that_gives_tuples_back_as_lists_stores_them_as_json(
        redis_conf: dict[str, Any]) -> None:
    backing = RedisBackingMap(**redis_conf, serializer=JsonSerializer())
    backing.multi_put([("t",), ("d",)], [[1, ("a", (2, 3))], [1, Decimal("0.5")]])
    raw = _client(redis_conf).mget([redis_conf["key_prefix"] + n for n in ('["t"]', '["d"]')])
    assert raw[0] == b'[1, ["a", [2, 3]]]' and raw[1][:1] == FORMAT
    assert backing.multi_get([("t",), ("d",)]) == [[1, ["a", [2, 3]]], [1, Decimal("0.5")]]


class Unregistered:
    """A type no serializer was told about."""


def test_a_value_the_serializer_refuses_is_one_state_error_and_writes_nothing(
        redis_conf: dict[str, Any]) -> None:
    prefix = redis_conf["key_prefix"]
    state = RedisMapState.transactional(**redis_conf).make_state()
    state.begin_commit(1)
    with pytest.raises(StateError, match=rf"redis map state '{re.escape(prefix)}': cannot "
                                         rf"store the value of key \('b',\).*Unregistered"):
        state.multi_put([("a",), ("b",)], [1, Unregistered()])
    state.commit(1)
    assert _client(redis_conf).keys(prefix + "*") == []


# -- in a topology: its serializer, and the error a state reports -------------------------------
ROWS = [["a", "xx", "0.10"], ["a", "yyy", "0.20"], ["b", "z", "0.10"]] * 2


class Lengths(CombinerAggregator):
    """Per key: {length of a word: how many} (a dict with int keys)."""

    def init(self, tup: Any) -> dict[int, int]:
        return {len(tup["w"]): 1}

    def combine(self, a: dict[int, int], b: dict[int, int]) -> dict[int, int]:
        return {k: a.get(k, 0) + b.get(k, 0) for k in {*a, *b}}

    def zero(self) -> dict[int, int]:
        return {}


class Boxed(CombinerAggregator):
    """A value of a type the serializer refuses."""

    def init(self, tup: Any) -> Unregistered:
        return Unregistered()

    def combine(self, a: Unregistered, b: Unregistered) -> Unregistered:
        return a

    def zero(self) -> Unregistered:
        return Unregistered()


class Typed(Function):
    """price as a Decimal, and a third of it as a Fraction (a type the topology registers)."""

    def execute(self, tup: Any, collector: Any) -> None:
        price = Decimal(tup["price"])
        collector.emit([price, Fraction(price) / 3])


class Arg(Function):
    def execute(self, tup: Any, collector: Any) -> None:
        collector.emit([Decimal(tup["args"]) if tup["args"][0].isdigit() else tup["args"]])


class Repr(Function):
    def execute(self, tup: Any, collector: Any) -> None:
        collector.emit([repr(tup["v"])])


def test_a_topology_stores_what_its_serializer_carries(redis_conf: dict[str, Any]) -> None:
    state = RedisMapState.transactional(**redis_conf)
    conf = {"topology.trident.batch.emit.interval.millis": 5,
            "topology.serializer.register": {
                "fractions:Fraction": ["builtins:str", "fractions:Fraction"]}}
    with LocalCluster() as cluster, LocalDRPC({"drpc.request.timeout.secs": 30}) as drpc:
        t = TridentTopology()
        s = (t.new_stream("s", FixedBatchSpout(["k", "w", "price"], 2, ROWS))
             .each(["price"], Typed(), ["dprice", "third"]))
        lengths = s.group_by(["k"]).persistent_aggregate(state, ["w"], Lengths(), ["h"])
        thirds = s.group_by(["dprice"]).persistent_aggregate(
            RedisMapState.transactional(**{**redis_conf,
                                           "key_prefix": redis_conf["key_prefix"] + "t:"}),
            ["third"], Sum(), ["total"])
        for name, queried in [("lengths", lengths), ("thirds", thirds)]:
            (t.new_drpc_stream(name, drpc).each(["args"], Arg(), ["key"]).group_by(["key"])
             .state_query(queried, ["key"], MapGet(), ["v"]).each(["v"], Repr(), ["repr"])
             .project(["repr"]))
        cluster.submit_topology("redis-typed", conf, t.build())
        wait_until(lambda: json.loads(drpc.execute("lengths", "b")) == [["{1: 2}"]],
                   timeout=30, message="every batch committed")
        assert json.loads(drpc.execute("lengths", "a")) == [["{2: 2, 3: 2}"]]
        assert json.loads(drpc.execute("thirds", "0.10")) == [["Fraction(2, 15)"]]


def test_a_value_the_serializer_refuses_is_the_components_error(redis_conf: dict[str, Any]
                                                                ) -> None:
    prefix = redis_conf["key_prefix"]
    with LocalCluster() as cluster:
        t = TridentTopology()
        (t.new_stream("s", FixedBatchSpout(["k", "w", "price"], 2, ROWS))
         .group_by(["k"]).persistent_aggregate(RedisMapState.transactional(**redis_conf),
                                               ["w"], Boxed(), ["b"]))
        cluster.submit_topology("redis-refused",
                                {"topology.trident.batch.emit.interval.millis": 5}, t.build())

        def reported() -> list[str]:
            errors = cluster.get_topology_info("redis-refused")["errors"]
            return [e["error"] for errs in errors.values() for e in errs
                    if f"redis map state {prefix!r}" in e["error"]]
        error = wait_until(reported, timeout=30, message="the state's error reported")[0]
        assert "cannot serialize an object of type Unregistered" in error


@pytest.fixture()
def unanswering() -> Iterator[int]:
    """The port of a Redis that stopped answering (paused, or its host frozen): the kernel
    accepts the connection and nothing ever replies."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        yield silent.getsockname()[1]


def test_a_redis_that_stops_answering_fails_the_call_within_the_timeout(unanswering: int
                                                                        ) -> None:
    # the worker's loop is not held: the StateError fails the batch, which is replayed
    options = RedisMapState.opaque(port=unanswering, key_prefix="hung:", timeout=0.5).options
    backing = RedisBackingMap(**options)
    try:
        for call in (lambda: backing.multi_get([("the",)]),
                     lambda: backing.multi_put([("the",)], [[1, None, 3]])):
            began = time.monotonic()
            with pytest.raises(StateError, match=r"redis map state 'hung:': .*[Tt]imeout"):
                call()
            assert time.monotonic() - began < 5
    finally:
        backing.close()


def test_the_timeout_must_be_seconds_above_zero() -> None:
    assert RedisMapState().options["timeout"] == 2
    for bad in (0, -1, "2", True):
        with pytest.raises(ValueError, match="RedisMapState: timeout must be a number of "
                                             "seconds above 0"):
            RedisMapState.transactional(timeout=bad)
