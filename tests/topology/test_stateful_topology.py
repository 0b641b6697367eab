"""Stateful bolts in a LocalCluster (API.md section 11): exact committed counts with a
replaying spout and failing bolts, across a rebalance, while deactivated, and while Redis is
down."""
from __future__ import annotations

import collections
import logging
import threading
import time
import uuid
from typing import Any

import pytest

from squall import Bolt, LocalCluster, Spout, StatefulBolt, TopologyBuilder
from squall.errors import StateProviderError
from squall.serializers.msgpack import MsgpackSerializer
from squall.stateful.memory import MemoryStateProvider
from squall.runtime.memory_stores import MemoryStores
from squall.stateful.provider import StateProvider, namespace
from squall.testing.waiting import wait_until
from tests.topology.conftest import install_driver

WORDS = ["cow", "moon", "apple", "snow", "dwarf", "cow", "moon", "cow"]
_LOCK = threading.Lock()
#: test key -> what the components of that test's topology report (one process: LocalCluster)
ACKED: dict[str, list[int]] = collections.defaultdict(list)
FAILED_ONCE: dict[str, set[Any]] = collections.defaultdict(set)
FAILS: dict[str, int] = collections.defaultdict(int)
#: per test key: tup_id -> how many times the spout was told it failed
FAILS_BY_ID: dict[str, collections.Counter[int]] = collections.defaultdict(collections.Counter)
#: ids emitted and neither acked nor failed yet
IN_FLIGHT: dict[str, set[int]] = collections.defaultdict(set)
#: per test key: what was in flight when the spout was deactivated
AT_DEACTIVATE: dict[str, set[int]] = {}


def expected(total: int) -> dict[str, int]:
    return dict(collections.Counter(WORDS[i % len(WORDS)] for i in range(total)))


class ReplayingWords(Spout):
    """Emits ``[word, i]`` for i < test.total with tup_id i (those not acked yet, when it
    starts again); replays what fails."""
    outputs = ["word", "i"]

    def initialize(self, conf, context):
        self.key = conf["test.key"]
        with _LOCK:         # a restarted instance (rebalance) carries on where acks stopped
            done = set(ACKED[self.key])
        self.todo = collections.deque(i for i in range(int(conf["test.total"])) if i not in done)
        rate = float(conf.get("test.rate") or 0)
        self.gap = 1.0 / rate if rate else 0.0
        self.next_at = 0.0

    def next_tuple(self):
        if self.todo:
            if self.gap:
                now = time.monotonic()
                if now < self.next_at:
                    return
                self.next_at = now + self.gap
            i = self.todo.popleft()
            with _LOCK:
                IN_FLIGHT[self.key].add(i)
            self.emit([WORDS[i % len(WORDS)], i], tup_id=i)

    def ack(self, tup_id):
        with _LOCK:
            ACKED[self.key].append(tup_id)
            IN_FLIGHT[self.key].discard(tup_id)

    def fail(self, tup_id):
        with _LOCK:
            FAILS[self.key] += 1
            FAILS_BY_ID[self.key][tup_id] += 1
            IN_FLIGHT[self.key].discard(tup_id)
        self.todo.append(tup_id)

    def deactivate(self):
        with _LOCK:         # what was in flight the moment the spout stopped
            AT_DEACTIVATE[self.key] = set(IN_FLIGHT[self.key])


class FailsOnce(Bolt):
    """Passes words on; fails every tup_id % 7 == 3 the first time it sees it."""
    outputs = ["word", "i"]

    def initialize(self, conf, context):
        self.key = conf["test.key"]

    def process(self, tup):
        word, i = tup.values
        with _LOCK:
            first = i % 7 == 3 and ("fwd", i) not in FAILED_ONCE[self.key]
            if first:
                FAILED_ONCE[self.key].add(("fwd", i))
        if first:
            raise RuntimeError(f"failing {i} once")
        self.emit([word, i])


class WordCounter(StatefulBolt):
    outputs = ["word", "count"]

    def initialize(self, conf, context):
        self.key = conf["test.key"]
        #: fails some inputs once: "before" changing the state (raising), "after" (raising),
        #: or by calling fail after changing it ("fail")
        self.fail_own = conf.get("test.counter.fails") or ""
        #: the inputs it fails are those with i % every == 5
        self.every = int(conf.get("test.counter.fails.every") or 11)

    def init_state(self, state):
        self.counts = state

    def process(self, tup):
        word, i = tup.values
        first = False
        if self.fail_own and i % self.every == 5:
            with _LOCK:
                first = ("count", i) not in FAILED_ONCE[self.key]
                FAILED_ONCE[self.key].add(("count", i))
        if first and self.fail_own == "before":
            raise RuntimeError(f"counter fails {i} once")
        n = self.counts.get(word, 0) + 1
        self.counts.put(word, n)
        if first and self.fail_own == "after":
            raise RuntimeError(f"counter fails {i} once, its count changed")
        if first and self.fail_own == "fail":
            self.fail(tup)
            return
        self.emit([word, n])


