"""How loaded a worker's tasks are, told to the other workers, and fed to load-aware groupings.

A task's load is the larger of its worker's pressure (the share of the last interval the
worker spent overloaded, throttling the spouts: one loop runs all of a worker's executors, so a
worker that cannot keep up is slow for every task in it, however short that task's own queue)
and how full the task's inbound queue is against the backpressure high watermark. (Not the
share of time the loop was busy: a worker with a spout always has work.)

Every ``LOAD_INTERVAL`` seconds a worker measures the loads of its tasks that some load-aware
grouping chooses among, sends them to the other workers (a control entry, only when one moved
by ``RESEND_DELTA`` or ``RESEND_SECS`` passed), and calls ``refresh_load`` on the groupings of
its own emitting tasks with what it knows of every target (its own measures, the others' last
reports) and where each target runs.
"""
from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from squall.api.groupings import EVERYWHERE, HOST_LOCAL, WORKER_LOCAL, LoadMapping
from squall.errors import ConfigError
from squall.spi.grouping import LoadAwareGrouping

if TYPE_CHECKING:
    from squall.api.topology import Topology
    from squall.runtime.flow import Backpressure
    from squall.runtime.task import LocalTasks
    from squall.runtime.wire.outbox import Outbox

log = logging.getLogger("squall.worker")

LOAD_INTERVAL = 0.5     # seconds between measures / refreshes
RESEND_DELTA = 0.05     # a task's load moved this much since it was last sent: send now
RESEND_SECS = 2.0       # ... and at least this often while anyone listens

DISABLE_KEY = "topology.disable.loadaware.messaging"
HIGHER_KEY = "topology.localityaware.higher.bound"
LOWER_KEY = "topology.localityaware.lower.bound"


