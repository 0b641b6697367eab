"""The inbox counts what waits for the loop in bytes: the backlog backpressure reads is the
payload bytes the receive thread took from the transport and the loop has not decoded."""
from __future__ import annotations

from typing import Any

from squall.runtime.task import LocalTasks
from squall.runtime.wire import codec
from squall.runtime.wire.inbox import INBOX_BYTES, Inbox
from squall.serializers.msgpack import MsgpackSerializer
from squall.testing import wait_until
from squall.transports.local import LocalTransport


def inbox_on(transport: LocalTransport, topology: str, control: list[Any],
             port: int = 0) -> Inbox:
    inbox = Inbox(tasks=LocalTasks({}, lazy=set(), ackers=set(), spouts=set()),
                  sources=None, task_to_component={}, acks=None,       # type: ignore[arg-type]
                  outbox=None, serializer=MsgpackSerializer(),         # type: ignore[arg-type]
                  control=lambda kind, who, value: control.append((kind, who, value)),
                  wake=lambda: None, room=100, incarnation="me")
    inbox.bind(transport, topology, port)
    return inbox


def test_the_backlog_is_the_bytes_received_and_not_yet_taken() -> None:
    transport = LocalTransport({})
    seen: list[Any] = []
    inbox = inbox_on(transport, "inbox-bytes", seen)
    try:
        dumps = MsgpackSerializer().dumps
        messages = [codec.control("note", "h:1", "x" * size, dumps)[0]
                    for size in (10, 1000, 50_000)]
        transport.connect("inbox-bytes", "127.0.0.1", inbox.port).send(messages)
        total = sum(len(payload) for _, payload in messages)
        wait_until(lambda: len(inbox.pending) == 3, 10, message="the messages never arrived")
        assert inbox.backlog() == total
        inbox.dispatch()
        assert inbox.backlog() == 0
        assert [len(value) for _, _, value in seen] == [10, 1000, 50_000]
    finally:
        inbox.close(5)


def test_a_receive_thread_past_the_limit_pauses_until_the_loop_takes_and_loses_nothing() -> None:
    transport = LocalTransport({})
    seen: list[Any] = []
    dumps = MsgpackSerializer().dumps
    big = [codec.control("big", "h:1", i.to_bytes(2, "big") * (64 << 10), dumps)[0]
           for i in range(INBOX_BYTES // (128 << 10) + 4)]
    sender = transport.connect("inbox-limit", "127.0.0.1", 7000)
    sender.send(big)                    # waits for the bind; arrives in one take
    inbox = inbox_on(transport, "inbox-limit", seen, 7000)
    try:
        wait_until(lambda: inbox.receive_paused, 10, message="the receive thread never paused")
        assert inbox.backlog() >= INBOX_BYTES
        sender.send(codec.control("after", "h:1", "last", dumps))
        while len(seen) < len(big) + 1:
            inbox.dispatch()            # the loop's side: take what waits, 64 at most a call
            wait_until(lambda: inbox.pending or len(seen) == len(big) + 1, 10,
                       message=lambda: f"{len(seen)} of {len(big) + 1} arrived")
        assert [kind for kind, _, _ in seen] == ["big"] * len(big) + ["after"]
        assert [value[:2] for _, _, value in seen[:-1]] == \
            [i.to_bytes(2, "big") for i in range(len(big))]
        assert inbox.backlog() == 0
        wait_until(lambda: not inbox.receive_paused, 10, message="still paused")
    finally:
        inbox.close(5)


class _Acks:
    local: dict[int, Any] = {}

    def __init__(self) -> None:
        self.failed: list[set[int]] = []

    def fail_lost(self, roots: set[int]) -> None:
        self.failed.append(roots)


class _Outbox:
    task_to_worker = {3: ("h", 9), 7: ("h", 1)}


def sink_inbox(acks: _Acks) -> Inbox:
    """An inbox whose one task, 7 of component sink, takes stream default of src (task 3)."""
    from squall.runtime.task import TaskState
    ts = TaskState("sink", 7, None, {})
    return Inbox(tasks=LocalTasks({7: ts}, lazy=set(), ackers=set(), spouts=set()),
                 sources=None, task_to_component={3: "src", 7: "sink"},  # type: ignore[arg-type]
                 acks=acks, outbox=_Outbox(), serializer=MsgpackSerializer(),  # type: ignore[arg-type]
                 control=lambda kind, who, value: None, wake=lambda: None, room=100,
                 incarnation="me", accepts={7: {("src", "default"): 1}})


def test_a_malformed_message_fails_the_trees_it_names_at_once(caplog: Any) -> None:
    # 2 values, 1 id: it decodes but does not check out; nothing of it is delivered, and
    # the trees of its tuples fail now instead of at their timeout
    acks = _Acks()
    inbox = sink_inbox(acks)
    dumps = MsgpackSerializer().dumps
    inbox.pending.append((7, dumps([[3, "default", [2, [1, 2]], [5], [[70, 71], 0]]])))
    inbox.pending.append((7, dumps([[3, "default", [1, [1]], [6], [[72]]],
                                    [3, "nope", [1, [1]], [8], [[73]]]])))
    assert inbox.dispatch() == 0
    assert acks.failed == [{70, 71}, {72, 73}] and inbox.dropped == 2
    assert not inbox.tasks.states[7].queue
    assert "malformed batch" in caplog.text and "(sender h:9)" in caplog.text
    assert "task 7 (sink)" in caplog.text


def test_a_message_that_does_not_decode_is_logged_without_a_sender(caplog: Any) -> None:
    acks = _Acks()
    inbox = sink_inbox(acks)
    inbox.pending.append((7, b"\xc1"))
    inbox.pending.append((7, b"\x91\xc1"))
    inbox.dispatch()
    assert inbox.dropped == 2 and not acks.failed
    (line,) = [r.getMessage() for r in caplog.records]
    assert "cannot decode a message of 1 bytes for task 7 (sink)" in line
    assert "fail when they time out" in line and "sender" not in line
