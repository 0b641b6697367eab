"""What a bolt's emits take as ``anchors``, and its ``ack``/``fail`` as a tuple: any iterable
of Tuples it received, read once on every emit path (one subscriber or several, ``emit`` or
``emit_many``, the loop's thread or the component's own); a lone Tuple or something not
iterable, and an ``ack`` of a Tuple the bolt made itself, are one clear error naming the
component."""
from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest

from squall import Bolt, LocalCluster, Spout, Stream, TopologyBuilder, TopologyError, Tuple
from squall.testing import wait_until

LOCK = threading.Lock()
N = 4
ACKED: list[Any] = []
FAILED: list[Any] = []
#: what the sinks got: "tracked" / "untracked" counts
GOT: Counter[str] = Counter()
#: (form, shape, error) of each emit a relay tried with anchors of a wrong shape
RAISED: list[tuple[str, str, BaseException | None]] = []


@pytest.fixture(autouse=True)
def _clear() -> None:
    for seen in (ACKED, FAILED, GOT, RAISED):
        seen.clear()


class Numbers(Spout):
    """Emits 0..N-1 once each, tracked by their value; records acks and fails."""

    outputs = ["n"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.i = 0

    def next_tuple(self) -> None:
        if self.i < N:
            self.emit([self.i], tup_id=self.i)
            self.i += 1

    def ack(self, tup_id: Any) -> None:
        with LOCK:
            ACKED.append(tup_id)

    def fail(self, tup_id: Any) -> None:
        with LOCK:
            FAILED.append(tup_id)


#: anchors of every shape a user may hand an emit, each naming the tuple in process
SHAPES = {
    "generator": lambda t: (x for x in [t]),
    "iterator": lambda t: iter([t]),
    "set": lambda t: {t},
    "filter": lambda t: filter(None, [t]),
}


class Relay(Bolt):
    """Emits each tuple on, anchored to it through ``anchors`` of the shape and by the form
    (``emit``, ``emit_many``) its conf names, on ``default`` or ``side``."""

    outputs = [Stream(["n"]), Stream(["n"], name="side")]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.shape = SHAPES[conf["squall.test.shape"]]
        self.form = conf["squall.test.form"]
        self.stream = conf["squall.test.stream"]

    def process(self, tup: Any) -> None:
        anchors = self.shape(tup)
        if self.form == "emit":
            self.emit([tup["n"]], self.stream, anchors=anchors)
        else:
            self.emit_many([[tup["n"]]], self.stream, anchors=anchors)


class BatchRelay(Relay):
    """The same from ``process_batch``: one ``emit_many`` per batch, anchored to all of it."""

    def process_batch(self, tuples: Any) -> None:
        self.emit_many([[t["n"]] for t in tuples], self.stream,
                       anchors=(t for t in tuples))


class FailEach(Bolt):
    auto_ack = False

    def process(self, tup: Any) -> None:
        with LOCK:
            GOT["tracked" if tup.id is not None else "untracked"] += 1
        self.fail(tup)


@pytest.mark.parametrize("shape, form, subscribers, how", [
    *((s, f, n, "loop") for s in SHAPES for f in ("emit", "emit_many") for n in (1, 2)),
    ("generator", "emit", 1, "side"),           # another stream than the default
    ("generator", "emit_many", 1, "side"),
    ("generator", "emit", 2, "own-thread"),     # a dedicated thread's emits
    ("generator", "emit_many", 2, "own-thread"),
    ("iterator", "emit", 2, "serialize"),       # topology.testing.always.try.serialize
    ("iterator", "emit_many", 2, "serialize"),
    ("generator", "batch", 1, "loop"),          # process_batch
    ("generator", "batch", 2, "loop"),
])
def test_anchors_given_as_any_iterable_anchor_the_emit(
        cluster: LocalCluster, shape: str, form: str, subscribers: int, how: str) -> None:
    # an iterator was read once by a check, then found empty: with two subscribers the
    # emit went out unanchored (the sinks' fails were lost, every tree acked), with one it
    # raised TypeError (len() of a generator, 'set' object is not subscriptable)
    stream = "side" if how == "side" else "default"
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers)
    b.set_bolt("relay", BatchRelay if form == "batch" else Relay,
               config={"squall.test.shape": shape, "squall.test.form": form,
                       "squall.test.stream": stream,
                       "topology.executor.dedicated.thread": how == "own-thread"}
               ).shuffle_grouping("numbers")
    for i in range(subscribers):
        b.set_bolt(f"sink{i}", FailEach).shuffle_grouping("relay", stream)
    conf = {"topology.testing.always.try.serialize": how == "serialize",
            "topology.message.timeout.secs": 30}
    cluster.submit_topology("shapes", conf, b.create_topology())
    wait_until(lambda: len(ACKED) + len(FAILED) == N, timeout=15,
               message=lambda: f"acked {ACKED}, failed {FAILED}")
    wait_until(lambda: sum(GOT.values()) == N * subscribers, timeout=5,
               message=lambda: f"the sinks got {dict(GOT)}")
    assert GOT == {"tracked": N * subscribers}
    assert ACKED == [] and sorted(FAILED) == list(range(N))    # the sinks' fails reach it