def wordcount(counters: int = 2) -> Any:
    b = TopologyBuilder()
    b.set_spout("words", ReplayingWords)
    b.set_bolt("flaky", FailsOnce, parallelism=2).shuffle_grouping("words")
    b.set_bolt("count", WordCounter, parallelism=counters).fields_grouping("flaky", ["word"])
    return b


def counts_in(provider: StateProvider, name: str, tasks: list[int]) -> dict[str, int]:
    """Word -> count summed over the committed state of topology ``name``'s count tasks in
    ``provider``."""
    ser = MsgpackSerializer({})
    out: collections.Counter[str] = collections.Counter()
    for index in range(len(tasks)):
        _, data = provider.load(namespace(name, "count", index))
        out.update({ser.loads(k): ser.loads(v) for k, v in data.items()})
    return dict(out)


def committed_counts(cluster: LocalCluster, prefix: str, name: str,
                     tasks: list[int]) -> dict[str, int]:
    """:func:`counts_in` the memory provider of the running topology ``name`` (its workers'
    stores)."""
    stores = cluster.workers(name)[0].memory_stores
    return counts_in(MemoryStateProvider({"key_prefix": prefix}, stores), name, tasks)


@pytest.mark.parametrize("workers, counter_fails", [
    (1, ""), (2, "before"), (1, "after"), (2, "fail")],
    ids=["one-worker", "two-workers-counter-fails", "counter-fails-after-changing-its-state",
         "counter-fails-its-input-after-changing-its-state"])
def test_stateful_word_count_is_exact_with_replays_and_failures(cluster, workers,
                                                                counter_fails):
    key = uuid.uuid4().hex
    total = 1000
    topology = wordcount().create_topology()
    conf = {"test.key": key, "test.total": total, "topology.workers": workers,
            "test.rate": 2500,              # over several checkpoints
            "test.counter.fails": counter_fails,
            # a counter's failure rolls its task back a whole checkpoint (each one fails the
            # inputs since the last prepare): 24 of them, where every 11th input's took 5 s
            "test.counter.fails.every": 41,
            "topology.state.provider.config": {"key_prefix": key},
            "topology.state.checkpoint.interval.ms": 100}
    cluster.submit_topology("swc", conf, topology)
    wait_until(lambda: len(set(ACKED[key])) == total, timeout=60,
               message="not every word was acked")
    assert sorted(ACKED[key]) == list(range(total)), "a word was acked twice"
    assert any(i % 7 == 3 for _, i in FAILED_ONCE[key]), "nothing was failed"
    counts = committed_counts(cluster, key, "swc", topology.tasks("count"))
    assert counts == expected(total)


def test_a_counter_waiting_for_its_recovery_fails_each_input_once_not_in_a_loop(cluster):
    # the counter fails one input after changing its state: the inputs it processed since
    # the last prepare fail, and until the next checkpoint's recover its task keeps what
    # comes (failed once then), where it used to fail each at once and the spout replayed
    # it straight back, thousands of times a word
    key = uuid.uuid4().hex
    total = 400
    b = TopologyBuilder()
    b.set_spout("words", ReplayingWords)
    b.set_bolt("count", WordCounter, parallelism=2).fields_grouping("words", ["word"])
    topology = b.create_topology()
    conf = {"test.key": key, "test.total": total, "test.counter.fails": "after",
            "test.counter.fails.every": total,     # input 5 alone
            "topology.state.provider.config": {"key_prefix": key},
            "topology.state.checkpoint.interval.ms": 300}
    cluster.submit_topology("defer", conf, topology)
    wait_until(lambda: len(set(ACKED[key])) == total, timeout=60,
               message="not every word was acked")
    assert sorted(ACKED[key]) == list(range(total)), "a word was acked twice"
    with _LOCK:
        fails = FAILS_BY_ID[key]
        assert fails, "nothing failed"
        # at most: at the first recover (had it come before it), at the failure, and at the
        # recover after the failure (had its replay come before that)
        assert max(fails.values()) <= 3, f"an input failed {max(fails.values())} times"
    counts = committed_counts(cluster, key, "defer", topology.tasks("count"))
    assert counts == expected(total)


