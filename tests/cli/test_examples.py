"""The topologies in examples/, run in-process on known input, with their real output checked.

The examples are files, not a package: they are imported by path.
"""
from __future__ import annotations

import collections
import importlib.util
import logging
import random
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any


from squall import LocalCluster, Spout, Tuple
from squall.api.tuple import Source
from squall.windowing import Window
from squall.testing import complete_topology, wait_until

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load_example(name: str) -> ModuleType:
    module_name = f"squall_example_{name}"
    spec = importlib.util.spec_from_file_location(module_name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


wordcount = load_example("wordcount")
exclamation = load_example("exclamation")
rolling = load_example("rolling_top_words")
stateful = load_example("stateful_wordcount")

SENTENCES = [*wordcount.LINES, *wordcount.LINES, "and and the war", "a"]
WORDS = collections.Counter(w for s in SENTENCES for w in s.split())


# -- word count ------------------------------------------------------------------------------------

def test_wordcount_per_tuple_emits_a_running_count_for_every_word():
    result = complete_topology(wordcount.topology,
                               sources={"sentences": [[s] for s in SENTENCES]}, timeout=20)
    assert result.acked == set(range(len(SENTENCES))) and not result.failed
    assert collections.Counter(w for (w,) in result.tuples("split")) == WORDS
    running: dict[str, list[int]] = collections.defaultdict(list)
    for word, count in result.tuples("count"):
        running[word].append(count)
    # one task counts each word (fields grouping), so its counts run 1, 2, ... n in emit order
    assert running == {w: list(range(1, n + 1)) for w, n in WORDS.items()}


BATCH_COUNTS: dict[int, collections.Counter[str]] = {}
BATCH_LOCK = threading.Lock()


class RecordingWordCountBatch(wordcount.WordCountBatch):
    """The example's batch counter, publishing a copy of its counts after every batch."""

    def process_batch(self, tuples: Any) -> None:
        super().process_batch(tuples)
        with BATCH_LOCK:
            BATCH_COUNTS[self.context.task_id] = collections.Counter(self.counts)


def test_wordcount_batch_form_counts_every_word_exactly():
    shipped = wordcount.batch_topology.components
    assert shipped["split"].cls is wordcount.SplitSentenceBatch
    assert shipped["count"].cls is wordcount.WordCountBatch
    BATCH_COUNTS.clear()
    topology = wordcount.build(wordcount.SplitSentenceBatch, RecordingWordCountBatch)
    result = complete_topology(topology, sources={"sentences": [[s] for s in SENTENCES]},
                               timeout=20)
    assert result.acked == set(range(len(SENTENCES))) and not result.failed
    assert collections.Counter(w for (w,) in result.tuples("split")) == WORDS
    with BATCH_LOCK:
        per_task = dict(BATCH_COUNTS)
    assert len(per_task) == 2, per_task            # both count tasks got words
    a, b = per_task.values()
    assert not set(a) & set(b), "a word was counted by two tasks"
    assert a + b == WORDS


def test_wordcount_spout_stops_after_the_configured_number_of_sentences():
    spout = wordcount.SentenceSpout()
    emitted: list[tuple[list[Any], Any]] = []
    spout.emit = lambda values, stream="default", **kw: emitted.append((values, kw["tup_id"]))
    spout.initialize({"wordcount.sentences": 4}, None)
    for _ in range(10):
        spout.next_tuple()
    lines = wordcount.LINES
    assert emitted == [([lines[0]], 0), ([lines[1]], 1), ([lines[2]], 2), ([lines[0]], 3)]
    spout.ack(0)
    spout.fail(2)                                    # a failed line is replayed with its id
    assert emitted[-1] == ([lines[2]], 2) and sorted(spout.pending) == [1, 2, 3]


# -- exclamation -----------------------------------------------------------------------------------

def test_exclamation_appends_three_then_six_bangs():
    words = [*exclamation.WORDS, "nathan", "x"]
    result = complete_topology(exclamation.topology, sources={"word": [[w] for w in words]},
                               timeout=20)
    assert result.acked == set(range(len(words))) and not result.failed
    assert sorted(result.tuples("exclaim1")) == sorted((w + "!!!",) for w in words)
    assert sorted(result.tuples("exclaim2")) == sorted((w + "!!!!!!",) for w in words)


# -- rolling top words -----------------------------------------------------------------------------

FEED: collections.deque[str] = collections.deque()


class FeedWords(Spout):
    """Emits the words the test puts in FEED (shared by every task), then idles."""
    outputs = ["word"]

    def next_tuple(self) -> None:
        try:
            word = FEED.popleft()
        except IndexError:
            return
        self.emit([word])


def feed(counts: dict[str, int]) -> None:
    words = [w for w, n in counts.items() for _ in range(n)]
    random.Random(len(FEED)).shuffle(words)
    FEED.extend(words)


def test_rolling_top_words_ranks_a_sliding_window_on_ticks(monkeypatch, caplog):
    """The example's topology (its spout swapped for one fed by the test) over a 1.5 s window
    sliding by 0.25 s, ranked every 0.25 s: the report logs the exact top 5, then forgets
    words that left."""
    FEED.clear()
    monkeypatch.setattr(rolling, "RandomWords", FeedWords)
    topology = rolling.build(window_ms=1500, slide_ms=250, rank_secs=0.25)
    caplog.set_level(logging.INFO, logger="squall.component.report")

    def reports(since: int = 0) -> list[str]:
        return [r.getMessage() for r in list(caplog.records)[since:]
                if r.name == "squall.component.report"]

    def seen(expected: str, since: int) -> Any:
        return lambda: expected in reports(since)

    def state() -> str:
        return "reports so far: " + repr(reports()[-5:])

    with LocalCluster() as cluster:
        cluster.submit_topology("rolling", {}, topology)
        feed({"storm": 6, "squall": 5, "gale": 4, "breeze": 3, "tempest": 2, "zephyr": 1})
        wait_until(seen("top words: storm=6, squall=5, gale=4, breeze=3, tempest=2", 0),
                   timeout=10, message=state)
        # new words: the old ones leave the window and the rankings (gale is 7, not 4 + 7)
        mark = len(caplog.records)
        feed({"gale": 7, "hurricane": 2})
        wait_until(seen("top words: gale=7, hurricane=2", mark), timeout=10, message=state)
        # a window with no tuple is not evaluated: a counter learns that words left from its
        # next window holding one (gale and hurricane go to the same counters as before)
        mark = len(caplog.records)
        feed({"gale": 1, "hurricane": 1})
        wait_until(seen("top words: gale=1, hurricane=1", mark), timeout=10, message=state)
        info = cluster.get_topology_info("rolling")
    assert not any(info["errors"].values()), info["errors"]


def test_rolling_counter_counts_what_enters_and_leaves_its_window():
    counter = rolling.RollingCount()
    emitted: list[tuple[Any, ...]] = []
    counter.emit = lambda values, *a, **kw: emitted.append(tuple(values))  # type: ignore
    counter.initialize({}, None)
    src = Source("words", "default", ("word",))
    a, b, a2 = (Tuple((w,), 1, src) for w in ("a", "b", "a"))
    counter.process_window(Window([a, b, a2], [a, b, a2], [], 0, 1))
    assert emitted == [("a", 2), ("b", 1)]
    emitted.clear()
    counter.process_window(Window([a2], [], [a, b], 1, 2))     # a and b left
    assert emitted == [("a", 1), ("b", 0)]
    config = rolling.topology.components["counter"].config
    assert (config["topology.bolts.window.length.duration.ms"],
            config["topology.bolts.sliding.interval.duration.ms"]) == (9000, 3000)


# -- Trident word count with a DRPC query --------------------------------------------------------

trident_wc = load_example("trident_wordcount")


def test_trident_wordcount_counts_exactly_and_answers_drpc():
    from squall import LocalDRPC
    from squall.trident.state import memory
    expected = collections.Counter(w for (s,) in trident_wc.SENTENCES for w in s.split())
    with LocalCluster() as cluster, LocalDRPC({"drpc.request.timeout.secs": 60}) as drpc:
        cluster.submit_topology("trident-wc", {"topology.trident.batch.emit.interval.millis": 5},
                                trident_wc.topology(drpc, cycle=False))
        stores = cluster.workers("trident-wc")[0].memory_stores
        wait_until(lambda: {k[0]: v[1] for k, v in memory.stored(stores, "trident-wordcount")
                            .items()} == expected, timeout=60,
                   message="exact Trident word counts")
        total = expected["the"] + expected["cow"] + expected["to"]
        assert drpc.execute("words", "the cow to nosuchword") == f"[[{total}]]"


# -- stateful word count ---------------------------------------------------------------------------

STATEFUL_ACKED: dict[str, set[int]] = collections.defaultdict(set)


class RecordingSentences(stateful.SentenceSpout):
    """The example's spout, recording what was acked."""

    def initialize(self, conf, context):
        super().initialize(conf, context)
        self.key = conf["test.key"]

    def ack(self, tup_id):
        STATEFUL_ACKED[self.key].add(tup_id)


def test_stateful_wordcount_commits_exact_counts():
    import uuid

    from squall.serializers.msgpack import MsgpackSerializer
    from squall.stateful import namespace
    from squall.stateful.memory import MemoryStateProvider

    key = uuid.uuid4().hex
    total = 200
    topology = stateful.build(RecordingSentences)
    conf = {"wordcount.sentences": total, "test.key": key, "topology.workers": 2,
            "topology.state.provider.config": {"key_prefix": key},
            "topology.state.checkpoint.interval.ms": 100}
    with LocalCluster() as cluster:
        cluster.submit_topology("stateful-example", conf, topology)
        wait_until(lambda: len(STATEFUL_ACKED[key]) == total, timeout=60,
                   message="not every sentence was acked")
        # the state lives as long as the topology: read it while it runs
        stores = cluster.workers("stateful-example")[0].memory_stores
        ser = MsgpackSerializer({})
        provider = MemoryStateProvider({"key_prefix": key}, stores)
        counts: collections.Counter[str] = collections.Counter()
        for index in range(len(topology.tasks("count"))):
            _, data = provider.load(namespace("stateful-example", "count", index))
            counts.update({ser.loads(k): ser.loads(v) for k, v in data.items()})
    assert counts == collections.Counter(
        w for i in range(total) for w in stateful.LINES[i % len(stateful.LINES)].split())


def test_stateful_wordcount_runs_under_complete_topology():
    sentences = [[line] for line in stateful.LINES] * 3
    result = complete_topology(stateful.topology, sources={"sentences": sentences}, timeout=30)
    assert result.acked == set(range(len(sentences))) and not result.failed
    final: dict[str, int] = {}
    for word, count in result.tuples("count"):
        final[word] = max(final.get(word, 0), count)
    assert final == collections.Counter(w for (s,) in sentences for w in s.split())
