"""Nimbus's scheduling pass: liveness from worker beats, the scheduler, ``/assignments``.

Liveness follows Storm: nimbus remembers, on its own clock, when each worker's beat in
``/workerbeats/<topology>/<node>-<port>`` last changed. An executor is alive while it was started
less than ``nimbus.task.launch.secs`` ago, or its worker's beat lists it and changed within
``nimbus.task.timeout.secs``. Dead executors, and those on supervisors that are gone, lose their
slots; the configured scheduler places them again and the changed assignments are written.
The slots where executors timed out are left out of the scheduler's view for a while, so they
move to another free slot rather than back to the one their worker cannot start on; with no
other slot free they stay and their supervisor keeps relaunching the worker there
(:mod:`~squall.daemon.nimbus_slot_failures`, which also says what happened, once). A host:port
that two live supervisors offer is kept for one of them and left out of the others' ports
(:mod:`~squall.daemon.nimbus_slot_clashes`); a topology short of workers meanwhile says why in
its status reason. A topology whose workers' supervisors use different default transports,
serializers or transport security says so in its status reason too
(:mod:`~squall.daemon.nimbus_worker_defaults`),
and so does one whose package on nimbus is damaged (:meth:`CodeStore.problem
<squall.daemon.nimbus_code.CodeStore.problem>`): one whose conf or topology cannot be read is
left out of the pass (its workers keep their slots), every other topology is scheduled.

After a rebalance the surviving placement is handed to the scheduler (executors whose task
range is unchanged keep their slots) with the topology marked ``rebalanced``, so it moves as few
executors as it can. A rebalance that cannot be placed never takes a running topology down:
:func:`rebalance_shortfall` lets ``Nimbus.rebalance`` refuse it up front, and if capacity went
away during the wait the topology keeps its old shape and placement (see :func:`schedule_pass`).

After this nimbus becomes the leader, or gets a new ZooKeeper session, it gives supervisors
``nimbus.supervisor.timeout.secs`` to register again (:meth:`Scheduling.start_grace`): a
topology with executors on a supervisor that is not registered keeps its assignment as it is
until the supervisor is back or the time is up, so a ZooKeeper outage that every daemon lived
through restarts no worker.

Runs on nimbus's monitor thread only (the leader's), under nimbus's lock.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, NamedTuple

from squall.daemon.nimbus_code import CodeStore
from squall.daemon.nimbus_slot_clashes import Clash, SlotClashes, clash_note, start_times
from squall.daemon.nimbus_slot_failures import (
    NEVER_STARTED,
    STOPPED_BEATING,
    Outage,
    SlotFailures,
)
from squall.daemon.nimbus_worker_defaults import WorkerDefaults
from squall.errors import StateError
from squall.scheduling.cluster import (
    Cluster,
    ExecutorDetails,
    SchedulerAssignment,
    SupervisorDetails,
    Topologies,
    WorkerSlot,
    details_from_topology,
)
from squall.scheduling.resources import Resources
from squall.spi import state as state_spi
from squall.spi.scheduler import Scheduler
from squall.state.cluster_state import ClusterState, beat_key, encode

log = logging.getLogger(__name__)
SCHEDULABLE = ("active", "inactive", "pending")


class BeatTracker:
    """When (nimbus's monotonic clock) each worker beat last changed. Not thread-safe: one
    scheduling pass at a time."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], tuple[Any, float]] = {}

    def observe(self, topology_id: str, beats: Mapping[str, Mapping[str, Any]]) -> None:
        """Note the beats read now (``<node>-<port>`` -> beat) of ``topology_id``."""
        now = time.monotonic()
        for key, beat in beats.items():
            stamp = (beat.get("time_secs"), beat.get("seq"))
            old = self._seen.get((topology_id, key))
            if old is None or old[0] != stamp:
                self._seen[(topology_id, key)] = (stamp, now)

    def age(self, topology_id: str, key: str) -> float | None:
        """Seconds since that worker's beat last changed (None if never seen)."""
        got = self._seen.get((topology_id, key))
        return None if got is None else time.monotonic() - got[1]

    def forget(self, topology_id: str) -> None:
        """Drop everything about ``topology_id`` (it was killed)."""
        for k in [k for k in self._seen if k[0] == topology_id]:
            del self._seen[k]


def supervisor_details(supervisors: Mapping[str, Mapping[str, Any]]) -> list[SupervisorDetails]:
    """The scheduler's view of the ``/supervisors`` registrations (a malformed one is logged
    and left out)."""
    out = []
    for sid, info in sorted(supervisors.items()):
        try:
            out.append(SupervisorDetails(
                sid, str(info.get("hostname") or sid),
                tuple(int(p) for p in info.get("ports") or ()),
                Resources.from_dict(info.get("resources")),
                {"uptime_secs": info.get("uptime_secs", 0)}))
        except Exception as exc:  # one bad registration must not stop nimbus
            log.warning("ignoring supervisor %s with a bad registration: %s", sid, exc)
    return out


class Liveness(NamedTuple):
    """What one topology's worker beats say about its stored assignment."""

    #: the placements of the executors that are alive
    alive: SchedulerAssignment
    #: slot -> the executors that timed out there
    timed_out: dict[WorkerSlot, Outage]
    #: the slots whose workers beat within ``nimbus.task.timeout.secs``
    beating: set[WorkerSlot]


def alive_assignment(tracker: BeatTracker, topology_id: str, assignment: Mapping[str, Any],
                     beats: Mapping[str, Mapping[str, Any]], *, task_timeout: float,
                     launch_timeout: float) -> Liveness:
    """Which executors of a stored assignment are alive (see the module docstring):
    ``beats`` are the topology's worker beats as just read and observed by ``tracker``; the
    timeouts are ``nimbus.task.timeout.secs`` and ``nimbus.task.launch.secs``. Logs nothing:
    :class:`SlotFailures` says what became of those that timed out, once."""
    starts = assignment.get("executor_start_time_secs") or {}
    now = time.time()
    keep: dict[ExecutorDetails, WorkerSlot] = {}
    dead: dict[WorkerSlot, list[tuple[ExecutorDetails, str]]] = {}
    beating: set[WorkerSlot] = set()
    for key, (node, port) in (assignment.get("executor_node_port") or {}).items():
        try:
            executor = ExecutorDetails.parse(key)
        except Exception:
            continue
        slot = WorkerSlot(str(node), int(port))
        started = float(starts.get(key, 0) or 0)
        bkey = beat_key(slot.node_id, slot.port)
        beat = beats.get(bkey)
        age = tracker.age(topology_id, bkey)
        fresh = age is not None and age < task_timeout
        listed = beat is not None and key in (beat.get("executors") or {})
        if listed and fresh:
            beating.add(slot)
        if now - started < launch_timeout and (beat is None or age is None or fresh):
            alive = True
        else:
            alive = listed and fresh
        if alive:
            keep[executor] = slot
        else:
            dead.setdefault(slot, []).append((executor, key))
    timed_out = {}
    for slot, executors in dead.items():
        # all of a worker's executors share its beat: it never listed them, or it went stale
        had = (beats.get(beat_key(slot.node_id, slot.port)) or {}).get("executors") or {}
        reason = STOPPED_BEATING if any(k in had for _, k in executors) else NEVER_STARTED
        timed_out[slot] = Outage(tuple(k for _, k in sorted(executors)), reason)
    return Liveness(SchedulerAssignment(topology_id, keep), timed_out, beating)


#: ``status_reason`` prefix of a rebalance that could not be placed (kept until the next one).
NOT_APPLIED = "rebalance not applied: "


def _shortfall(cluster: Cluster, topology: Any) -> str | None:
    """Why ``topology`` is not fully placed in ``cluster`` (None when it is)."""
    status = cluster.get_status(topology.id)
    if status is not None and status.status == "pending":
        return status.reason or "it does not fit"
    missing = cluster.unassigned_executors(topology)
    if missing:
        return f"{len(missing)} of {len(topology.executors)} executors have no slot"
    return None


def _worker_sets(executor_node_port: Mapping[str, Any]) -> dict[tuple[Any, ...], frozenset[str]]:
    out: dict[tuple[Any, ...], set[str]] = {}
    for key, slot in executor_node_port.items():
        out.setdefault(tuple(slot), set()).add(key)
    return {slot: frozenset(keys) for slot, keys in out.items()}


def _short(cluster: Cluster, topology: Any) -> bool:
    """Whether ``topology`` got fewer workers than it can use (or none: pending)."""
    assignment = cluster.get_assignment(topology.id)
    return len(assignment.slots() if assignment is not None else ()) < topology.wanted_workers


def _unplaced(cluster: Cluster, topologies: Topologies) -> int:
    return sum(len(cluster.unassigned_executors(t)) for t in topologies)


def _placement(cluster: Cluster, tid: str) -> dict[str, WorkerSlot]:
    """Executor key -> slot of ``tid`` in ``cluster`` (as scheduled)."""
    assignment = cluster.get_assignment(tid)
    if assignment is None:
        return {}
    return {str(e): slot for slot in assignment.slots() for e in assignment.executors_on(slot)}


class PassInput(NamedTuple):
    """What one pass read from the state store; each scheduling try makes its own
    :meth:`cluster` of it (the scheduler changes the cluster it is given)."""

    supervisors: list[SupervisorDetails]
    #: topology id -> its placements that stay (alive, or of a topology not scheduled now)
    existing: dict[str, SchedulerAssignment]
    topologies: Topologies
    storms: dict[str, Any]
    stored: dict[str, Any]
    #: why topologies that cannot be scheduled at all were left out
    errors: dict[str, str]
    #: topology id -> slot -> its executors that timed out there
    timed_out: dict[str, dict[WorkerSlot, Outage]]
    #: slots whose workers beat within ``nimbus.task.timeout.secs``
    beating: set[WorkerSlot]
    #: host:port slots two live supervisors offer (left out of :attr:`supervisors` but one's)
    clashes: list[Clash]
    #: the ``/supervisors`` records
    registrations: dict[str, Any]

    def cluster(self, avoid: frozenset[WorkerSlot] = frozenset()) -> Cluster:
        """A new cluster over what was read, without the slots in ``avoid``: they are left
        out of their supervisors' ports, so every scheduler, built in or plugged in, does
        without them."""
        supervisors = self.supervisors
        if avoid:
            supervisors = [replace(s, ports=tuple(p for p in s.ports
                                                  if WorkerSlot(s.id, p) not in avoid))
                           for s in supervisors]
        return Cluster(supervisors, self.existing, self.topologies)

    def busy(self) -> set[WorkerSlot]:
        """The slots that placements in :attr:`existing` use."""
        return {slot for a in self.existing.values() for slot in a.slots()}


class Scheduling:
    """Nimbus's scheduling passes (see the module docstring)."""

    def __init__(self, conf: Mapping[str, Any], state: ClusterState, scheduler: Scheduler,
                 code: CodeStore) -> None:
        self._state = state
        self._scheduler = scheduler
        self._code = code
        self._scheduler_name = conf.get("squall.scheduler")
        self._task_timeout = float(conf.get("nimbus.task.timeout.secs") or 30)
        self._launch_timeout = float(conf.get("nimbus.task.launch.secs") or 120)
        self._beats = BeatTracker()
        #: slots whose workers failed to start or stopped beating, left out for a while
        self._failures = SlotFailures(self._launch_timeout)
        #: slots two supervisors offer, kept for one of them
        self._clashes = SlotClashes()
        #: topologies whose supervisors' default transports or serializers differ
        self._defaults = WorkerDefaults(code.directory)
        #: topologies rebalanced since the last pass -> their shape before
        self._fresh: dict[str, dict[str, Any]] = {}
        #: until when (monotonic) supervisors that are not registered keep their executors
        self._grace_secs = float(conf.get("nimbus.supervisor.timeout.secs") or 0)
        self._grace_until = self._everyone_until = 0.0
        self._waited_for: frozenset[str] = frozenset()
        #: supervisors seen registered since the grace began (one that leaves again is gone)
        self._seen: set[str] = set()
        #: topology id -> (placement, why) of an assignment too big for the state store
        self._unstored: dict[str, tuple[Mapping[str, Any], str]] = {}

    def start_grace(self, session_lost: bool = False) -> None:
        """Supervisors get ``nimbus.supervisor.timeout.secs`` to register before their
        executors move. Called from any thread when this nimbus becomes the leader (those
        not registered yet get the time; one seen registered since and gone again is gone)
        or, with ``session_lost``, when it got a new ZooKeeper session (every supervisor
        may be losing its own session about now: each gets the time, seen or not; and every
        worker's beat age starts again from now, since none could write one meanwhile).
        Either way a beat's age counts from now: a new leader has seen no beat change yet,
        and the outage that made it leader may have kept workers from writing theirs (as
        Storm's nimbus starts its heartbeat cache empty)."""
        until = time.monotonic() + self._grace_secs
        if session_lost:
            self._everyone_until = until
        else:
            self._grace_until = until
            self._seen = set()
        self._beats = BeatTracker()
        self._failures.clear()
        self._clashes.clear()
        self._waited_for = frozenset()

    def _absent(self, stored: Mapping[str, Any], live: set[str]) -> dict[str, set[str]]:
        """While a grace lasts: topology id -> the supervisors it has executors on that are
        waited for (see :meth:`start_grace`); empty when no grace lasts."""
        now = time.monotonic()
        everyone = now < self._everyone_until
        if not everyone and now >= self._grace_until:
            return {}
        seen = self._seen
        seen |= live
        out: dict[str, set[str]] = {}
        for tid, assignment in stored.items():
            nodes = {str(n) for n, _ in (assignment.get("executor_node_port") or {}).values()}
            waited = nodes - live if everyone else nodes - seen
            if waited:
                out[tid] = waited
        missing = frozenset().union(*out.values()) if out else frozenset()
        if missing and missing != self._waited_for:
            log.warning("supervisors %s are not registered; nimbus waits up to %.0f s for them "
                        "before moving their executors", ", ".join(sorted(missing)),
                        max(self._grace_until, self._everyone_until) - now)
        self._waited_for = missing
        return out

    def rebalanced(self, topology_id: str, before: Mapping[str, Any]) -> None:
        """``topology_id`` was just given a new shape; ``before`` is its old one
        (``num_workers``, ``component_executors``), restored by :meth:`run` if the new one
        cannot be placed."""
        self._fresh[topology_id] = dict(before)

    def forget(self, topology_id: str) -> None:
        """Drop what is remembered of ``topology_id`` (it was killed)."""
        self._beats.forget(topology_id)
        self._failures.forget(topology_id)
        self._defaults.forget(topology_id)
        self._fresh.pop(topology_id, None)
        self._unstored.pop(topology_id, None)

    def _read(self, rebalanced: set[str], shapes: Mapping[str, Mapping[str, Any]] | None = None,
              hold: frozenset[str] = frozenset()) -> PassInput:
        """The inputs of one pass. ``rebalanced`` topologies are marked so the scheduler
        reshapes their surviving placement; ``shapes`` overrides storm records (a rebalance
        tried ahead); topologies in ``hold`` are left out."""
        state = self._state
        registrations = state.supervisors()
        storms = state.storms()
        for tid, shape in (shapes or {}).items():
            if tid in storms:
                storms[tid] = {**storms[tid], **shape}
        stored = state.assignments()
        details = []
        errors: dict[str, str] = {}
        existing: dict[str, SchedulerAssignment] = {}
        timed_out: dict[str, dict[WorkerSlot, Outage]] = {}
        beating: set[WorkerSlot] = set()
        for tid, assignment in stored.items():
            beats = state.worker_beats(tid)
            self._beats.observe(tid, beats)
            base = storms.get(tid)
            if base is None:
                continue
            if base.get("status") in SCHEDULABLE:
                # after a rebalance too: executors whose task range is unchanged keep their slots
                live = alive_assignment(self._beats, tid, assignment, beats,
                                        task_timeout=self._task_timeout,
                                        launch_timeout=self._launch_timeout)
                existing[tid] = live.alive
                beating |= live.beating
                if live.timed_out:
                    timed_out[tid] = live.timed_out
            else:   # killed / rebalancing: slots and what their workers hold stay taken
                existing[tid] = SchedulerAssignment.from_state(tid, assignment)
        for tid, base in sorted(storms.items(), key=lambda kv: kv[1].get("launch_time", 0)):
            if base.get("status") not in SCHEDULABLE or tid in hold:
                continue
            loaded = self._code.topology_of(tid)
            if loaded is None:
                # a package that cannot be read here says so; one that is missing here is
                # fetched from another nimbus (Replication), and says so where none has it
                problem = self._code.problem(tid)
                if problem:
                    errors[tid] = f"cannot be scheduled: {problem}"
                continue
            conf, topology = loaded
            try:
                topology = topology.with_parallelism(base.get("component_executors") or {})
                details.append(details_from_topology(
                    tid, str(base.get("name")), conf, topology,
                    int(base.get("num_workers") or conf.get("topology.workers") or 1),
                    float(base.get("launch_time") or 0), rebalanced=tid in rebalanced))
            except Exception as exc:  # one bad topology must not stop the others
                log.error("cannot schedule topology %s: %s", tid, exc)
                errors[tid] = f"cannot be scheduled: {exc}"
        supervisors = supervisor_details(registrations)
        placed = {WorkerSlot(str(n), int(p)) for a in stored.values()
                  for n, p in (a.get("executor_node_port") or {}).values()}
        clashes = self._clashes.settle(supervisors, start_times(registrations), placed, beating)
        return PassInput(SlotClashes.without(supervisors, clashes), existing,
                         Topologies(details), storms, stored, errors, timed_out, beating,
                         clashes, registrations)

    def _place(self, read: PassInput) -> tuple[Cluster, str]:
        """Run the scheduler over ``read``. Slots whose workers failed (see
        :mod:`~squall.daemon.nimbus_slot_failures`) are left out while another slot is free,
        unless leaving them out leaves more executors without a slot than using them: then,
        as when no other slot is free, the executors stay and their supervisor retries.
        Returns the cluster scheduled and why executors that timed out stay where they are
        (when they do). Raises what the scheduler raises."""
        avoid = self._failures.avoided(read.busy())
        without: Cluster | None = None
        why = "no other slot could take them"
        if avoid:
            without = read.cluster(avoid)
            if without.available_slot_count():
                self._scheduler.schedule(read.topologies, without)
                if not _unplaced(without, read.topologies):
                    return without, why
                why = "the other free slots cannot take every executor"
            else:
                without, why = None, "no other slot is free"
        cluster = read.cluster()
        self._scheduler.schedule(read.topologies, cluster)
        if without is not None and \
                _unplaced(without, read.topologies) <= _unplaced(cluster, read.topologies):
            return without, why
        return cluster, why

    def _fully_assigned(self, tid: str, shape: Mapping[str, Any],
                        assignment: Mapping[str, Any] | None) -> bool:
        """Whether ``assignment`` places every executor of ``tid`` in the shape ``shape``."""
        loaded = self._code.topology_of(tid)
        if loaded is None or not assignment:
            return False
        topology = loaded[1].with_parallelism(shape.get("component_executors") or {})
        placed = assignment.get("executor_node_port") or {}
        return all(str(ExecutorDetails(*e)) in placed for e in topology.executor_component())

    def shortfall(self, tid: str, shape: Mapping[str, Any]) -> str | None:
        """Try a rebalance of running topology ``tid`` to ``shape`` (``num_workers``,
        ``component_executors``, ``status``) on the cluster as it is now, without writing
        anything. Returns why it would not be fully placed, or None when it fits (or when the
        topology is not fully running now, so there is nothing to keep)."""
        base = self._state.get_storm(tid) or {}
        if not self._fully_assigned(tid, base, self._state.get_assignment(tid)):
            return None
        read = self._read({tid}, {tid: shape})
        if tid in read.errors:
            return read.errors[tid]
        topology = read.topologies.get(tid)
        if topology is None:
            return None
        cluster = read.cluster()       # what fits at all (a pass may yet use a failed slot)
        try:
            self._scheduler.schedule(read.topologies, cluster)
        except Exception:  # a scheduler bug: let the pass after the wait deal with it
            log.exception("the %s scheduler failed trying a rebalance of %s",
                          self._scheduler_name, tid)
            return None
        return _shortfall(cluster, topology)

    def run(self, hold: frozenset[str] = frozenset(),
            statuses: Mapping[str, str] | None = None) -> None:
        """One pass over every topology. Each topology :meth:`rebalanced` since the last pass
        has its surviving placement reshaped by the scheduler; one that was running and cannot
        be placed in its new shape gets its old shape back (it keeps running where it was, the
        status reason says why) and the pass is made again. Placed ones are forgotten as
        rebalanced. Topologies in ``hold`` (their package is still reaching other nimbuses)
        are left out of the pass. ``statuses`` schedules topologies as if their status were
        that (a rebalance placed before its status is written back)."""
        fresh = self._fresh
        shapes = {tid: {"status": status} for tid, status in (statuses or {}).items()}
        read = self._read(set(fresh), shapes, hold=hold)
        topologies, storms, stored = read.topologies, read.storms, read.stored
        for tid, reason in read.errors.items():   # never silently unplaced: the status says why
            if storms[tid].get("status_reason") != reason:
                self._state.update_storm(tid, status_reason=reason)
        self._failures.observe(read.timed_out, read.beating)
        self._clashes.report(read.clashes)
        try:
            cluster, why_stay = self._place(read)
        except Exception:  # a scheduler bug is logged, nimbus keeps running
            log.exception("the %s scheduler failed", self._scheduler_name)
            return
        reverted = False
        for tid in sorted(fresh):
            topology = topologies.get(tid)
            why = _shortfall(cluster, topology) if topology is not None else None
            if why is None:
                continue
            before = fresh.pop(tid)
            if not self._fully_assigned(tid, before, stored.get(tid)):
                continue        # nothing was running in the old shape: keep the new one, pending
            log.warning("rebalance of topology %s not applied, it keeps its placement: %s",
                        tid, why)
            self._state.update_storm(tid, num_workers=before.get("num_workers"),
                                     component_executors=before.get("component_executors"),
                                     status_reason=NOT_APPLIED + why)
            reverted = True
        if reverted:
            self.run(hold, statuses)
            return
        waiting = self._absent(stored, {s.id for s in cluster.supervisors()})
        for topology in topologies:
            tid = topology.id
            if tid in waiting:
                continue        # its supervisors may yet come back: placement unchanged
            rebalanced = fresh.pop(tid, None) is not None
            unstored = self._write_assignment(tid, cluster, stored.get(tid))
            if unstored is not None:    # the others are still scheduled; the status says why
                if storms[tid].get("status_reason") != unstored:
                    self._state.update_storm(tid, status_reason=unstored)
                continue
            mismatch = self._defaults.check(
                tid, str(storms[tid].get("name") or tid),
                {slot.node_id for slot in _placement(cluster, tid).values()}, read.registrations)
            note = "; ".join(filter(None, (
                self._code.problem(tid), mismatch,
                clash_note(read.clashes) if _short(cluster, topology) else "")))
            self._write_status(tid, cluster, storms[tid], topology, rebalanced, note)
            if tid in read.timed_out:
                homeless = {str(e) for e in cluster.unassigned_executors(topology)}
                self._failures.report(tid, read.timed_out[tid], _placement(cluster, tid),
                                      homeless, why_stay)

    def _write_assignment(self, tid: str, cluster: Cluster,
                          old: Mapping[str, Any] | None) -> str | None:
        """Write ``tid``'s assignment in ``cluster`` when it changed. Returns None, or why
        it could not be written: it is too big for the state store (said once, and not tried
        again while the placement stays the same). Raises StateError when the store fails."""
        new = cluster.assignment_state(tid)
        old_enp = (old or {}).get("executor_node_port") or {}
        if old is not None and old_enp == new["executor_node_port"] and \
                old.get("node_host") == new["node_host"]:
            self._unstored.pop(tid, None)
            return None
        tried = self._unstored.get(tid)
        if tried is not None and tried[0] == new["executor_node_port"]:
            return tried[1]
        old_starts = (old or {}).get("executor_start_time_secs") or {}
        now = int(time.time())
        # a worker whose executor set changes is restarted by its supervisor: its executors
        # start again (so they get the launch grace), even those that kept their slot
        before, after = _worker_sets(old_enp), _worker_sets(new["executor_node_port"])
        starts = {}
        for key, slot in new["executor_node_port"].items():
            same = (old_enp.get(key) == slot and key in old_starts
                    and before.get(tuple(slot)) == after[tuple(slot)])
            starts[key] = old_starts[key] if same else now
        record = {"code_dir": str(self._code.directory(tid)), **new,
                  "executor_start_time_secs": starts}
        executors = len(new["executor_node_port"])
        workers = len({tuple(v) for v in new["executor_node_port"].values()})
        try:
            self._state.set_assignment(tid, record)
        except StateError:
            size, limit = len(encode(record)), state_spi.MAX_VALUE_BYTES
            if size <= limit:
                raise           # the store failed: the pass fails and is made again
            why = (f"not scheduled: its assignment of {executors} executors is {size} bytes, "
                   f"over the state store's {limit}-byte limit; give it fewer executors "
                   f"(smaller parallelism hints or topology.max.task.parallelism)")
            if tid not in self._unstored:
                log.error("topology %s %s", tid, why)
            self._unstored[tid] = (new["executor_node_port"], why)
            return why
        self._unstored.pop(tid, None)
        log.info("topology %s assigned: %d executors on %d workers", tid, executors, workers)
        return None

    def _write_status(self, tid: str, cluster: Cluster, base: Mapping[str, Any],
                      topology: Any, rebalanced: bool = False, note: str = "") -> None:
        """The topology's status and status reason after the pass: the scheduler's
        ``pending``, else ``note`` (why it runs short of workers; ``""`` clears an old
        reason, except a rebalance not applied, kept until the next rebalance)."""
        reported = cluster.get_status(tid)
        status = base.get("status")
        current = str(base.get("status_reason") or "")
        if reported is not None and reported.status == "pending":
            reason = f"{reported.reason}; {note}" if note else reported.reason
            if status != "pending" or current != reason:
                # logged when it changes (the scheduler says it again every pass)
                log.info("topology %s pending: %s", tid, reason)
                self._state.update_storm(tid, status="pending" if status != "inactive"
                                         else status, status_reason=reason)
        elif not cluster.unassigned_executors(topology):
            if status == "pending":
                self._state.update_storm(tid, status="active", status_reason=note)
            elif current != note and (rebalanced or not current.startswith(NOT_APPLIED)):
                self._state.update_storm(tid, status_reason=note)