TICKS: dict[str, int] = collections.defaultdict(int)


class Thrice(Bolt):
    """Emits each word three times, anchored to its input: consecutive tuples of one tree at
    the counter (the runs its pass folds once)."""
    outputs = ["word", "i"]

    def process(self, tup):
        for _ in range(3):
            self.emit(list(tup.values))


class TickingCounter(WordCounter):
    def process_tick(self, tup):
        with _LOCK:
            TICKS[self.key] += 1


def test_runs_of_one_tree_and_tick_tuples_keep_counts_exact(cluster):
    key = uuid.uuid4().hex
    total = 600
    b = TopologyBuilder()
    b.set_spout("words", ReplayingWords)
    b.set_bolt("flaky", FailsOnce).shuffle_grouping("words")
    b.set_bolt("thrice", Thrice).shuffle_grouping("flaky")
    b.set_bolt("count", TickingCounter, config={"topology.tick.tuple.freq.secs": 0.05}
               ).fields_grouping("thrice", ["word"])
    topology = b.create_topology()
    conf = {"test.key": key, "test.total": total, "test.rate": 1500,
            "topology.state.provider.config": {"key_prefix": key},
            "topology.state.checkpoint.interval.ms": 100}
    cluster.submit_topology("runs", conf, topology)
    wait_until(lambda: len(set(ACKED[key])) == total, timeout=60,
               message="not every word was acked")
    assert sorted(ACKED[key]) == list(range(total)), "a word was acked twice"
    assert TICKS[key] > 0, "the counter got no tick tuple"
    counts = committed_counts(cluster, key, "runs", topology.tasks("count"))
    assert counts == {w: 3 * n for w, n in expected(total).items()}


class LateCounter(WordCounter):
    """Counts as WordCounter (auto_ack on), and acks (``test.late`` "fail": fails) each
    input again on its next call, after auto_ack held its ack for the commit."""

    def initialize(self, conf, context):
        super().initialize(conf, context)
        self.late = self.fail if conf["test.late"] == "fail" else self.ack
        self.kept = None

    def process(self, tup):
        if self.kept is not None:
            self.late(self.kept)
        self.kept = tup
        super().process(tup)


@pytest.mark.parametrize("late", ["ack", "fail"])
def test_an_ack_or_fail_after_auto_ack_changes_nothing(cluster, late):
    # the pass folded each input's ack without marking it settled: the late ack folded it
    # again (its tree timed out after the commit and replayed, again and again), the late
    # fail failed its tree and rolled the state back
    key = uuid.uuid4().hex
    total = 200
    b = TopologyBuilder()
    b.set_spout("words", ReplayingWords)
    b.set_bolt("count", LateCounter).fields_grouping("words", ["word"])
    topology = b.create_topology()
    conf = {"test.key": key, "test.total": total, "test.late": late,
            "topology.state.provider.config": {"key_prefix": key},
            "topology.state.checkpoint.interval.ms": 100, "topology.message.timeout.secs": 5}
    cluster.submit_topology("late", conf, topology)
    wait_until(lambda: len(set(ACKED[key])) == total, timeout=30,
               message=lambda: f"{len(set(ACKED[key]))} of {total} words acked, "
                               f"{FAILS[key]} fails")
    assert sorted(ACKED[key]) == list(range(total)), "a word was acked twice"
    with _LOCK:     # at most the one fail of an input that came before the first recover
        assert max(FAILS_BY_ID[key].values(), default=0) <= 1, FAILS_BY_ID[key]
    assert committed_counts(cluster, key, "late", topology.tasks("count")) == expected(total)


def test_rebalance_moving_stateful_tasks_keeps_counts_exact(cluster):
    key = uuid.uuid4().hex
    total = 1500
    topology = wordcount(counters=2).create_topology()
    conf = {"test.key": key, "test.total": total, "test.rate": 400, "topology.workers": 2,
            "topology.state.provider.config": {"key_prefix": key},
            "topology.state.checkpoint.interval.ms": 200, "topology.message.timeout.secs": 10}
    cluster.submit_topology("moved", conf, topology)
    wait_until(lambda: len(set(ACKED[key])) >= 300, timeout=60, message="nothing was acked")
    cluster.rebalance("moved", num_workers=1, executors={"count": 1}, wait=1)
    assert len(set(ACKED[key])) < total, "the stream ended before the rebalance"
    wait_until(lambda: len(set(ACKED[key])) == total, timeout=90,
               message="not every word was acked after the rebalance")
    assert sorted(ACKED[key]) == list(range(total)), "a word was acked twice"
    assert committed_counts(cluster, key, "moved", topology.tasks("count")) == expected(total)