def bounds(conf: Mapping[str, Any]) -> tuple[float, float]:
    """(higher, lower) locality bounds; ConfigError unless 0 <= lower <= higher <= 1."""
    higher = conf.get(HIGHER_KEY, 0.8)
    lower = conf.get(LOWER_KEY, 0.2)
    for key, v in ((HIGHER_KEY, higher), (LOWER_KEY, lower)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
            raise ConfigError(f"config key {key!r} must be a number from 0 to 1, got {v!r}")
    if lower > higher:
        raise ConfigError(f"config key {LOWER_KEY!r} ({lower}) must not exceed "
                          f"{HIGHER_KEY!r} ({higher})")
    return float(higher), float(lower)


def watched_components(topology: Any, conf: Mapping[str, Any]) -> set[str]:
    """Components some subscriber reaches through a grouping that may steer by load (a
    shuffle unless ``topology.disable.loadaware.messaging``; any custom grouping)."""
    kinds = ("custom",) if conf.get(DISABLE_KEY) else ("shuffle", "custom")
    return {comp_id for comp_id, spec in topology.components.items()
            for inp in getattr(spec, "inputs", ()) if inp.grouping in kinds}


class LoadTracker:
    """One worker's side of load-aware messaging (driven by the worker's loop).

    Collaborators: this worker's tasks, the outbox (which workers there are, where each
    task runs, and the control messages to them), backpressure (how long this worker was
    overloaded, and the high watermark) and the worker's host."""

    def __init__(self, *, topology: Topology, conf: dict[str, Any], tasks: LocalTasks,
                 outbox: Outbox, flow: Backpressure, host: str) -> None:
        self.tasks = tasks
        self.outbox = outbox
        self.flow = flow
        self.host = host
        states = tasks.states.values()
        self.groupings: list[LoadAwareGrouping] = [
            r.grouping for ts in states for routes in ts.routes.values() for r in routes
            if isinstance(r.grouping, LoadAwareGrouping)]
        watched = watched_components(topology, conf)
        #: this worker's tasks that some grouping (here or elsewhere) chooses among
        self.watched = [ts for ts in states if ts.component_id in watched]
        #: other workers' tasks -> their last reported load
        self.remote: dict[int, float] = {}
        self.next_at = 0.0
        self.last_overloaded = 0.0
        self.last_at: float | None = None
        #: share of the last interval this worker spent overloaded
        self.pressure = 0.0
        self.sent: dict[int, float] = {}
        self.sent_at = -RESEND_SECS
        self.sent_peers: frozenset[Any] = frozenset()
        self._scopes_for: Any = None
        self.scopes: dict[int, int] = {}
        self.failed: set[int] = set()      # groupings whose refresh_load raised (reported once)

    def on_report(self, who: str, value: Any) -> None:
        """Another worker's load report (a control message)."""
        try:
            self.remote.update(parse_report(value))
        except ValueError as exc:
            log.warning("worker %s ignored a load report from %.60r: %s", self.host, who, exc)

    def reassigned(self, before: dict[int, Any], after: dict[int, Any]) -> None:
        """A task that moved is measured afresh by its new worker."""
        self.remote = {t: v for t, v in self.remote.items() if after.get(t) == before.get(t)}

    def tick(self, now: float) -> None:
        if now < self.next_at:
            return
        self.next_at = now + LOAD_INTERVAL
        if not self.watched and not self.groupings:
            return
        overloaded = self.flow.overloaded_total(now)
        if self.last_at is not None and now > self.last_at:
            self.pressure = min(1.0, max(0.0, (overloaded - self.last_overloaded)
                                         / (now - self.last_at)))
        self.last_at, self.last_overloaded = now, overloaded
        mine = self.measure()
        self.send(mine, now)
        if self.groupings:
            self.refresh(mine)

    def measure(self) -> dict[int, float]:
        high = max(1, self.flow.high)
        pressure = self.pressure
        return {ts.task: max(pressure, min(1.0, ts.queued() / high)) for ts in self.watched}

    def send(self, mine: dict[int, float], now: float) -> None:
        if not mine:
            return
        peers = self.outbox.peers()
        if not peers:
            return
        sent = self.sent
        if (peers == self.sent_peers and now - self.sent_at < RESEND_SECS
                and all(abs(v - sent.get(t, -1.0)) < RESEND_DELTA for t, v in mine.items())):
            return
        self.sent, self.sent_at, self.sent_peers = dict(mine), now, peers
        self.outbox.broadcast_control("load", [[t, round(v, 3)] for t, v in mine.items()])

    def refresh(self, mine: dict[int, float]) -> None:
        loads = dict(self.remote)
        loads.update(mine)
        mapping = LoadMapping(loads, self.locality())
        for g in self.groupings:
            try:
                g.refresh_load(mapping)
            except Exception as exc:
                if id(g) not in self.failed:
                    self.failed.add(id(g))
                    log.warning("worker %s: %s.refresh_load failed (its choices stay as they "
                                "were): %r", self.host, type(g).__name__, exc)

    def locality(self) -> dict[int, int]:
        """Task -> WORKER_LOCAL / HOST_LOCAL / EVERYWHERE, recomputed when the assignment
        changes."""
        assignment = self.outbox.task_to_worker
        if assignment is not self._scopes_for:
            self._scopes_for = assignment
            self.scopes = {t: HOST_LOCAL if str(host) == str(self.host) else EVERYWHERE
                           for t, (host, _port) in assignment.items()}
            self.scopes.update(dict.fromkeys(self.tasks.queues, WORKER_LOCAL))
        return self.scopes


def parse_report(value: Any) -> dict[int, float]:
    """A peer's load report ``[[task, load], ...]``; ValueError if it is anything else."""
    if not isinstance(value, list):
        raise ValueError(f"a load report must be a list of [task, load] pairs, got {value!r:.80}")
    out = {}
    for pair in value:
        if (not isinstance(pair, (list, tuple)) or len(pair) != 2
                or pair[0].__class__ is not int or isinstance(pair[1], bool)
                or not isinstance(pair[1], (int, float)) or not 0 <= pair[1] <= 1):
            raise ValueError(f"a load report entry must be [task id, load from 0 to 1], got "
                             f"{pair!r:.80}")
        out[pair[0]] = float(pair[1])
    return out


__all__ = ["EVERYWHERE", "HOST_LOCAL", "LOAD_INTERVAL", "LoadTracker", "WORKER_LOCAL", "bounds",
           "parse_report", "watched_components"]
