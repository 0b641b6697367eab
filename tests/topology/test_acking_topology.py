"""Guaranteed processing end to end: acks, fails, anchoring, timeouts, replay, max pending."""
from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import pytest

from squall import Bolt, LocalCluster, Spout, Stream, TopologyBuilder, TopologyError
from squall.testing import complete_topology, wait_until

from tests.topology.conftest import HoldFive, info_errors, install_driver

LOCK = threading.Lock()
COUNTS: Counter[str] = Counter()
ACKED: list[Any] = []
FAILED: list[Any] = []
EMITTED: list[Any] = []
HELD: list[Any] = []
NOTES: dict[str, Any] = {}
RELEASE = threading.Event()


@pytest.fixture(autouse=True)
def _clear() -> None:
    for x in (COUNTS, ACKED, FAILED, EMITTED, HELD, NOTES):
        x.clear()
    RELEASE.clear()


class Lines(Spout):
    outputs = ["line"]


class Split(Bolt):
    outputs = ["word"]

    def process(self, tup: Any) -> None:
        for word in tup["line"].split():
            self.emit([word])


class Count(Bolt):
    def process(self, tup: Any) -> None:
        with LOCK:
            COUNTS[tup["word"]] += 1


class FailSome(Bolt):
    """Fails every tuple whose word starts with 'bad' (explicitly)."""

    def process(self, tup: Any) -> None:
        if tup["word"].startswith("bad"):
            self.fail(tup)


def wordcount(fail_bad: bool = False) -> Any:
    b = TopologyBuilder()
    b.set_spout("lines", Lines, 2)
    b.set_bolt("split", Split, 2).shuffle_grouping("lines")
    b.set_bolt("count", Count, 3).fields_grouping("split", ["word"])
    if fail_bad:
        b.set_bolt("check", FailSome, 2).shuffle_grouping("split")
    return b.create_topology()


def test_every_tree_acked_and_counts_exact() -> None:
    lines = [["the cow jumped over the moon"], ["the man went to the store"]] * 20
    result = complete_topology(wordcount(), {"lines": lines})
    assert result.acked == set(range(40)) and result.failed == set()
    assert COUNTS["the"] == 80 and COUNTS["cow"] == 20 and sum(COUNTS.values()) == 240
    assert sorted(result.tuples("split")) == sorted(
        (w,) for line in lines for w in line[0].split())


def test_explicit_fail_fails_the_spout_tuple() -> None:
    lines = [["good words only"], ["one bad word"], ["fine"], ["bad badder"]]
    result = complete_topology(wordcount(fail_bad=True), {"lines": lines})
    assert result.failed == {1, 3} and result.acked == {0, 2}


class Recorder(Spout):
    """Emits ``squall.test.n`` tuples (ids 0..n-1) once each; records acks and fails."""

    outputs = [Stream(["n"]), Stream(["cmd"], name="control")]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.n = int(conf.get("squall.test.n", 10))
        self.i = 0
        self.released = False

    def next_tuple(self) -> None:
        if self.i < self.n:
            self.emit([self.i], tup_id=self.i)
            with LOCK:
                EMITTED.append((self.i, time.monotonic()))
            self.i += 1
        elif RELEASE.is_set() and not self.released:
            self.released = True
            self.emit(["release"], "control")

    def ack(self, tup_id: Any) -> None:
        with LOCK:
            ACKED.append(tup_id)

    def fail(self, tup_id: Any) -> None:
        with LOCK:
            FAILED.append((tup_id, time.monotonic()))


class Batcher(Bolt):
    """auto_ack off: holds tuples and acks them all when the release command comes."""

    auto_ack = False

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.held: list[Any] = []

    def process(self, tup: Any) -> None:
        if tup.stream == "control":
            NOTES["acked_before_release"] = len(ACKED)
            for t in self.held:
                self.ack(t)
            self.held = []
            return
        self.held.append(tup)
        with LOCK:
            HELD.append(tup["n"])


def submit(cluster: LocalCluster, name: str, builder: TopologyBuilder,
           conf: dict[str, Any] | None = None) -> None:
    cluster.submit_topology(name, conf or {}, builder.create_topology())


def test_explicit_ack_with_auto_ack_off(cluster: LocalCluster) -> None:
    b = TopologyBuilder()
    b.set_spout("spout", Recorder, config={"squall.test.n": 20})
    b.set_bolt("batcher", Batcher).shuffle_grouping("spout").all_grouping("spout", "control")
    submit(cluster, "explicit", b)
    wait_until(lambda: len(HELD) == 20)
    assert ACKED == []                     # held tuples complete nothing
    RELEASE.set()
    wait_until(lambda: len(ACKED) == 20)
    assert sorted(ACKED) == list(range(20)) and FAILED == []
    assert NOTES["acked_before_release"] == 0