class Sink(Bolt):
    outputs: list[str] = []

    def process(self, tup):
        pass


def run_to_end(cluster: Any, name: str, conf: dict[str, Any], topology: Any) -> None:
    cluster.submit_topology(name, conf, topology)
    wait_until(lambda: len(set(ACKED[conf["test.key"]])) == conf["test.total"], timeout=60,
               message="not every word was acked")
    cluster.kill_topology(name)


#: the stores of the "kept" provider: the memory provider over stores that outlive the
#: topologies, as a redis server does (the memory provider's state goes with its topology)
KEPT = MemoryStores()


class KeptProvider(MemoryStateProvider):
    def __init__(self, conf: dict[str, Any], stores: MemoryStores | None = None) -> None:
        super().__init__(conf, KEPT)


@pytest.mark.parametrize("backend", ["kept", pytest.param("redis", marks=pytest.mark.integration)])
def test_a_resubmit_with_a_component_added_before_the_stateful_one_resumes_its_state(
        cluster, tmp_path, monkeypatch, backend):
    # "alerts" sorts before "count": version 2 moves the counters' task ids, not their indexes
    prefix = uuid.uuid4().hex
    server = None
    provider_conf: dict[str, Any] = {"key_prefix": prefix}
    install_driver(monkeypatch, "squall.state_providers", "kept", KeptProvider)
    if backend == "redis":
        from squall.testing.redis_fixtures import RedisServer
        server = RedisServer(tmp_path / "redis")
        server.start()
        provider_conf = server.conf(f"{prefix}:")
    try:
        total = 300
        v1 = wordcount().create_topology()
        b = wordcount()
        b.set_bolt("alerts", Sink, parallelism=2).shuffle_grouping("flaky")
        v2 = b.create_topology()
        assert v1.tasks("count") != v2.tasks("count")
        for version in (v1, v2):
            conf = {"test.key": uuid.uuid4().hex, "test.total": total, "test.rate": 1500,
                    "topology.state.provider": backend,
                    "topology.state.provider.config": provider_conf,
                    "topology.state.checkpoint.interval.ms": 100}
            run_to_end(cluster, "resumed", conf, version)
        if server is None:
            counts = counts_in(KeptProvider(provider_conf), "resumed", v2.tasks("count"))
        else:
            counts = redis_counts(provider_conf, "resumed", v2.tasks("count"))
        assert counts == {w: 2 * n for w, n in expected(total).items()}
    finally:
        if server is not None:
            server.stop()


def test_memory_state_goes_with_its_topology_and_its_local_cluster():
    """The memory provider's state lives as long as its topology in its LocalCluster: a
    topology submitted again after its kill, and the same one in a second LocalCluster of
    the process, start from nothing (the process kept it: the second run went on from the
    first one's counts), and a kill drops it (kept, N killed topologies were N leaks)."""
    total = 200
    topology = wordcount().create_topology()
    tasks = topology.tasks("count")
    for _ in range(2):
        with LocalCluster() as cluster:
            for _ in range(2):
                key = uuid.uuid4().hex
                conf = {"test.key": key, "test.total": total,
                        "topology.state.checkpoint.interval.ms": 50}
                cluster.submit_topology("again", conf, topology)
                wait_until(lambda key=key: len(set(ACKED[key])) == total, timeout=60,
                           message="not every word was acked")
                assert committed_counts(cluster, "", "again", tasks) == expected(total)
                stores = cluster.workers("again")[0].memory_stores
                cluster.kill_topology("again")
                assert counts_in(MemoryStateProvider({}, stores), "again", tasks) == {}


#: test key -> whether the DiesOnce counter had died, and the state its init_state got, per call
DIED: dict[str, list[tuple[bool, dict[Any, Any]]]] = collections.defaultdict(list)


class DiesOnce(WordCounter):
    """A counter that raises once some words were acked: with ``die.on.error`` that ends its
    worker, which its LocalCluster restarts."""

    def init_state(self, state):
        with _LOCK:
            DIED[self.key].append((("died",) in FAILED_ONCE[self.key], dict(state.items())))
        super().init_state(state)

    def process(self, tup):
        with _LOCK:
            die = len(ACKED[self.key]) >= 50 and ("died",) not in FAILED_ONCE[self.key]
            if die:
                FAILED_ONCE[self.key].add(("died",))
        if die:
            raise RuntimeError("the counter ends its worker")
        super().process(tup)


