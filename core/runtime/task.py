"""One task's state (:class:`TaskState`) and this worker's tasks by id (:class:`LocalTasks`).

Everything here is read and written on the worker's loop thread, except the fields a
component on a thread of its own uses (``thread_*``), which its executor documents.
"""
from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from squall.api.tuple import Source, Tuple
from squall.metrics import histogram

if TYPE_CHECKING:
    from squall.api.context import TopologyContext
    from squall.metrics.registry import MetricRegistry
    from squall.runtime.executors.base import Executor
    from squall.runtime.routing import Route


class TaskState:
    """One task: its component instance, inbound queue, routes and counters.

    Counters are plain integers and floats, folded into stats on a timer."""

    __slots__ = (
        "acked", "applied_tracked", "complete_hist", "complete_ms", "complete_n",
        "complete_samples", "component_id", "conf", "context", "current", "deferred",
        "deferred_fails", "emitted", "exec_hist", "exec_ms", "exec_n", "exec_samples", "executed",
        "executor", "failed", "idle_until", "initialized", "instance", "metrics", "pass_cap",
        "pending_new",
        "pending_old", "proc_ms", "proc_n", "put_tracked", "queue", "queue_peak", "root_plan",
        "routes",
        "run_extra", "samples", "sources", "task", "thread_current", "thread_emits",
        "thread_samples", "ticks", "transfer_extra",
    )

    def __init__(self, component_id: str, task: int, instance: Any,
                 conf: dict[str, Any]) -> None:
        self.component_id = component_id
        self.task = task
        self.instance = instance
        self.conf = conf
        #: inbound: Tuples, and for a lazy_batch bolt also TupleRuns; for a spout, the
        #: completions of its trees ((root, ok), or ack/fail Tuples from another worker)
        self.queue: deque[Any] = deque()
        #: the most tuples the queue and what waited in front of it in the inbox have held
        #: (measured by backpressure, twice a pass)
        self.queue_peak = 0
        self.routes: dict[str, list[Route]] = {}
        self.sources: dict[str, Source] = {}
        self.executor: Executor | None = None
        self.context: TopologyContext | None = None
        #: set once the instance's ``initialize`` returned: only then is its ``cleanup`` /
        #: ``close`` called at the stop (the worker's start may fail before or inside it)
        self.initialized = False
        #: user metrics (squall.metrics.registry), made at the first registration
        self.metrics: MetricRegistry | None = None
        #: the tuple in process: an emit without ``anchors`` is anchored to it
        self.current: Tuple | None = None
        #: tick tuples that may be queued: counted down as a bolt runs them (a batch takes
        #: them all); while 0, a bolt's pass need not look for them
        self.ticks = 0
        self.run_extra = 0           # tuples in queued TupleRuns beyond one per run
        self.pass_cap = 0            # most tuples one pass may take (set from measured cost)
        self.emitted = 0
        #: transferred = emitted + transfer_extra: an emit to one task (every fast path) is
        #: counted once, by ``emitted``; the general path adds its targets beyond one here
        self.transfer_extra = 0
        self.acked = 0
        self.failed = 0
        self.executed = 0
        self.exec_ms = 0.0
        self.exec_n = 0
        #: latency histograms (squall.metrics.histogram) for the percentiles, emptied by each
        #: stats fold: a bolt's pass that crosses a 16th tuple, a spout's 16th completion
        self.exec_hist = histogram.new()
        self.complete_hist = histogram.new()
        #: the samples added to each histogram so far (a bolt's pass is one sample, however
        #: many tuples it weighs): the percentiles' sample count (squall.metrics.stats)
        self.exec_samples = 0
        self.complete_samples = 0
        #: process latency: (ms, samples); see BoltExecutor.run_once and ack_function
        self.proc_ms = 0.0
        self.proc_n = 0
        #: tuples of a bolt without auto_ack sampled for process latency: id -> (tuple, start)
        self.samples: dict[int, tuple[Any, float]] = {}
        self.complete_ms = 0.0
        self.complete_n = 0
        #: how this task (a spout) draws root ids: ``rand(bits) * mul + home`` (see
        #: AckLedger.root_plan)
        self.root_plan = (64, 1, 0)
        # a spout's trees in flight (root -> (tup_id, start)), in two generations rotated
        # every message timeout; untracked emits' tup_ids, acked after its next_tuple (those
        # whose emit raised: failed then)
        self.pending_new: dict[int, tuple[Any, float]] = {}
        self.pending_old: dict[int, tuple[Any, float]] = {}
        self.deferred: list[Any] = []
        self.deferred_fails: list[Any] = []
        self.idle_until = 0.0        # a spout that emitted nothing rests until then
        # a component on a thread of its own (squall.runtime.executors.threaded)
        self.thread_current: Tuple | None = None
        self.thread_samples: dict[int, float] = {}
        self.thread_emits = 0
        self.put_tracked = 0
        self.applied_tracked = 0

    @property
    def transferred(self) -> int:
        """Tuples sent to tasks by this task's emits (one per target task, local or remote)."""
        return self.emitted + self.transfer_extra

    def queued(self) -> int:
        """Tuples waiting in the inbound queue (a TupleRun counts its tuples)."""
        return len(self.queue) + self.run_extra

    def counters(self) -> dict[str, Any]:
        return {"emitted": self.emitted, "transferred": self.transferred, "acked": self.acked,
                "failed": self.failed, "executed": self.executed,
                "execute_ms": (self.exec_ms, self.exec_n),
                "process_ms": (self.proc_ms, self.proc_n),
                "complete_ms": (self.complete_ms, self.complete_n)}


class LocalTasks:
    """This worker's tasks by id, and the views of them the hot paths look tasks up in.

    A task id not in ``queues`` runs in another worker. Built once, when the executors are;
    never changed afterwards (a rebalance starts new workers)."""

    __slots__ = ("ackers", "ids", "lazy", "queues", "spout_queues", "states")

    def __init__(self, states: dict[int, TaskState], lazy: set[int], ackers: set[int],
                 spouts: set[int]) -> None:
        self.states = states
        self.ids = sorted(states)
        self.queues: dict[int, deque[Any]] = {t: ts.queue for t, ts in states.items()}
        #: the tasks of ``lazy_batch`` bolts, whose queues also take TupleRun entries
        self.lazy: dict[int, TaskState] = {t: states[t] for t in lazy}
        #: acker tasks: their acker is fed directly (AckLedger), not through their queue
        self.ackers: dict[int, TaskState] = {t: states[t] for t in ackers}
        #: spout tasks: an acker here queues their completions as (root, ok)
        self.spout_queues: dict[int, deque[Any]] = {t: states[t].queue for t in spouts}

    def queued(self) -> int:
        """Tuples waiting in every queue (TupleRuns counted by their tuples)."""
        return (sum(len(q) for q in self.queues.values())
                + sum(t.run_extra for t in self.lazy.values()))