class Forward(Bolt):
    outputs = ["n"]

    def process(self, tup: Any) -> None:
        self.emit(list(tup.values))


class Unanchored(Forward):
    auto_anchor = False


class FailAll(Bolt):
    def process(self, tup: Any) -> None:
        raise ValueError(f"cannot handle {tup.values}")


@pytest.mark.parametrize("forward, acked", [(Forward, False), (Unanchored, True)])
def test_auto_anchor(cluster: LocalCluster, forward: type, acked: bool) -> None:
    b = TopologyBuilder()
    b.set_spout("spout", Recorder, config={"squall.test.n": 10})
    b.set_bolt("forward", forward).shuffle_grouping("spout")
    b.set_bolt("fail", FailAll).shuffle_grouping("forward")
    submit(cluster, "anchor", b)
    wait_until(lambda: len(ACKED) + len(FAILED) == 10)
    if acked:       # the downstream failure does not reach an unanchored tree
        assert sorted(ACKED) == list(range(10))
    else:
        assert sorted(i for i, _ in FAILED) == list(range(10))


class Sides(Spout):
    """Emits ('left', k) and ('right', k) for k < 6; ids are (side, k)."""

    outputs = [Stream(["side", "key"]), Stream(["cmd"], name="control")]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.todo = [(s, k) for k in range(6) for s in ("left", "right")]
        self.released = False

    def next_tuple(self) -> None:
        if self.todo:
            side, key = self.todo.pop(0)
            self.emit([side, key], tup_id=f"{side}-{key}")
        elif RELEASE.is_set() and not self.released:
            self.released = True
            self.emit(["release"], "control")

    def ack(self, tup_id: Any) -> None:
        with LOCK:
            ACKED.append(tup_id)

    def fail(self, tup_id: Any) -> None:
        with LOCK:
            FAILED.append(tup_id)


class Join(Bolt):
    """Joins the left and right tuple of a key, anchored to both, then acks both."""

    outputs = ["key"]
    auto_ack = False
    auto_anchor = False

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.waiting: dict[int, Any] = {}

    def process(self, tup: Any) -> None:
        other = self.waiting.pop(tup["key"], None)
        if other is None:
            self.waiting[tup["key"]] = tup
            return
        self.emit([tup["key"]], anchors=[other, tup])
        self.ack(other)
        self.ack(tup)


class Hold(Bolt):
    """Holds joined tuples; on release acks even keys and fails odd ones."""

    auto_ack = False

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.held: list[Any] = []

    def process(self, tup: Any) -> None:
        if tup.stream == "control":
            for t in self.held:
                (self.ack if t["key"] % 2 == 0 else self.fail)(t)
            return
        self.held.append(tup)
        with LOCK:
            HELD.append(tup["key"])


def test_multiple_anchors_join(cluster: LocalCluster) -> None:
    b = TopologyBuilder()
    b.set_spout("sides", Sides)
    b.set_bolt("join", Join, 2).fields_grouping("sides", ["key"])
    b.set_bolt("hold", Hold).shuffle_grouping("join").all_grouping("sides", "control")
    submit(cluster, "join", b)
    wait_until(lambda: len(HELD) == 6)
    # both inputs of every join were acked by the join bolt, yet no tree is complete:
    # each still waits for the joined tuple anchored to it
    assert ACKED == [] and FAILED == []
    RELEASE.set()
    wait_until(lambda: len(ACKED) + len(FAILED) == 12)
    assert sorted(ACKED) == sorted(f"{s}-{k}" for k in (0, 2, 4) for s in ("left", "right"))
    assert sorted(FAILED) == sorted(f"{s}-{k}" for k in (1, 3, 5) for s in ("left", "right"))


class Forward(Bolt):
    """Passes each tuple on, anchored to it (auto anchor and ack)."""

    outputs = ["key"]

    def process(self, tup: Any) -> None:
        self.emit([tup["key"]])


@pytest.mark.parametrize("workers", [1, 2])
def test_a_tuple_of_several_anchors_is_forwarded_like_any_other(cluster: LocalCluster,
                                                                 workers: int) -> None:
    b = TopologyBuilder()
    b.set_spout("sides", Sides)
    b.set_bolt("join", Join, 2).fields_grouping("sides", ["key"])
    b.set_bolt("forward", Forward, 2).shuffle_grouping("join")
    b.set_bolt("hold", Hold).shuffle_grouping("forward").all_grouping("sides", "control")
    submit(cluster, "join-forward", b, {"topology.workers": workers})
    wait_until(lambda: len(HELD) == 6)
    assert ACKED == [] and FAILED == []     # every tree waits for the forwarded tuple
    RELEASE.set()
    wait_until(lambda: len(ACKED) + len(FAILED) == 12, timeout=20,
               message=lambda: f"acked {ACKED}, failed {FAILED}")
    assert sorted(ACKED) == sorted(f"{s}-{k}" for k in (0, 2, 4) for s in ("left", "right"))
    assert sorted(FAILED) == sorted(f"{s}-{k}" for k in (1, 3, 5) for s in ("left", "right"))


