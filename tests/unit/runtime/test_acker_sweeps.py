"""The acker executor rotates its ackers' trees every message timeout, and with
``topology.enable.message.timeouts: false`` sweeps them instead (no tree expires, only what
acks left for trees whose init never came is dropped), so an acker's memory stays bounded
without timeouts (late acks of failed trees)."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from squall.ackers.xor import XorAcker
from squall.runtime.executors.acker import AckerExecutor
from squall.runtime.task import TaskState


class Calls(XorAcker):
    """The XOR acker, recording the executor's timer calls."""

    def __init__(self, conf: Any = None) -> None:
        super().__init__(conf)
        self.calls: list[str] = []

    def rotate(self) -> list[tuple[int, int]]:
        self.calls.append("rotate")
        return super().rotate()

    def sweep(self) -> None:
        self.calls.append("sweep")
        super().sweep()


def _executor(timeouts: bool) -> tuple[AckerExecutor, Calls, list[Any]]:
    conf = {"topology.message.timeout.secs": 10, "topology.enable.message.timeouts": timeouts}
    acker = Calls(conf)
    raised: list[Any] = []
    services: Any = SimpleNamespace(
        acks=SimpleNamespace(fail_tuple=None,
                             acker_raised=lambda ts, call, exc: raised.append((call, exc))),
        loop=None, clock=None, flow=None, sources=None, report_error=None, batch_size=64)
    ex = AckerExecutor(services, "__acker", [TaskState("__acker", 1, acker, conf)])
    return ex, acker, raised


@pytest.mark.parametrize("timeouts", [True, False], ids=["timeouts", "no-timeouts"])
def test_every_message_timeout_the_ackers_rotate_or_without_timeouts_sweep(
        timeouts: bool) -> None:
    ex, acker, raised = _executor(timeouts)
    start = ex.next_rotate
    ex.on_timer(start - 1)
    assert acker.calls == []
    ex.on_timer(start)
    ex.on_timer(start + 5)
    ex.on_timer(start + 10)
    assert acker.calls == ["rotate" if timeouts else "sweep"] * 2 and raised == []


def test_without_timeouts_late_acks_of_failed_trees_do_not_stay() -> None:
    ex, acker, _ = _executor(False)
    acker.init(1, 0b1010, 2)                # a live tree: stays however long
    for root in range(2, 1002):             # failed trees whose other tuples ack after
        acker.init(root, 0b11, 2)
        acker.fail(root)
        acker.ack(root, 0b01)
    assert acker.pending() == 1001
    for n in range(3):
        ex.on_timer(ex.next_rotate + n)
    assert acker.pending() == 1 and acker.calls == ["sweep"] * 3
    assert acker.ack(1, 0b1010) == (2, True)


def test_an_acker_plugin_that_raises_in_sweep_is_reported_and_the_loop_goes_on() -> None:
    ex, acker, raised = _executor(False)

    def broken() -> None:
        raise RuntimeError("sweep bug")

    acker.sweep = broken  # type: ignore[method-assign]
    ex.on_timer(ex.next_rotate)
    assert [call for call, _ in raised] == ["sweep"]
