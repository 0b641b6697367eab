"""What every executor shares: its tasks, the worker's services it is handed, and the
contract the loop drives it by."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from squall.runtime.executors.handoff import Handoff
from squall.runtime.task import TaskState

if TYPE_CHECKING:
    from squall.metrics.stats import WindowedStats
    from squall.runtime.acks import AckLedger
    from squall.runtime.emit import Clock
    from squall.runtime.flow import Backpressure
    from squall.runtime.loop import Loop
    from squall.runtime.streams import Sources

_perf = time.perf_counter
INF = float("inf")


def pass_cap(done: int, spent: float, seconds: float) -> int:
    """How many calls (tuples, ``next_tuple`` calls) a task's next pass may take to last
    about ``seconds``, from a pass that took ``done`` in ``spent`` seconds: at least 1, and
    twice as many when the clock saw no time pass."""
    return max(1, int(seconds * done / spent)) if spent > 0 else done << 1


class Services:
    """What an executor may use of its worker, built once by the worker: the ack ledger,
    the loop (its clock, wake-up and running state), backpressure's verdict for spouts, the
    streams' sources, error reporting (``report_error(ts, exc, user=False)``: ``user`` errors
    never stop the worker) and the batch size."""

    __slots__ = ("acks", "batch_size", "clock", "flow", "loop", "report_error", "sources")

    def __init__(self, *, acks: AckLedger, loop: Loop, clock: Clock, flow: Backpressure,
                 sources: Sources, report_error: Callable[..., None],
                 batch_size: int) -> None:
        self.acks = acks
        self.loop = loop
        self.clock = clock
        self.flow = flow
        self.sources = sources
        self.report_error = report_error
        self.batch_size = batch_size


class Executor:
    """Runs a contiguous range of one component's tasks inside a worker's loop.

    ``run_once()`` does a bounded amount of work (at most about one batch per task) and
    returns how much it did, so one loop interleaves every executor of a worker
    cooperatively. Every method runs on the worker's loop thread unless it says otherwise.
    """

    kind = "bolt"
    #: whether the component runs on a thread of its own (executors.threaded)
    threaded = False
    #: whether its components may call ``emit`` and ``emit_many`` from threads of their own
    #: on the loop (spouts, bolts that ack themselves): their emits check the calling
    #: thread and hand another's call to the loop (.handoff); ``ack`` and ``fail`` always do
    checks_threads = False

    def __init__(self, services: Services, component_id: str, tasks: list[TaskState]) -> None:
        self.services = services
        self.component_id = component_id
        self.tasks = tasks
        self.batch = services.batch_size
        self.flow = services.flow
        #: the tasks this executor's emits may reach (backpressure blocks it while one of
        #: them is congested); known once the routes are built (:meth:`routes_built`)
        self.downstream: frozenset[int] = frozenset()
        #: passes that found a downstream task congested and did nothing (bolts, spouts)
        self.paused = 0
        self.start_time = time.time()
        #: windowed stats and the counters at the last fold (squall.runtime.stats)
        self.windows: WindowedStats | None = None
        self.last_fold: dict[str, Any] = {}
        #: how its components' calls from threads of their own reach the loop (.handoff)
        self.handoff = Handoff(services.loop, services.report_error, services.acks.fail_tuple)
        for ts in tasks:
            ts.executor = self

    @classmethod
    def takes_runs(cls, component_cls: type) -> bool:
        """Whether this executor's queues take TupleRun entries for a component of class
        ``component_cls`` (a ``lazy_batch`` bolt on the loop)."""
        return False

    @property
    def range(self) -> tuple[int, int]:
        return (self.tasks[0].task, self.tasks[-1].task)

    def routes_built(self) -> None:
        """Learn the downstream tasks from the tasks' routes (called by the worker once
        every route is built)."""
        self.downstream = frozenset(t for ts in self.tasks for routes in ts.routes.values()
                                    for route in routes for t in route.targets)

    def run_once(self) -> int:
        raise NotImplementedError

    def on_timer(self, now: float) -> None:
        """Called every few milliseconds from the loop (ticks, rotations)."""

    def poll_due(self) -> float:
        """When (loop clock, ``time.monotonic``) this executor needs a pass though nothing
        wakes the loop: a spout the loop asks for ``next_tuple`` again once its tasks' wait
        after an empty call is over; ``inf``: never. Every other executor's work comes
        with a wake-up (tuples received, calls from a component's thread) or with a loop
        pass (local queues, timers), so a worker none of whose executors polls waits for
        the next timer when idle. Called on the loop thread, by passes that found nothing
        to do only (never per tuple)."""
        return INF

    def install(self, ts: TaskState) -> None:
        """Put the runtime's methods a component calls (``ack``, ``fail``, ...) on the
        task's instance, after ``emit`` and ``emit_many``."""

    def queued(self) -> int:
        """Tuples and calls this executor holds outside its tasks' queues: calls its
        components' own threads handed to the loop (.handoff)."""
        return self.handoff.queued()

    def stop(self) -> None:
        """Call the components' cleanup/close; errors are logged, never raised."""