def test_a_worker_its_local_cluster_restarts_resumes_the_memory_state(cluster):
    """Inside a LocalCluster a restarted worker finds what its topology committed (the
    memory state is the topology's, not one worker's)."""
    key = uuid.uuid4().hex
    total = 400
    b = TopologyBuilder()
    b.set_spout("words", ReplayingWords)
    b.set_bolt("count", DiesOnce).fields_grouping("words", ["word"])
    conf = {"test.key": key, "test.total": total, "test.rate": 1000,
            "topology.worker.die.on.error": True,
            "topology.state.checkpoint.interval.ms": 50}
    cluster.submit_topology("restarted", conf, b.create_topology())
    first = cluster.workers("restarted")[0]
    wait_until(lambda: cluster.workers("restarted")[0] is not first, timeout=30,
               message="the worker was not restarted")
    wait_until(lambda: len(set(ACKED[key])) == total, timeout=60,
               message="not every word was acked after the restart")
    with _LOCK:
        after = [state for died, state in DIED[key] if died]
    assert after, "the restarted counter got no state"
    # at least the 50 words acked before the death were committed
    assert sum(after[0].values()) >= 50, after[0]


#: test key -> the state each init_state of TupleKeeper got
SEEN_STATES: dict[str, list[dict[Any, Any]]] = collections.defaultdict(list)


class TupleKeeper(StatefulBolt):
    """Keeps a tuple value (with a nested tuple); fails one input once some were committed
    (acked), so the state rolls back to a committed checkpoint."""
    outputs: list[str] = []

    def initialize(self, conf, context):
        self.key = conf["test.key"]
        self.failed = False

    def init_state(self, state):
        with _LOCK:
            SEEN_STATES[self.key].append(dict(state.items()))
        self.state = state

    def process(self, tup):
        word, i = tup.values
        self.state.put("last", (i, (word,)))
        if not self.failed and len(ACKED[self.key]) >= 20:
            self.failed = True
            raise RuntimeError("failing once to roll back")


def test_a_tuple_value_comes_back_a_tuple_after_a_rollback(cluster):
    key = uuid.uuid4().hex
    total = 200
    b = TopologyBuilder()
    b.set_spout("words", ReplayingWords)
    b.set_bolt("keep", TupleKeeper).shuffle_grouping("words")
    conf = {"test.key": key, "test.total": total, "test.rate": 1000,
            "topology.state.provider.config": {"key_prefix": key},
            "topology.state.checkpoint.interval.ms": 50}
    cluster.submit_topology("tuples", conf, b.create_topology())
    wait_until(lambda: len(set(ACKED[key])) == total, timeout=60,
               message="not every word was acked")
    with _LOCK:
        recovered = [s["last"] for s in SEEN_STATES[key] if "last" in s]
    assert recovered, "no rollback found a committed value"
    assert all(type(v) is tuple and type(v[1]) is tuple for v in recovered), recovered


def test_a_deactivated_topology_still_commits_and_acks_what_is_in_flight(cluster):
    key = uuid.uuid4().hex
    b = TopologyBuilder()
    b.set_spout("words", ReplayingWords)
    b.set_bolt("count", WordCounter).fields_grouping("words", ["word"])
    topology = b.create_topology()
    conf = {"test.key": key, "test.total": 100_000, "test.rate": 500,
            "topology.state.provider.config": {"key_prefix": key},
            "topology.state.checkpoint.interval.ms": 1000}
    cluster.submit_topology("deactivated", conf, topology)
    wait_until(lambda: len(ACKED[key]) >= 50, timeout=60, message="nothing was acked")

    def emitted_since_commit() -> bool:
        # a commit acks every word emitted before its prepare: deactivating right after one
        # could find nothing in flight; the next prepare is a checkpoint interval away
        with _LOCK:
            return len(IN_FLIGHT[key]) >= 20
    wait_until(emitted_since_commit, timeout=30, message="the spout emitted nothing new")
    cluster.deactivate("deactivated")
    wait_until(lambda: key in AT_DEACTIVATE, timeout=30, message="the spout was not deactivated")
    with _LOCK:
        in_flight = AT_DEACTIVATE[key]
        fails = FAILS[key]
    assert in_flight, "nothing was in flight: make the spout faster"
    # the checkpoint spout goes on: every word in flight is committed and acked
    wait_until(lambda: in_flight <= set(ACKED[key]), timeout=30,
               message="words in flight were not acked while deactivated")
    with _LOCK:
        assert not IN_FLIGHT[key] and FAILS[key] == fails
    acked = ACKED[key]
    assert len(set(acked)) == len(acked)
    counts = committed_counts(cluster, key, "deactivated", topology.tasks("count"))
    assert counts == dict(collections.Counter(WORDS[i % len(WORDS)] for i in acked))


