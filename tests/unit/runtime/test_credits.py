"""Credits: a receiver grants each other worker a share of the room below a task's high
watermark, growing as the task takes tuples; a sender keeps to its grant."""
from __future__ import annotations

from typing import Any

from squall.runtime.task import LocalTasks, TaskState
from squall.runtime.wire.credits import REPORT_SECS, STALE_SECS, Grants, Windows

A, B = ("h", 1), ("h", 2)


def grants(high: int = 100, peers: int = 1) -> tuple[Grants, TaskState, dict[int, int],
                                                      list[Any]]:
    ts = TaskState("slow", 5, None, {})
    held: dict[int, int] = {}
    g = Grants(LocalTasks({5: ts}, lazy=set(), ackers=set(), spouts=set()), held, high, "me")
    g.set_peers(peers)
    told: list[Any] = []
    return g, ts, held, told


def send(told: list[Any]) -> Any:
    return lambda who, kind, value: told.append((who, kind, value))


def arrive(g: Grants, ts: TaskState, sender: tuple[str, int], n: int) -> None:
    g.arrive(sender, 5, n)
    ts.queue.extend(range(n))


def test_a_sender_is_granted_what_the_task_takes_and_told_when_it_grew_by_a_quarter() -> None:
    g, ts, _, told = grants(high=100)
    arrive(g, ts, A, 100)                   # its first share: the whole room
    g.grant(send(told), 0.0)
    assert not told                         # the queue is at the mark: no room
    for _ in range(24):
        ts.queue.popleft()
    g.grant(send(told), 0.001)
    assert not told                         # 24 taken: less than a quarter of a share
    ts.queue.popleft()
    g.grant(send(told), 0.002)
    assert told == [(A, "credit", ["me", [[5, 100, 125]]])]


def test_a_sender_near_its_grant_is_told_of_small_growth_once_per_report_interval() -> None:
    g, ts, _, told = grants(high=100)
    arrive(g, ts, A, 100)
    ts.queue.popleft()
    g.grant(send(told), 1.0)                # nothing left of its grant: told of the one taken
    assert told == [(A, "credit", ["me", [[5, 100, 101]]])]
    ts.queue.popleft()
    g.grant(send(told), 1.0 + REPORT_SECS / 2)
    assert len(told) == 1                   # too soon
    g.grant(send(told), 1.0 + REPORT_SECS)
    assert told[-1] == (A, "credit", ["me", [[5, 100, 102]]])


def test_a_sender_with_plenty_left_is_not_told_of_small_growth() -> None:
    g, ts, _, told = grants(high=100)
    arrive(g, ts, A, 10)                    # 90 of its first share left
    ts.queue.popleft()
    g.grant(send(told), 5.0)
    assert not told


def test_the_room_is_shared_by_the_other_workers_and_what_waits_in_front_counts() -> None:
    g, ts, held, told = grants(high=100, peers=2)
    arrive(g, ts, A, 50)
    arrive(g, ts, B, 30)
    held[5] = 20                            # 20 more wait in front of the queue
    for _ in range(80):
        ts.queue.popleft()                  # the task took all it had: 20 occupy it
    g.grant(send(told), 0.0)
    # room 80, 40 each: granted what arrived from each plus 40
    assert sorted(told) == [(A, "credit", ["me", [[5, 50, 90]]]),
                            (B, "credit", ["me", [[5, 30, 70]]])]


def test_grants_never_shrink() -> None:
    g, ts, _, told = grants(high=100)
    arrive(g, ts, A, 40)
    for _ in range(40):
        ts.queue.popleft()
    g.grant(send(told), 0.0)
    assert told[-1][2] == ["me", [[5, 40, 140]]]
    ts.queue.extend(range(100))             # this worker's own emits fill the queue
    g.grant(send(told), 1.0)
    assert len(told) == 1


def test_a_restarted_sender_starts_afresh_and_a_gone_one_is_forgotten() -> None:
    g, ts, _, told = grants(high=100)
    g.met(A, "a1")
    arrive(g, ts, A, 100)
    g.met(A, "a1")
    assert g.arrived[(A, 5)] == 100
    g.met(A, "a2")                          # A restarted: its new counts start from 0
    assert (A, 5) not in g.arrived
    arrive(g, ts, B, 1)
    g.forget(B)
    assert not g.senders
    g.grant(send(told), 0.0)
    assert not told


def test_a_worker_opens_with_one_share_per_task() -> None:
    g, _, _, _ = grants(high=100, peers=4)
    assert g.opening([5, 6]) == ["me", [[5, 0, 25], [6, 0, 25]]]


def windows(high: int = 100) -> tuple[Windows, list[int]]:
    changes: list[int] = []
    w = Windows(high, lambda: None)
    w.changed = lambda: changes.append(len(w.saturated))
    return w, changes


def owner(task: int) -> Any:
    return B if task in (5, 6) else None


