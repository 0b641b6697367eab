"""Batches bigger than a transport carries, over real sockets: two workers of one topology on
127.0.0.1, one spout emitting in one pass tuples that each fit in a transport message while
the batch for the other worker does not (grpc with ``max.message.mb: 1``; nng with its
limit lowered to 1 MiB for the test, where it is 256 MiB). Every tuple that fits arrives
and is acked; the one that alone does not fit fails at once and is one error of the spout."""
from __future__ import annotations

import threading
from typing import Any

import pytest

from squall import Bolt, Spout, TopologyBuilder, config, drivers
from squall.daemon.ports import free_port
from squall.runtime.local_cluster import assign_even
from squall.runtime.system import add_system_components
from squall.runtime.worker import Worker
from squall.testing import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

LOCK = threading.Lock()
ACKED: list[int] = []
FAILED: list[int] = []
SEEN: list[tuple[int, int]] = []        # (task, index)
SIZES = [20_000] * 400
BIG = 123                               # this one alone is over the limit


class Values(Spout):
    outputs = ["i", "blob"]

    def initialize(self, conf: dict[str, Any], context: Any) -> None:
        self.done = False

    def next_tuple(self) -> None:
        if not self.done:
            self.done = True
            for i, size in enumerate(SIZES):
                self.emit([i, b"x" * size], tup_id=i)

    def ack(self, tup_id: Any) -> None:
        with LOCK:
            ACKED.append(tup_id)

    def fail(self, tup_id: Any) -> None:
        with LOCK:
            FAILED.append(tup_id)


class Sink(Bolt):
    def process(self, tup: Any) -> None:
        with LOCK:
            SEEN.append((self.context.task_id, tup.values[0]))


@pytest.mark.parametrize("transport_name", ["grpc", "nng"])
def test_a_batch_over_the_transport_limit_arrives_in_parts(
        transport_name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for got in (ACKED, FAILED, SEEN):
        got.clear()
    SIZES[BIG] = 1_200_000
    if transport_name == "nng":
        from squall.plugins.transport_nng import sender
        from squall.plugins.transport_nng.transport import NngTransport
        monkeypatch.setattr(sender, "MAX_FRAME", 1 << 20)
        monkeypatch.setattr(NngTransport, "max_frame_bytes", 1 << 20)
    b = TopologyBuilder()
    b.set_spout("values", Values)
    b.set_bolt("sink", Sink, 2).all_grouping("values")
    conf = {**config.defaults(), "squall.transport": transport_name, "topology.workers": 2,
            "topology.name": "frames", "topology.message.timeout.secs": 60,
            "squall.transport.grpc.max.message.mb": 1}
    topo = add_system_components(b.create_topology(), conf)
    layout = assign_even(topo, 2)
    ports = [free_port() for _ in layout]
    task_to_worker = {t: ("127.0.0.1", port) for port, execs in zip(ports, layout)
                      for s, e in execs for t in range(s, e + 1)}
    transport = drivers.driver("transport", conf)
    workers = [Worker(conf=conf, topology=topo, topology_id="frames-1-1", port=port,
                      executors=execs, task_to_worker=task_to_worker, transport=transport,
                      host="127.0.0.1") for port, execs in zip(ports, layout)]
    try:
        for w in workers:
            w.start()
        for w in workers:
            w.activate()
        wait_until(lambda: len(ACKED) + len(FAILED) == len(SIZES), 60,
                   message=lambda: f"acked {len(ACKED)}, failed {sorted(FAILED)[:10]}")
        assert FAILED == [BIG]
        assert sorted(ACKED) == [i for i in range(len(SIZES)) if i != BIG]
        with LOCK:
            seen = list(SEEN)
        assert len(seen) == 2 * len(SIZES) - 1 and len({task for task, _ in seen}) == 2
        # in emit order in each task
        for task in {task for task, _ in seen}:
            order = [i for t, i in seen if t == task]
            assert order == sorted(order)
        spout_worker = next(w for w in workers if any(
            ts.component_id == "values" for ts in w.tasks.values()))
        errors = spout_worker.drain_errors()
        assert len(errors) == 1 and errors[0]["component"] == "values"
        assert "stream 'default'" in errors[0]["error"] and "a tuple serialized to 12" in \
            errors[0]["error"] and f"transport {transport_name!r}" in errors[0]["error"]
        assert all(w.is_alive() for w in workers)
    finally:
        for w in workers:
            w.shutdown()
        transport.close()
