"""A spout whose tuple trees time out in numbers is told why and what to set, once a minute
at most; a few timeouts (a worker lost with some trees) are not reported. Why: its tuples
wait in queues, or a bolt holds them (one that never acks), as far as its worker shows."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from squall.runtime.executors.timeout_report import Backlog, TimeoutReport


def test_trees_timing_out_in_numbers_are_reported_with_what_to_set() -> None:
    watch = TimeoutReport("words", 30.0, 0)
    text = watch.rotated(500, 1000, 30.0)       # 500 timed out, 500 acked since the start
    assert text is not None
    assert text.startswith("spout words: 500 of the 1000 tuple trees it finished in the last "
                           "30 s timed out (topology.message.timeout.secs)")
    assert "set topology.max.spout.pending" in text
    assert "raise topology.message.timeout.secs" in text


def test_a_spout_with_max_pending_set_is_told_to_lower_it() -> None:
    text = TimeoutReport("words", 30.0, 5000).rotated(500, 500, 30.0)
    assert text is not None and "lower topology.max.spout.pending (5000)" in text


def test_a_few_timeouts_or_a_small_share_of_them_are_not_reported() -> None:
    watch = TimeoutReport("words", 30.0, 0)
    assert watch.rotated(99, 99, 30.0) is None               # all of them, but few
    assert watch.rotated(150, 99 + 2000, 60.0) is None       # 150 of 2000: under a tenth
    assert watch.rotated(0, 2099, 90.0) is None


def test_a_spout_is_reported_once_a_minute_at_most() -> None:
    watch = TimeoutReport("words", 10.0, 0)
    finished = 0
    texts = []
    for rotation in range(1, 14):                # 130 s of every tree timing out
        finished += 1000
        texts.append(watch.rotated(1000, finished, 10.0 * rotation))
    assert [i for i, t in enumerate(texts) if t is not None] == [0, 6, 12]


def _executor(kind: str, component: str, tasks: list[dict[str, int]], handed: int = 0) -> Any:
    states = [SimpleNamespace(queue=[None] * t.get("queued", 0), run_extra=t.get("extra", 0),
                              executed=t.get("executed", 0), acked=t.get("acked", 0),
                              failed=t.get("failed", 0)) for t in tasks]
    return SimpleNamespace(kind=kind, component_id=component, tasks=states,
                           queued=lambda: handed)


def test_a_bolt_holding_tuples_with_empty_queues_is_named_not_the_queues() -> None:
    # a bolt with auto_ack = False that never acks: every tuple executed at once, none
    # acked, nothing queued; max.spout.pending is no remedy then
    backlog = Backlog(False, 0, {"forgets": 300, "window": 2}, 2)
    for max_pending in (0, 1000):
        text = TimeoutReport("words", 30.0, max_pending).rotated(300, 300, 30.0,
                                                                 lambda: backlog)
        assert text is not None
        assert "likelier held by a bolt than waiting in queues" in text
        assert "the bolts' queues hold 0 tuples" in text
        assert "(bolt forgets 300, bolt window 2)" in text
        assert "auto_ack = False must ack or fail every tuple" in text
        assert "reset_timeout(tup)" in text
        assert "max.spout.pending" not in text and "wait in queues longer" not in text


def test_queues_seen_keep_the_pending_advice_and_name_the_other_cause() -> None:
    for backlog, seen in ((Backlog(True), "(backpressure held the spout back)"),
                          (Backlog(False, 5000, {"slow": 40}, 1),
                           "(the bolts of its worker have 5000 tuples queued)")):
        text = TimeoutReport("words", 30.0, 0).rotated(500, 1000, 30.0, lambda b=backlog: b)
        assert text is not None
        assert "its tuples wait in queues longer than that" in text and seen in text
        assert "set topology.max.spout.pending" in text
        assert "A bolt that holds tuples times them out too" in text


def test_without_figures_both_causes_are_named() -> None:
    # the bolts run in other workers: nothing here tells which
    text = TimeoutReport("words", 30.0, 0).rotated(500, 1000, 30.0, lambda: Backlog(False))
    assert text is not None and "does not show why" in text
    assert "set topology.max.spout.pending" in text
    assert "auto_ack = False must ack or fail every tuple" in text


def test_the_backlog_is_read_only_for_a_report() -> None:
    looked: list[int] = []
    watch = TimeoutReport("words", 30.0, 0)
    assert watch.rotated(10, 1000, 30.0, lambda: looked.append(1) or Backlog(False)) is None
    assert looked == []


def test_the_backlog_counts_the_user_bolts_queues_and_held_tuples() -> None:
    executors = [
        _executor("spout", "words", [{"executed": 0, "acked": 50}]),
        _executor("acker", "__acker", [{"queued": 70, "executed": 900}]),
        _executor("bolt", "__metrics", [{"queued": 9, "executed": 9}]),
        _executor("bolt", "split", [{"queued": 3, "extra": 2, "executed": 10, "acked": 10},
                                    {"queued": 1, "executed": 5, "acked": 4, "failed": 1}],
                  handed=4),
        _executor("bolt", "count", [{"executed": 120, "acked": 15, "failed": 5},
                                    {"executed": 30, "acked": 10}]),
    ]
    backlog = Backlog.of(executors, held_back=False)
    assert (backlog.queued, backlog.holding, backlog.bolts) == (10, {"count": 120}, 2)
    assert backlog.cause() == "holding"
    assert Backlog.of(executors, held_back=True).cause() == "queues"


def test_the_likelier_cause() -> None:
    assert Backlog(False, 0, {"b": 99}).cause() == ""          # too few held to say
    assert Backlog(False, 0, {"b": 100}).cause() == "holding"
    assert Backlog(False, 200, {"b": 150}).cause() == "queues"  # more queued than held
    assert Backlog(True, 0, {"b": 500}).cause() == "queues"     # backpressure held it back
    assert Backlog(False, 50, {}).cause() == ""