class FlakyProvider(MemoryStateProvider):
    """The memory provider, refusing what ``DOWN`` names: "all" calls, or "writes" (it
    reads, so recoveries work and every prepare fails). ``REFUSED`` counts the refusals."""
    DOWN: str = ""
    REFUSED = 0

    def _refuse(self, write: bool) -> None:
        if FlakyProvider.DOWN == "all" or (write and FlakyProvider.DOWN == "writes"):
            with _LOCK:
                FlakyProvider.REFUSED += 1
            raise StateProviderError("flaky state provider: refused")

    def load(self, namespace):
        self._refuse(False)
        return super().load(namespace)

    def txids(self, namespace):
        self._refuse(False)
        return super().txids(namespace)

    def prepare(self, namespace, txid, changes):
        self._refuse(True)
        super().prepare(namespace, txid, changes)

    def commit(self, namespace, txid):
        self._refuse(True)
        super().commit(namespace, txid)


@pytest.mark.parametrize("down", ["all", "writes"])
def test_a_backend_outage_is_one_error_line_per_task_and_one_when_it_ends(
        cluster, monkeypatch, caplog, down):
    """Two executors of two tasks each: each task logs the outage once (not once per
    executor, nor once per recovery that works between prepares that fail) and once when it
    commits again; the checkpoint spout warns once."""
    install_driver(monkeypatch, "squall.state_providers", "flaky", FlakyProvider)
    monkeypatch.setattr(FlakyProvider, "DOWN", "")
    monkeypatch.setattr(FlakyProvider, "REFUSED", 0)
    key = uuid.uuid4().hex
    total = 600
    b = TopologyBuilder()
    b.set_spout("words", ReplayingWords)
    b.set_bolt("count", WordCounter, parallelism=2).set_num_tasks(4).fields_grouping(
        "words", ["word"])
    topology = b.create_topology()
    tasks = topology.tasks("count")
    conf = {"test.key": key, "test.total": total, "test.rate": 300,
            "topology.state.provider": "flaky", "topology.state.provider.config": {
                "key_prefix": key}, "topology.state.checkpoint.interval.ms": 50}
    caplog.set_level(logging.INFO, logger="squall.stateful")
    cluster.submit_topology("flaky", conf, topology)
    wait_until(lambda: len(ACKED[key]) >= 50, timeout=60, message="nothing was acked")

    def lines(level: int, text: str) -> list[str]:
        return [r.getMessage() for r in caplog.records if r.levelno == level
                and r.name.startswith("squall.stateful") and text in r.getMessage()]
    # (a checkpoint may have failed before the outage: the first recover can come too early)
    spout_warnings = len(lines(logging.WARNING, "checkpoint spout"))
    commits_again = len(lines(logging.INFO, "commit again"))
    FlakyProvider.DOWN = down
    # many checkpoint cycles (each task refuses at least one call per cycle)
    wait_until(lambda: FlakyProvider.REFUSED >= 40 * len(tasks), timeout=60,
               message=lambda: f"{FlakyProvider.REFUSED} calls refused")
    errors = lines(logging.ERROR, "of checkpoint")
    assert sorted(int(m.split(" task ")[1].split(":")[0]) for m in errors) == tasks, errors
    assert lines(logging.INFO, "answers again") == []
    assert len(lines(logging.WARNING, "checkpoint spout")) == spout_warnings + 1, \
        lines(logging.WARNING, "")
    FlakyProvider.DOWN = ""
    wait_until(lambda: len(set(ACKED[key])) == total, timeout=60,
               message="not every word was acked after the outage")
    wait_until(lambda: len(lines(logging.INFO, "answers again")) == len(tasks), timeout=30,
               message=lambda: repr(lines(logging.INFO, "")))
    wait_until(lambda: len(lines(logging.INFO, "commit again")) == commits_again + 1,
               timeout=30, message=lambda: repr(lines(logging.INFO, "")))
    assert len(lines(logging.ERROR, "of checkpoint")) == len(tasks)
    assert sorted(ACKED[key]) == list(range(total))
    assert committed_counts(cluster, key, "flaky", tasks) == expected(total)


