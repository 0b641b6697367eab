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