def test_a_sender_may_send_one_share_before_its_first_grant() -> None:
    w, _ = windows(high=100)
    w.set_peers(2)
    assert not w.sent_to(5, 49, 0.0)
    assert w.sent_to(5, 1, 0.0) and w.saturated == {5}
    w.credit(B, "b1", [[5, 30, 80], [9, 0, 1000]], owner, 1.0)     # task 9 is not B's
    assert not w.saturated and w.limit == {5: 80}


def test_a_restarted_receiver_counts_from_what_it_says_arrived() -> None:
    w, _ = windows(high=100)
    w.credit(B, "b1", [[5, 0, 100]], owner, 0.0)
    w.sent_to(5, 100, 0.0)
    assert w.saturated == {5}
    w.credit(B, "b2", [[5, 0, 100]], owner, 1.0)       # a new life: what was sent is gone
    assert not w.saturated and w.sent[5] == 0 and w.limit[5] == 100


def test_the_first_report_of_a_receiver_does_not_forget_what_is_on_its_way() -> None:
    w, _ = windows(high=100)
    w.sent_to(5, 60, 0.0)                  # sent before the receiver's first word
    w.credit(B, "b1", [[5, 0, 100]], owner, 1.0)
    assert w.sent[5] == 60
    assert w.sent_to(5, 40, 1.0)


def test_a_saturated_task_is_probed_only_when_its_worker_has_said_nothing_for_a_long_while(
        ) -> None:
    w, changes = windows(high=100)
    w.sent_to(5, 100, 0.0)
    w.heard(B, STALE_SECS)                  # a load report, say: it is alive
    w.expire(STALE_SECS + 1.0, owner)
    assert w.saturated == {5}
    w.expire(2 * STALE_SECS + 1.0, owner)
    assert not w.saturated and changes == [0]
    assert not w.sent_to(5, 24, 0.0)        # a quarter of a share more
    assert w.sent_to(5, 1, 0.0)


def test_a_silent_worker_is_probed_once_until_it_says_something_again() -> None:
    # a bolt held in one long process() on its worker's loop: the loop sends no grant
    w, _ = windows(high=100)
    w.sent_to(5, 100, 0.0)
    now = 0.0
    for _ in range(12):                     # two minutes of silence
        now += STALE_SECS + 1.0
        w.expire(now, owner)
        if 5 not in w.saturated:
            w.sent_to(5, w.limit[5] - w.sent[5], now)
    assert w.sent[5] == 125                 # one share and one probe, not a share a silence
    w.heard(B, now)                         # it speaks (a load report), then falls silent
    w.expire(now + STALE_SECS + 1.0, owner)
    assert not w.saturated and w.limit[5] == 150


def test_a_receiver_that_lost_a_grant_answers_the_probe() -> None:
    g, ts, _, told = grants(high=100)
    w, _ = windows(high=100)
    w.sent_to(5, 100, 0.0)
    arrive(g, ts, B, 100)
    ts.queue.clear()                        # the task took them all
    g.grant(send(told), 0.0)
    assert told == [(B, "credit", ["me", [[5, 100, 200]]])]     # lost on its way
    told.clear()
    w.expire(STALE_SECS + 1.0, owner)
    probe = w.limit[5] - w.sent[5]
    w.sent_to(5, probe, STALE_SECS + 1.0)
    arrive(g, ts, B, probe)
    ts.queue.clear()
    g.grant(send(told), STALE_SECS + 1.0)
    (who, _, (incarnation, grant)), = told
    w.credit(who, incarnation, grant, owner, STALE_SECS + 1.0)
    assert not w.saturated and w.limit[5] == 100 + probe + 100


def test_a_receiver_that_died_before_its_first_report_is_probed_once_by_its_next_life() -> None:
    # a share sent to a life that died unheard: its next life counts from nothing and
    # grants only from what arrives, so without a probe the sender would wait for good
    w, _ = windows(high=100)
    w.sent_to(5, 100, 0.0)
    w.credit(B, "b2", [[5, 0, 100]], owner, 1.0)           # the next life's opening
    assert w.saturated == {5} and w.sent[5] == 100
    now = 1.0
    while now < STALE_SECS + 2.0:                           # it talks (load reports, say)
        w.heard(B, now)
        w.expire(now, owner)
        now += 1.0
    assert not w.saturated and w.limit[5] == 125
    assert w.sent_to(5, 25, now)
    w.heard(B, now + STALE_SECS + 1.0)
    w.expire(now + STALE_SECS + 2.0, owner)
    assert w.saturated == {5}                               # once per life
    w.credit(B, "b2", [[5, 25, 125]], owner, now + STALE_SECS + 3.0)
    assert w.saturated == {5}


def test_a_talking_receiver_that_told_what_arrived_is_not_probed_while_its_queue_is_full(
        ) -> None:
    w, _ = windows(high=100)
    w.credit(B, "b1", [[5, 0, 100]], owner, 0.0)
    w.sent_to(5, 100, 0.0)
    w.credit(B, "b1", [[5, 60, 100]], owner, 0.5)           # a full queue: no room to grant
    for now in range(1, 40):
        w.heard(B, float(now))
        w.expire(float(now), owner)
    assert w.saturated == {5} and w.limit[5] == 100