#: per test key: what each tick of a TickWatcher saw ("no state", "spoiled" or "ok")
TICK_SEEN: dict[str, list[str]] = collections.defaultdict(list)
#: per test key: the ticks a plain bolt of the same tick period got
CLOCK_TICKS: dict[str, int] = collections.defaultdict(int)


class TickClock(Bolt):
    """A plain bolt counting its ticks: the ticks a stateful bolt beside it was sent."""
    outputs: list[str] = []

    def initialize(self, conf, context):
        self.key = conf["test.key"]

    def process(self, tup):
        pass

    def process_tick(self, tup):
        with _LOCK:
            CLOCK_TICKS[self.key] += 1


class TickWatcher(WordCounter):
    """WordCounter that, the first time it sees input 5, marks its state ``spoiled`` and
    raises (its task goes back to the last commit); each tick records what state it sees."""

    def process(self, tup):
        if tup.values[1] == 5:
            with _LOCK:
                first = ("spoil", 5) not in FAILED_ONCE[self.key]
                FAILED_ONCE[self.key].add(("spoil", 5))
            if first:
                self.counts.put("spoiled", True)
                raise RuntimeError("failing 5 once, the state changed")
        super().process(tup)

    def process_tick(self, tup):
        counts = getattr(self, "counts", None)
        seen = "no state" if counts is None else "spoiled" if counts.get("spoiled") else "ok"
        with _LOCK:
            TICK_SEEN[self.key].append(seen)


def ticking(bolt: type, clock: bool = False) -> Any:
    b = TopologyBuilder()
    b.set_spout("words", ReplayingWords)
    tick = {"topology.tick.tuple.freq.secs": 0.05}
    b.set_bolt("count", bolt, config=tick).fields_grouping("words", ["word"])
    if clock:
        b.set_bolt("clock", TickClock, config=tick).shuffle_grouping("words")
    return b.create_topology()


def test_no_tick_reaches_a_stateful_bolt_before_its_first_init_state(cluster, monkeypatch):
    # the backend is down at start: no recovery, so no init_state; its ticks went to
    # process_tick all the same, which raised on the state it did not have
    install_driver(monkeypatch, "squall.state_providers", "flaky", FlakyProvider)
    monkeypatch.setattr(FlakyProvider, "DOWN", "all")
    monkeypatch.setattr(FlakyProvider, "REFUSED", 0)
    key = uuid.uuid4().hex
    total = 20
    conf = {"test.key": key, "test.total": total, "topology.state.provider": "flaky",
            "topology.state.provider.config": {"key_prefix": key},
            "topology.state.checkpoint.interval.ms": 50}
    cluster.submit_topology("tick-no-state", conf, ticking(TickWatcher, clock=True))
    wait_until(lambda: CLOCK_TICKS[key] >= 6, timeout=10, message="no tick came")
    with _LOCK:
        assert TICK_SEEN[key] == []
    FlakyProvider.DOWN = ""
    wait_until(lambda: "ok" in TICK_SEEN[key], timeout=10,
               message=lambda: f"ticks after the recovery: {TICK_SEEN[key]}")
    assert "no state" not in TICK_SEEN[key]


def test_no_tick_sees_the_state_a_failure_discarded_before_its_rollback(cluster):
    # between a failure in process and the rollback (up to a checkpoint interval) ticks ran
    # on the state to be discarded, and emitted from it
    key = uuid.uuid4().hex
    total = 20
    conf = {"test.key": key, "test.total": total,
            "topology.state.provider.config": {"key_prefix": key},
            "topology.state.checkpoint.interval.ms": 500}
    topology = ticking(TickWatcher)
    cluster.submit_topology("tick-spoiled", conf, topology)
    wait_until(lambda: len(set(ACKED[key])) == total, timeout=20,
               message="not every word was acked")
    assert ("spoil", 5) in FAILED_ONCE[key], "nothing failed"
    wait_until(lambda: TICK_SEEN[key].count("ok") >= 2, timeout=10, message="no tick came")
    with _LOCK:
        assert "spoiled" not in TICK_SEEN[key] and "no state" not in TICK_SEEN[key]
    assert committed_counts(cluster, key, "tick-spoiled", topology.tasks("count")) == \
        expected(total)