class Halves(Bolt):
    """Emits each key twice, anchored to it: two tuples of the same tree."""

    outputs = ["side", "key"]

    def process(self, tup: Any) -> None:
        if tup.stream == "default":
            self.emit(["left", tup["key"]])
            self.emit(["right", tup["key"]])


def test_a_tuple_anchored_to_two_tuples_of_one_tree_keeps_that_tree_waiting(
        cluster: LocalCluster) -> None:
    # the two anchors share their root, so the joined tuple's edge would cancel out there
    b = TopologyBuilder()
    b.set_spout("sides", Sides)
    b.set_bolt("halves", Halves).shuffle_grouping("sides")
    b.set_bolt("join", Join, 2).fields_grouping("halves", ["key"])
    b.set_bolt("hold", Hold).shuffle_grouping("join").all_grouping("sides", "control")
    submit(cluster, "same-tree", b, {"topology.workers": 2})
    wait_until(lambda: len(HELD) == 12)
    assert ACKED == [] and FAILED == []
    RELEASE.set()
    wait_until(lambda: len(ACKED) + len(FAILED) == 12, timeout=20,
               message=lambda: f"acked {ACKED}, failed {FAILED}")
    # each key's two spout tuples were joined twice (their own halves): odd keys fail
    assert sorted(FAILED) == sorted(f"{s}-{k}" for k in (1, 3, 5) for s in ("left", "right"))


class AckTwice(Bolt):
    """Acks each tuple in ``process`` (auto_ack on, as a streamparse bolt may), and its
    first one a second time."""

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.first = True

    def process(self, tup: Any) -> None:
        if tup.stream != "default":
            return
        self.ack(tup)
        if self.first:
            self.first = False
            self.ack(tup)


def test_acking_a_tuple_again_changes_nothing_and_says_so_once(
        cluster: LocalCluster, caplog: pytest.LogCaptureFixture) -> None:
    b = TopologyBuilder()
    b.set_spout("sides", Sides)
    b.set_bolt("twice", AckTwice).shuffle_grouping("sides")
    with caplog.at_level("WARNING", logger="squall.runtime.executors"):
        submit(cluster, "ack-twice", b, {"topology.message.timeout.secs": 30})
        wait_until(lambda: len(ACKED) == 12, timeout=20,
                   message=lambda: f"acked {ACKED}, failed {FAILED}")
    assert FAILED == []
    assert caplog.text.count("acked a tuple it had acked or failed already") == 1


class AckToo(Bolt):
    """auto_ack on, and acks each tuple itself too."""

    def process(self, tup: Any) -> None:
        self.ack(tup)


class FailOdd(Bolt):
    """auto_ack on; fails the odd tuples itself."""

    def process(self, tup: Any) -> None:
        if tup["n"] % 2:
            self.fail(tup)


class FailTwice(Bolt):
    auto_ack = False

    def process(self, tup: Any) -> None:
        self.fail(tup)
        self.fail(tup)


class BatchAckEven(Bolt):
    """process_batch, auto_ack on; acks the even tuples itself, fails those divisible by 5."""

    def process_batch(self, tuples: list[Any]) -> None:
        for t in tuples:
            if t["n"] % 5 == 0:
                self.fail(t)
            elif t["n"] % 2 == 0:
                self.ack(t)


@pytest.mark.parametrize("ackers", [1, 0])
@pytest.mark.parametrize("dedicated", [False, True])
@pytest.mark.parametrize("bolt, failed", [
    (AckToo, set()), (FailOdd, set(range(1, 40, 2))), (FailTwice, set(range(40))),
    (BatchAckEven, set(range(0, 40, 5)))], ids=lambda x: getattr(x, "__name__", ""))
def test_a_tuple_the_bolt_acks_or_fails_itself_counts_once(
        cluster: LocalCluster, bolt: type[Bolt], failed: set[int], dedicated: bool,
        ackers: int) -> None:
    # with auto_ack, a tuple the bolt acked too counted two acks, one it failed a fail and
    # an ack (and an XOR for its failed tree); a second fail counted twice. Without ackers
    # (untracked tuples) the same: auto_ack counted the pass's tuples on top of the bolt's
    # own acks and fails (a fail counted a fail and an ack, a second ack a third count)
    b = TopologyBuilder()
    b.set_spout("spout", Recorder, config={"squall.test.n": 40})
    b.set_bolt("b", type(bolt.__name__, (bolt,), {"dedicated_thread": dedicated})) \
        .shuffle_grouping("spout")
    submit(cluster, "once", b, {"topology.acker.executors": ackers})
    wait_until(lambda: len(ACKED) + len(FAILED) == 40, timeout=20)
    # without ackers the spout's tuples are acked once emitted, whatever the bolt does
    spout_failed = failed if ackers else set()
    assert {i for i, _ in FAILED} == spout_failed
    assert set(ACKED) == set(range(40)) - spout_failed
    want = {"executed": 40, "acked": 40 - len(failed), "failed": len(failed)}

    def counts() -> dict[str, int]:
        comp = cluster.get_topology_info("once")["components"]["b"]
        return {k: comp[k] for k in want}
    wait_until(lambda: counts() == want, timeout=10, message=lambda: f"{counts()} != {want}")


