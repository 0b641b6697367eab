"""What every emit path checks before it sends anything (squall.runtime.emit.general.routes_of):
a ``direct_task`` only on a stream declared direct, and only a task id (an int) of one of its
subscribers."""
from __future__ import annotations

from typing import Any

import pytest

from squall import Bolt, Spout, Stream, TopologyBuilder, TopologyError
from squall.api.topology import Topology
from squall.runtime.emit import build_routes
from squall.runtime.emit.general import routes_of
from squall.runtime.streams import Sources
from squall.runtime.task import TaskState


class Src(Spout):
    outputs = [Stream(["x"], name="d", direct=True), Stream(["x"]),
               Stream(["x"], name="lonely", direct=True), Stream(["x"], name="plain_nosub")]


class Sink(Bolt):
    def process(self, tup: Any) -> None:
        pass


def _task() -> tuple[TaskState, Topology]:
    """The spout's task, its routes built as a worker builds them: ``d`` (direct) to ``a``,
    ``default`` to ``other``; ``lonely`` (direct) and ``plain_nosub`` have no subscriber."""
    b = TopologyBuilder()
    b.set_spout("src", Src)
    b.set_bolt("a", Sink, 3).direct_grouping("src", "d")
    b.set_bolt("other", Sink, 2).all_grouping("src")
    topo = b.create_topology()
    ts = TaskState("src", topo.tasks("src")[0], None, {})
    build_routes(ts, topo, Sources(topo), None)
    return ts, topo


def test_a_direct_task_of_a_subscriber_routes_the_emit() -> None:
    ts, topo = _task()
    routes = routes_of(ts, "d", topo.tasks("a")[-1])
    assert [r.component for r in routes] == ["a"]
    assert routes_of(ts, "lonely", 99999) == []     # nobody subscribes: nothing to send


@pytest.mark.parametrize("stream", ["default", "plain_nosub"])
def test_direct_task_on_a_stream_not_declared_direct_raises_subscribed_or_not(
        stream: str) -> None:
    """API.md section 2: direct_task only on streams declared direct=True; a stream that
    nobody subscribes to (yet) is no exception."""
    ts, topo = _task()
    with pytest.raises(TopologyError, match=f"direct_task given on stream '{stream}', which "
                                            "is not declared direct=True"):
        routes_of(ts, stream, topo.tasks("other")[0])


@pytest.mark.parametrize("task", [lambda ts: float(ts[-1]), lambda ts: True,
                                  lambda ts: str(ts[0])], ids=["float", "bool", "str"])
def test_a_direct_task_that_is_no_int_is_not_a_task_of_a_subscriber(task: Any) -> None:
    """2.0 == 2 and True == 1 would pass a test of membership, be delivered in the emitter's
    worker and refused by the transport in another, failing every tuple of its batch."""
    ts, topo = _task()
    targets = topo.tasks("a")
    assert 1 in targets             # True == 1
    bad = task(targets)
    with pytest.raises(TopologyError, match=rf"direct_task {bad!r} \(a {type(bad).__name__}, "
                                            r"not an int\) is not a task of a component "
                                            rf"subscribed to stream 'd' \(a: \[1, 2, 3\]\)"):
        routes_of(ts, "d", bad)
    with pytest.raises(TopologyError, match=r"stream 'lonely' \(none\)"):
        routes_of(ts, "lonely", bad)