class Mover(StatefulBolt):
    """Counts inputs in ``pending`` and moves them to ``done`` on ticks (done + pending is
    the inputs counted); the first move raises halfway, after ``done`` changed."""
    outputs: list[str] = []

    def initialize(self, conf, context):
        self.key = conf["test.key"]

    def init_state(self, state):
        self.state = state

    def process(self, tup):
        self.state.put("pending", self.state.get("pending", 0) + 1)

    def process_tick(self, tup):
        pending = self.state.get("pending", 0)
        if not pending:
            return
        self.state.put("done", self.state.get("done", 0) + pending)
        with _LOCK:
            first = "move" not in FAILED_ONCE[self.key]
            FAILED_ONCE[self.key].add("move")
        if first:
            raise RuntimeError("a move failing halfway")
        self.state.put("pending", 0)


def test_an_exception_in_process_tick_rolls_the_state_back(cluster):
    # it used to be reported and the half-made change kept: committed, done counted the
    # pending inputs twice
    key = uuid.uuid4().hex
    total = 50
    conf = {"test.key": key, "test.total": total,
            "topology.state.provider.config": {"key_prefix": key},
            "topology.state.checkpoint.interval.ms": 100}
    topology = ticking(Mover)
    cluster.submit_topology("tick-raises", conf, topology)
    wait_until(lambda: len(set(ACKED[key])) == total, timeout=20,
               message="not every input was acked")
    assert "move" in FAILED_ONCE[key], "no move failed"

    def committed() -> dict[str, int]:
        return committed_counts(cluster, key, "tick-raises", topology.tasks("count"))
    # every input's count is committed (it was acked); once the ticks moved them all
    wait_until(lambda: committed().get("pending", 0) == 0, timeout=10,
               message=lambda: f"committed: {committed()}")
    assert committed() == {"pending": 0, "done": total}


def redis_counts(conf: dict[str, Any], name: str, tasks: list[int]) -> dict[str, int]:
    """Word -> count summed over the count tasks' committed state in Redis."""
    from squall.stateful.redis import RedisStateProvider
    provider = RedisStateProvider(conf)
    try:
        return counts_in(provider, name, tasks)
    finally:
        provider.close()


@pytest.mark.integration
def test_redis_down_logs_one_error_per_task_holds_acks_and_loses_nothing(cluster, tmp_path,
                                                                         caplog):
    from squall.testing.redis_fixtures import RedisServer
    server = RedisServer(tmp_path / "redis", durable=True)     # keeps its data when stopped
    server.start()
    try:
        key = uuid.uuid4().hex
        total = 900
        redis_conf = {**server.conf(f"{key}:"), "timeout": 1}
        b = TopologyBuilder()
        b.set_spout("words", ReplayingWords)
        b.set_bolt("count", WordCounter).set_num_tasks(2).fields_grouping("words", ["word"])
        topology = b.create_topology()
        conf = {"test.key": key, "test.total": total, "test.rate": 300,
                "topology.state.provider": "redis", "topology.state.provider.config": redis_conf,
                "topology.state.checkpoint.interval.ms": 200}
        caplog.set_level(logging.INFO, logger="squall.stateful")
        cluster.submit_topology("redis-down", conf, topology)
        acked = lambda: len(ACKED[key])  # noqa: E731
        wait_until(lambda: acked() >= 100, timeout=60, message="nothing was acked")
        server.stop()

        def errors() -> list[logging.LogRecord]:
            return [r for r in caplog.records if r.levelno >= logging.ERROR
                    and r.name.startswith("squall.stateful")]
        wait_until(lambda: errors(), timeout=30, message="no error was logged")
        # while Redis is down nothing more is acked: inputs are failed and replayed
        fails = FAILS[key]
        wait_until(lambda: FAILS[key] >= fails + 200, timeout=30, message="no replays")
        during = acked()
        fails = FAILS[key]
        wait_until(lambda: FAILS[key] >= fails + 200, timeout=30, message="no replays")
        assert acked() == during < total
        # one executor, two tasks: one line each
        messages = sorted(r.getMessage() for r in errors())
        assert [m.split(":")[0] for m in messages] == [
            f"bolt count task {t}" for t in topology.tasks("count")], messages
        assert all(f"127.0.0.1:{server.port}" in m for m in messages), messages
        server.start()
        wait_until(lambda: len(set(ACKED[key])) == total, timeout=90,
                   message="not every word was acked after Redis came back")
        assert sorted(ACKED[key]) == list(range(total))
        assert redis_counts(redis_conf, "redis-down", topology.tasks("count")) == \
            expected(total)
        assert any("answers again" in r.getMessage() for r in caplog.records)
    finally:
        server.stop()