class AckThenRaise(Bolt):
    """process_batch, auto_ack off, auto_fail on: acks each tuple it wrote, raises on 39."""

    auto_ack = False

    def process_batch(self, tuples: list[Any]) -> None:
        for t in tuples:
            if t["n"] == 39:
                raise OSError("write failed")
            self.ack(t)


def test_a_tuple_the_bolt_acked_is_not_failed_by_auto_fail(cluster: LocalCluster) -> None:
    # the batch's acks went to the acker at the end of the pass, auto_fail's fails at once:
    # every tuple acked before the error failed (and was replayed)
    b = TopologyBuilder()
    b.set_spout("spout", Recorder, config={"squall.test.n": 40})
    b.set_bolt("writer", AckThenRaise).shuffle_grouping("spout")
    submit(cluster, "ack-then-raise", b, {"topology.max.spout.pending": 40})
    wait_until(lambda: len(ACKED) + len(FAILED) == 40, timeout=20,
               message=lambda: f"acked {ACKED}, failed {FAILED}")
    assert [i for i, _ in FAILED] == [39] and sorted(ACKED) == list(range(39))


class LateAck(Bolt):
    """auto_ack on: forwards each tuple anchored to it, keeps it, and acks it (or, with
    ``squall.test.late`` "fail", fails it) on its next call, after auto_ack acked it."""

    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.late = self.fail if conf["squall.test.late"] == "fail" else self.ack
        self.kept: list[Any] = []

    def process(self, tup: Any) -> None:
        for t in self.kept:
            self.late(t)
        self.emit([tup["n"]], anchors=[tup])
        self.kept = [tup]


class LateAckUnanchored(LateAck):
    auto_anchor = False         # the pass that acks each tuple by AckLedger.ack_tuple


class LateAckBatch(LateAck):
    """process_batch: acks (or fails) the previous batch's tuples."""

    def process_batch(self, tuples: list[Any]) -> None:
        for t in self.kept:
            self.late(t)
        for t in tuples:
            self.emit([t["n"]], anchors=[t])
        self.kept = list(tuples)


class LateAckLazy(LateAckBatch):
    lazy_batch = True


@pytest.mark.parametrize("ackers", [1, 0])
@pytest.mark.parametrize("late", ["ack", "fail"])
@pytest.mark.parametrize("bolt, dedicated", [
    (LateAck, False), (LateAck, True), (LateAckUnanchored, False), (LateAckBatch, False),
    (LateAckBatch, True), (LateAckLazy, False)],
    ids=lambda x: getattr(x, "__name__", "own-thread" if x else "loop"))
def test_an_ack_or_fail_after_auto_ack_acked_the_tuple_changes_nothing(
        cluster: LocalCluster, caplog: pytest.LogCaptureFixture, bolt: type[Bolt],
        dedicated: bool, late: str, ackers: int) -> None:
    # auto_ack did not mark the tuple settled: a second ack XORed its edge into its tree
    # again (the tree waited for its timeout and failed), a fail failed the tree acked, and
    # the bolt counted an ack or a fail more (without ackers too: an untracked tuple's)
    b = TopologyBuilder()
    b.set_spout("spout", Recorder, config={"squall.test.n": 20})
    b.set_bolt("late", type(bolt.__name__, (bolt,), {"dedicated_thread": dedicated}),
               config={"squall.test.late": late}).shuffle_grouping("spout")
    b.set_bolt("hold", Batcher).shuffle_grouping("late").all_grouping("spout", "control")
    with caplog.at_level("WARNING", logger="squall.runtime.executors"):
        submit(cluster, "late-ack", b, {"topology.message.timeout.secs": 10,
                                        "topology.acker.executors": ackers})
        wait_until(lambda: len(HELD) == 20, timeout=20)     # every tree waits for "hold"
        RELEASE.set()
        wait_until(lambda: len(ACKED) + len(FAILED) == 20, timeout=40,
                   message=lambda: f"acked {ACKED}, failed {FAILED}")
    assert FAILED == [] and sorted(ACKED) == list(range(20))
    want = {"executed": 20, "acked": 20, "failed": 0}

    def counts() -> dict[str, int]:
        comp = cluster.get_topology_info("late-ack")["components"]["late"]
        return {k: comp[k] for k in want}
    wait_until(lambda: counts() == want, timeout=10, message=lambda: f"{counts()} != {want}")
    said = f"{late}ed a tuple it had acked or failed already"
    assert caplog.text.count(said) == 1, caplog.text