#: anchors of a wrong shape: a lone Tuple (anchors=[tup] meant), a tuple id, a str
WRONG = {
    "lone": (lambda t: t, "anchors takes a list of Tuples, got a lone Tuple: "
                          "write anchors=[tup]"),
    "id": (lambda t: t.id, "anchors takes a list (or another iterable) of Tuples this bolt "
                           "received, got int "),
    "str": (lambda t: "tup", "anchors takes a list (or another iterable) of Tuples this "
                             "bolt received, got str 'tup'"),
}


class Wrong(Bolt):
    """Tries ``emit`` and ``emit_many`` with anchors of each wrong shape; records what each
    raised; the tuple is acked as usual."""

    outputs = ["n"]

    def process(self, tup: Any) -> None:
        for form in ("emit", "emit_many"):
            for shape, (make, _) in WRONG.items():
                error: BaseException | None = None
                try:
                    if form == "emit":
                        self.emit([tup["n"]], anchors=make(tup))
                    else:
                        self.emit_many([[tup["n"]]], anchors=make(tup))
                except Exception as exc:
                    error = exc
                with LOCK:
                    RAISED.append((form, shape, error))


class Take(Bolt):
    def process(self, tup: Any) -> None:
        pass


@pytest.mark.parametrize("subscribers", [1, 2])
@pytest.mark.parametrize("dedicated", [False, True], ids=["loop", "own-thread"])
def test_anchors_of_a_wrong_shape_are_one_clear_error(
        cluster: LocalCluster, subscribers: int, dedicated: bool) -> None:
    # they raised TypeError: object of type 'Tuple' has no len(), KeyError: "stream
    # numbers:default has no field 0", or nothing (a str's characters), by the path taken
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers)
    b.set_bolt("relay", Wrong, config={"topology.executor.dedicated.thread": dedicated}
               ).shuffle_grouping("numbers")
    for i in range(subscribers):
        b.set_bolt(f"sink{i}", Take).shuffle_grouping("relay")
    cluster.submit_topology("wrong", {}, b.create_topology())
    wait_until(lambda: len(ACKED) == N, timeout=15,
               message=lambda: f"acked {ACKED}, failed {FAILED}")
    assert len(RAISED) == N * 2 * len(WRONG)
    for form, shape, error in RAISED:
        assert isinstance(error, TopologyError), (form, shape, error)
        assert str(error).startswith(f"component 'relay': {WRONG[shape][1]}"), \
            (form, shape, str(error))


class MadeUp(Bolt):
    """Acks (or fails) a Tuple it made itself, then acks the tuple it got."""

    auto_ack = False

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.call = self.ack if conf["squall.test.call"] == "ack" else self.fail

    def process(self, tup: Any) -> None:
        error: BaseException | None = None
        try:
            self.call(Tuple(["x"], 0, None))    # type: ignore[arg-type]
        except Exception as exc:
            error = exc
        with LOCK:
            RAISED.append(("made-up", "", error))
        self.ack(tup)


@pytest.mark.parametrize("call", ["ack", "fail"])
def test_an_ack_or_fail_of_a_tuple_the_bolt_made_is_one_clear_error(
        cluster: LocalCluster, call: str) -> None:
    # it was counted as an untracked tuple the bolt received: acked 2N for N received
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers)
    b.set_bolt("made", MadeUp, config={"squall.test.call": call}).shuffle_grouping("numbers")
    cluster.submit_topology("made", {}, b.create_topology())
    wait_until(lambda: len(ACKED) == N and len(RAISED) == N, timeout=15,
               message=lambda: f"acked {ACKED}, raised {RAISED}")
    for _, _, error in RAISED:
        assert isinstance(error, TopologyError), error
        assert str(error).startswith(f"component 'made': {call} takes a Tuple this bolt "
                                     "received, got a Tuple no stream delivered"), str(error)
    counts = wait_until(lambda: (c := cluster.get_topology_info("made")["components"]["made"])
                        and c["acked"] >= N and c)
    assert (counts["acked"], counts["failed"]) == (N, 0)