class Never(Bolt):
    auto_ack = False

    def process(self, tup: Any) -> None:
        with LOCK:
            HELD.append(tup["n"])


def test_message_timeout_fails_between_t_and_2t(cluster: LocalCluster) -> None:
    b = TopologyBuilder()
    b.set_spout("spout", Recorder, config={"squall.test.n": 3})
    b.set_bolt("never", Never).shuffle_grouping("spout")
    submit(cluster, "timeout", b, {"topology.message.timeout.secs": 1})
    wait_until(lambda: len(FAILED) == 3, timeout=6)
    emitted = dict(EMITTED)
    for tup_id, at in FAILED:
        waited = at - emitted[tup_id]
        assert 1.0 <= waited <= 2.0 + 0.75, f"tuple {tup_id} failed after {waited:.2f}s"
    assert ACKED == [] and sorted(HELD) == [0, 1, 2]


#: how long SlowReset holds each tuple: past the 1 s message timeout's expiry (1 to 2 s)
HOLD_SECS = 2.2


class SlowReset(Bolt):
    """auto_ack off: holds each tuple HOLD_SECS, restarting its trees' timeout every round (a
    tick, or with ``squall.test.thread`` a thread of its own, every 0.2 s), then acks it."""

    auto_ack = False

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.held: list[tuple[float, Any]] = []
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.threaded = bool(conf.get("squall.test.thread"))
        if self.threaded:
            threading.Thread(target=self._rounds, daemon=True).start()

    def process(self, tup: Any) -> None:
        with self.lock:
            self.held.append((time.monotonic(), tup))

    def process_tick(self, tup: Any) -> None:
        if not self.threaded:
            self._round()

    def _rounds(self) -> None:
        while not self.done.wait(0.2):      # the bolt's own pace, not the test's
            self._round()

    def _round(self) -> None:
        now = time.monotonic()
        with self.lock:
            due = [t for t0, t in self.held if now - t0 >= HOLD_SECS]
            self.held = [(t0, t) for t0, t in self.held if now - t0 < HOLD_SECS]
            kept = [t for _, t in self.held]
        for t in kept:
            self.reset_timeout(t)
        for t in due:
            self.ack(t)
        with LOCK:
            NOTES["resets"] = NOTES.get("resets", 0) + len(kept)

    def cleanup(self) -> None:
        self.done.set()


class Placed(Recorder):
    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        super().initialize(conf, context)
        with LOCK:
            NOTES.setdefault("spout_ports", set()).add(context.this_worker_port)


@pytest.mark.parametrize("workers, from_thread, dedicated", [
    (1, False, False), (2, True, False), (1, False, True)],
    ids=["tick", "two-workers-own-thread", "dedicated-thread"])
def test_reset_timeout_keeps_a_tree_held_past_the_message_timeout(
        workers: int, from_thread: bool, dedicated: bool) -> None:
    # no way to restart a tree's timeout: a bolt holding a tuple longer than
    # topology.message.timeout.secs saw its tree failed at the spout (and forgotten by the
    # acker) however it went on. With two workers, one acker task: a spout task without
    # the acker in its worker, and bolt tasks on both sides, so resets travel both ways
    n = 6
    b = TopologyBuilder()
    b.set_spout("spout", Placed, workers, config={"squall.test.n": n // workers})
    b.set_bolt("slow", type("Slow", (SlowReset,), {"dedicated_thread": dedicated}), workers,
               config={"topology.tick.tuple.freq.secs": 0.2,
                       "squall.test.thread": from_thread}).shuffle_grouping("spout")
    with LocalCluster() as cluster:
        submit(cluster, "reset", b, {"topology.message.timeout.secs": 1,
                                     "topology.workers": workers,
                                     "topology.acker.executors": 1})
        wait_until(lambda: len(ACKED) + len(FAILED) == n, timeout=10,
                   message=lambda: f"acked {ACKED}, failed {FAILED}")
        assert FAILED == [] and len(ACKED) == n and NOTES["resets"] > 0
        assert len(NOTES["spout_ports"]) == workers
        comp = cluster.get_topology_info("reset")["components"]["slow"]
        assert (comp["acked"], comp["failed"]) == (n, 0)
        assert not cluster.get_topology_info("reset")["errors"].get("slow")


class ResetsAtOnce(Bolt):
    def process(self, tup: Any) -> None:
        self.reset_timeout(tup)     # without ackers (untracked) nothing to restart
        with LOCK:
            COUNTS["reset"] += 1


@pytest.mark.parametrize("ackers", [0, 1])
def test_reset_timeout_changes_nothing_else(ackers: int) -> None:
    b = TopologyBuilder()
    b.set_spout("lines", Lines)
    b.set_bolt("resets", ResetsAtOnce).shuffle_grouping("lines")
    result = complete_topology(b.create_topology(), {"lines": [["a"], ["b"]]},
                               conf={"topology.acker.executors": ackers})
    assert COUNTS["reset"] == 2 and result.acked == {0, 1}


def test_without_message_timeouts_a_slow_tree_is_still_acked(cluster: LocalCluster) -> None:
    # topology.enable.message.timeouts false: the acker keeps the trees too (it dropped them
    # after about two timeouts, and the spout waited on them for ever)
    b = TopologyBuilder()
    b.set_spout("spout", Recorder, config={"squall.test.n": 3})
    b.set_bolt("batcher", Batcher).shuffle_grouping("spout").all_grouping("spout", "control")
    submit(cluster, "no-timeouts", b, {"topology.message.timeout.secs": 1,
                                       "topology.enable.message.timeouts": False})
    wait_until(lambda: len(HELD) == 3)
    time.sleep(2.5)                        # let more than two timeouts pass
    assert ACKED == [] and FAILED == []
    RELEASE.set()
    wait_until(lambda: len(ACKED) == 3, timeout=5,
               message=lambda: f"acked {ACKED}, failed {FAILED}")
    assert sorted(ACKED) == [0, 1, 2] and FAILED == []


class Replayer(Spout):
    """Re-emits a failed id until it is acked."""

    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.todo = list(range(40))

    def next_tuple(self) -> None:
        if self.todo:
            n = self.todo.pop(0)
            self.emit([n], tup_id=n)

    def ack(self, tup_id: Any) -> None:
        with LOCK:
            ACKED.append(tup_id)

    def fail(self, tup_id: Any) -> None:
        with LOCK:
            FAILED.append(tup_id)
        self.todo.append(tup_id)


class Flaky(Bolt):
    """Fails the first two attempts of every id divisible by 3."""

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.seen: Counter[int] = Counter()

    def process(self, tup: Any) -> None:
        n = tup["n"]
        self.seen[n] += 1
        if n % 3 == 0 and self.seen[n] <= 2:
            raise RuntimeError(f"flaky on {n}")


def test_replay_until_acked(cluster: LocalCluster) -> None:
    b = TopologyBuilder()
    b.set_spout("spout", Replayer)
    b.set_bolt("flaky", Flaky, 2).fields_grouping("spout", ["n"])
    submit(cluster, "replay", b)
    wait_until(lambda: len(ACKED) == 40)
    assert sorted(ACKED) == list(range(40))
    assert Counter(FAILED) == {n: 2 for n in range(0, 40, 3)}


class Counted(Spout):
    """Tracks its own in-flight count and records the highest it saw."""

    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.i = self.in_flight = 0
        NOTES["max"] = 0

    def next_tuple(self) -> None:
        if self.i < 60:
            self.emit([self.i], tup_id=self.i)
            self.i += 1
            self.in_flight += 1
            NOTES["max"] = max(NOTES["max"], self.in_flight)

    def ack(self, tup_id: Any) -> None:
        self.in_flight -= 1
        with LOCK:
            ACKED.append(tup_id)

    def fail(self, tup_id: Any) -> None:
        self.in_flight -= 1
        with LOCK:
            FAILED.append(tup_id)


@pytest.mark.parametrize("where", ["topology", "component"])
def test_max_spout_pending(cluster: LocalCluster, where: str) -> None:
    b = TopologyBuilder()
    config = {"topology.max.spout.pending": 5} if where == "component" else None
    b.set_spout("spout", Counted, config=config)
    b.set_bolt("hold", HoldFive).shuffle_grouping("spout")
    conf = {"topology.max.spout.pending": 5} if where == "topology" else {}
    submit(cluster, "pending", b, conf)
    wait_until(lambda: len(ACKED) == 60)
    assert NOTES["max"] == 5 and FAILED == []


class Pass(Bolt):
    def process(self, tup: Any) -> None:
        pass


@pytest.mark.parametrize("workers", [1, 2])
def test_the_acker_counts_every_init_and_ack_it_handles(workers: int) -> None:
    """Inits and acks reach an acker in the same worker without its queue, and in another
    worker as tuples: either way every tree completes and the __acker component's executed
    count includes each init and each folded ack."""
    n = 50
    b = TopologyBuilder()
    b.set_spout("spout", Recorder, config={"squall.test.n": n})
    b.set_bolt("pass", Pass, 2).shuffle_grouping("spout")
    with LocalCluster() as cluster:
        submit(cluster, "acker-counts", b, {"topology.workers": workers,
                                            "topology.acker.executors": workers})
        wait_until(lambda: len(ACKED) == n, message=lambda: f"acked {len(ACKED)} of {n}")
        wait_until(lambda: cluster.get_topology_info("acker-counts")["components"]["__acker"]
                   ["executed"] >= 2 * n,
                   message=lambda: str(cluster.get_topology_info("acker-counts")["components"]
                                       ["__acker"]))
    assert sorted(ACKED) == list(range(n)) and not FAILED


# -- an acker plugin's bug -----------------------------------------------------------------------
class FlakyAcker:
    """The XOR acker, whose ``ack`` raises for the first five roots it sees (the replays'
    new roots go through: one round of timeouts, where raising for every 7th root took
    one to five rounds)."""

    raised: set[int] = set()

    def __new__(cls, conf: Any) -> Any:
        from squall.ackers.xor import XorAcker

        class Flaky(XorAcker):
            def ack(self, root: int, value: int) -> Any:
                if len(FlakyAcker.raised) < 5 and root not in FlakyAcker.raised:
                    FlakyAcker.raised.add(root)
                    raise RuntimeError("acker plugin bug")
                return super().ack(root, value)
        return Flaky(conf)


class Replaying(Spout):
    outputs = ["n"]
    acked: set[int] = set()

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.todo = list(range(60))

    def next_tuple(self) -> None:
        if self.todo:
            i = self.todo.pop(0)
            self.emit([i], tup_id=i)

    def ack(self, tup_id: Any) -> None:
        Replaying.acked.add(tup_id)

    def fail(self, tup_id: Any) -> None:
        self.todo.append(tup_id)


def test_an_acker_plugin_that_raises_is_reported_and_its_trees_replayed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker's loop goes on (it died, and again after every restart): the error is
    on the topology once, and the trees the acker lost time out and are replayed."""
    install_driver(monkeypatch, "squall.ackers", "flaky", FlakyAcker)
    FlakyAcker.raised.clear()
    Replaying.acked.clear()
    b = TopologyBuilder()
    b.set_spout("numbers", Replaying)
    b.set_bolt("pass", Pass).shuffle_grouping("numbers")
    with LocalCluster() as cluster:
        cluster.submit_topology("flaky", {"squall.acker": "flaky",
                                          "topology.message.timeout.secs": 2},
                                b.create_topology())
        wait_until(lambda: Replaying.acked == set(range(60)), timeout=30,
                   message=lambda: f"acked {len(Replaying.acked)} of 60")
        assert FlakyAcker.raised
        [worker] = cluster.workers("flaky")
        assert worker.is_alive()
        errors = cluster.get_topology_info("flaky")["errors"].get("__acker", [])
        assert len(errors) == 1 and "raised in ack: RuntimeError('acker plugin bug')" in \
            errors[0]["error"]


class Thousands(Spout):
    """Emits 2000 tuples with ids, then sets DONE."""
    outputs = ["n"]
    DONE = threading.Event()

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.i = 0

    def next_tuple(self) -> None:
        if self.i < 2000:
            self.i += 1
            self.emit([self.i], tup_id=self.i)
            if self.i == 2000:
                Thousands.DONE.set()


class Drop(Bolt):
    def process(self, tup: Any) -> None:
        pass


def test_max_spout_pending_does_nothing_without_ackers(cluster: LocalCluster) -> None:
    """As in Storm, the key limits trees in flight; without ackers there are none. It held
    each loop pass to max-pending calls of next_tuple (one here: 2000 passes for 2000
    tuples)."""
    Thousands.DONE.clear()
    b = TopologyBuilder()
    b.set_spout("n", Thousands)
    b.set_bolt("d", Drop).shuffle_grouping("n")
    cluster.submit_topology("nopending", {"topology.acker.executors": 0,
                                          "topology.max.spout.pending": 1},
                            b.create_topology())
    assert Thousands.DONE.wait(20)
    passes = cluster.workers("nopending")[0].passes
    assert passes < 1000, passes


class AckById(Bolt):
    """auto_ack off; acks or fails by tuple id (a multi-lang habit) instead of the Tuple."""
    auto_ack = False

    def process(self, tup: Any) -> None:
        try:
            (self.ack if tup.values[0] % 2 else self.fail)(tup.id)
        except Exception as exc:
            RAISED_BY_ID.append(exc)
        self.ack(tup)


RAISED_BY_ID: list[BaseException] = []


@pytest.mark.parametrize("thread", [False, True], ids=["loop", "own-thread"])
def test_ack_or_fail_given_no_tuple_is_one_clear_error(cluster: LocalCluster,
                                                       thread: bool) -> None:
    # it raised AttributeError: 'int' object has no attribute 'roots'
    RAISED_BY_ID.clear()
    Thousands.DONE.clear()
    b = TopologyBuilder()
    b.set_spout("n", Thousands)
    b.set_bolt("a", type("AckById2", (AckById,), {"dedicated_thread": thread})
               ).shuffle_grouping("n")
    cluster.submit_topology("byid", {}, b.create_topology())
    wait_until(lambda: len(RAISED_BY_ID) >= 10, timeout=20)
    texts = {str(e) for e in RAISED_BY_ID[:10]}
    assert all(isinstance(e, TopologyError) for e in RAISED_BY_ID[:10])
    assert any(t.startswith("component 'a': ack takes a Tuple this bolt received, got int")
               for t in texts)
    assert any(t.startswith("component 'a': fail takes a Tuple") for t in texts)


class Late(Bolt):
    """Acks (or, ``squall.test.late`` "fail", fails) each tuple itself, then emits anchored
    to it all the same, by the way ``squall.test.late`` names (one emit path each)."""

    outputs = [Stream(["n"]), Stream(["n"], name="side")]
    auto_ack = False

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.how = conf["squall.test.late"]
        self.held: Any = None

    def process(self, tup: Any) -> None:
        how, n = self.how, tup["n"]
        if how == "several":            # a join: the held tuple acked, then both anchored
            if self.held is None:
                self.held = tup
                return
            held, self.held = self.held, None
            self.ack(held)
            self.emit([n], anchors=[held, tup])     # held left out, tup kept
            self.ack(tup)
            return
        (self.fail if how == "fail" else self.ack)(tup)
        if how in ("implicit", "general"):       # anchored to the tuple in process
            self.emit([n])
        elif how in ("explicit", "fail"):
            self.emit([n], anchors=[tup])
        elif how == "side":
            self.emit([n], "side", anchors=[tup])
        elif how in ("many", "many-general"):
            self.emit_many([[n], [n]])
        elif how == "many-several":
            self.emit_many([[n], [n]], anchors=[tup, tup])


class Implicit(Late):
    auto_ack = True     # with auto_anchor: the emit is anchored to the tuple in process


class Kept(Late):
    """auto_ack on: emits anchored to the tuple before, which auto_ack acked."""

    auto_ack = True

    def process(self, tup: Any) -> None:
        if self.held is not None:
            self.emit([tup["n"]], anchors=[self.held])
        self.held = tup


class Delivered(Bolt):
    def process(self, tup: Any) -> None:
        with LOCK:
            COUNTS[tup.stream] += 1


@pytest.mark.parametrize("how, delivered, errors", [
    ("implicit", 4, 4),             # a bolt's default stream, one subscriber (fast paths)
    ("explicit", 4, 4),
    ("side", 4, 4),                 # another stream, one subscriber
    ("general", 8, 4),              # two subscribers: the general path
    ("several", 2, 2),              # several anchors, one of them acked already
    ("many", 8, 4),                 # emit_many: one error a call, not one a value
    ("many-general", 16, 4),
    ("many-several", 8, 4),         # one error for both anchors
    ("fail", 4, 4),
    ("kept", 3, 3),                 # anchored to a tuple auto_ack acked
])
@pytest.mark.parametrize("dedicated", [False, True], ids=["loop", "own-thread"])
def test_an_emit_anchored_to_a_tuple_acked_or_failed_already_goes_out_without_it(
        cluster: LocalCluster, how: str, delivered: int, errors: int, dedicated: bool) -> None:
    # the emit XORed its edge into a settled tuple, which nothing sends on: its tree timed
    # out (topology.message.timeout.secs) and the spout replayed what had been processed
    b = TopologyBuilder()
    b.set_spout("spout", Recorder, config={"squall.test.n": 4})
    b.set_bolt("late", {"implicit": Implicit, "kept": Kept}.get(how, Late),
               config={"squall.test.late": how,
                       "topology.executor.dedicated.thread": dedicated}
               ).shuffle_grouping("spout")
    b.set_bolt("sink", Delivered).shuffle_grouping("late").shuffle_grouping("late", "side")
    if how.endswith("general"):
        b.set_bolt("sink2", Delivered).shuffle_grouping("late")
    submit(cluster, "late", b, {"topology.message.timeout.secs": 60,
                                "topology.max.error.report.per.interval": 100})
    wait_until(lambda: len(ACKED) + len(FAILED) == 4, timeout=15,
               message=lambda: f"acked {ACKED}, failed {FAILED}: trees waited")
    if how == "fail":
        assert ACKED == [] and {i for i, _ in FAILED} == set(range(4))
    else:
        assert sorted(ACKED) == list(range(4)) and FAILED == []
    wait_until(lambda: sum(COUNTS.values()) == delivered, timeout=10,
               message=lambda: f"delivered {dict(COUNTS)}, not {delivered}")

    def late() -> list[str]:
        return [e["error"] for e in info_errors(cluster, "late", "late")
                if "acked or failed already" in e["error"]]
    wait_until(lambda: len(late()) >= errors, timeout=10,
               message=lambda: f"{len(late())} errors, not {errors}: {late()[:2]}")
    assert len(late()) == errors, late()        # one a call
    assert late()[0].startswith("component 'late' emitted on stream "), late()[0]
    assert late()[0].endswith(("the emit goes out without that anchor",
                               "the emit goes out without those anchors")), late()[0]
