"""The leader's topology commands and the transitions they start.

``submit`` validates a package (in a throw-away process), stores it in the code store and
writes ``/storms/<id>``; ``kill``, ``activate`` / ``deactivate`` and ``rebalance`` change that
record. A kill or a rebalance waits first (its topology deactivated); :meth:`TopologyLifecycle.monitor_pass`
finishes them when due (counted on the monotonic clock: :mod:`~squall.daemon.nimbus_waits`),
runs the scheduling pass and removes what dead topologies left in ZooKeeper (API.md section 9).

Commands run on gRPC handler threads, ``monitor_pass`` on the monitor thread; this part owns
the lock that serializes every write and scheduling pass. Commands raise
:class:`~squall.daemon.nimbus_leader.NotLeaderError` on a standby, NotAliveError,
AlreadyAliveError, TopologyError or ConfigError for a request nimbus refuses.
"""
from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from squall.api.topology import Topology
from squall.daemon import validate
from squall.daemon.nimbus_code import CodeStore
from squall.daemon.nimbus_info import being_killed, killable_topology, live_topology
from squall.daemon.nimbus_replication import Replication
from squall.daemon.nimbus_schedule import Scheduling
from squall.daemon.nimbus_waits import TransitionWaits
from squall.daemon.topology_requests import MAX_WAIT_SECS
from squall.errors import AlreadyAliveError, ConfigError, TopologyError
from squall.state.cluster_state import ClusterState, beat_key, parse_beat_key

log = logging.getLogger(__name__)
#: security keys, which must not travel with a topology at all (a submitter's token, the
#: cluster's TLS), not even among the recorded command-line overrides
SECURITY_PREFIXES = ("squall.auth.", "squall.tls.", "squall.transport.tls",
                     "storm.zookeeper.auth.", "nimbus.auth.")
#: conf keys a submitted topology may not set (they belong to the machines running it: each
#: daemon reads them from its own config, and a worker from its supervisor's)
DAEMON_PREFIXES = ("storm.", "nimbus.", "supervisor.", "worker.", "ui.", "logviewer.",
                   "squall.state", "squall.scheduler", *SECURITY_PREFIXES)
#: the DRPC server's own keys (``squall drpc``); a topology's workers read ``drpc.servers``,
#: ``drpc.port`` and ``drpc.request.timeout.secs``, never these
DRPC_SERVER_KEYS = frozenset(("drpc.host", "drpc.http.port", "drpc.worker.threads",
                              "drpc.invocations.threads", "drpc.fetch.lease.secs",
                              "drpc.max.message.bytes"))
#: machines' keys that a client reads too, to reach the cluster (``squall submit`` itself):
#: dropped from a topology like the others, but given to a submit for good reason
CLIENT_PREFIXES = ("nimbus.seeds", "nimbus.port", "storm.zookeeper.", "nimbus.authentication",
                   "nimbus.admins")
#: how often a worker beats to nimbus: a topology setting none gets nimbus's at submit
TASK_BEAT = "task.heartbeat.frequency.secs"


def _daemon_key(key: str) -> bool:
    return key.startswith(DAEMON_PREFIXES) or key in DRPC_SERVER_KEYS


def topology_conf(submitted: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a submitted conf a topology may set: daemon keys dropped, from the
    recorded command-line overrides too (they would reach the components' confs while the
    workers, which take them from their supervisor, go without: ``squall submit`` says so)."""
    from squall.config import OVERRIDES_KEY
    out = {k: v for k, v in submitted.items() if not _daemon_key(k)}
    overrides = out.get(OVERRIDES_KEY)
    if isinstance(overrides, Mapping):
        out[OVERRIDES_KEY] = {k: v for k, v in overrides.items() if not _daemon_key(str(k))}
    return out


def machine_keys(conf: Mapping[str, Any]) -> list[str]:
    """The keys of ``conf`` that a submit drops (:func:`topology_conf`) and only the machines
    read: ``worker.*``, ``supervisor.*``, ``ui.*``, ``logviewer.*``, ``squall.state``,
    ``squall.scheduler``, the DRPC server's (:data:`DRPC_SERVER_KEYS`), ``nimbus.*`` and
    ``storm.*``, but for those a client reads as well (:data:`CLIENT_PREFIXES`) and the
    security keys (what ``squall submit`` warns of)."""
    return sorted(k for k in conf if _daemon_key(k)
                  and not k.startswith(CLIENT_PREFIXES + SECURITY_PREFIXES))


def checked_wait(what: str, wait_secs: float | None) -> float | None:
    """``wait_secs`` of a kill or a rebalance (``what``) as a float, None as None; ConfigError
    for anything but a finite number of seconds from 0 to ``MAX_WAIT_SECS`` (a day, as the CLI
    and the UI hold to: an infinite wait would leave the topology in its transition for ever,
    1e300 would be as good as one, NaN would be taken for 0)."""
    if wait_secs is None:
        return None
    try:
        wait = float(wait_secs)
    except (TypeError, ValueError):
        wait = math.nan
    if not math.isfinite(wait) or not 0 <= wait <= MAX_WAIT_SECS:
        raise ConfigError(f"the {what} wait must be a number of seconds from 0 to "
                          f"{MAX_WAIT_SECS} (a day); got {wait_secs!r}")
    return wait


class TopologyLifecycle:
    """Submit, kill, activate / deactivate and rebalance topologies (see the module docstring).

    Collaborators: the daemon's ``conf``, the cluster ``state``, the ``code`` store, the
    ``scheduling`` passes, ``require_leader`` (raises NotLeaderError on a standby) and
    ``wake`` (asks the monitor thread for a pass now).
    """

    def __init__(self, conf: Mapping[str, Any], state: ClusterState, code: CodeStore,
                 scheduling: Scheduling, require_leader: Callable[[], None],
                 wake: Callable[[], None], replication: Replication | None = None) -> None:
        self._conf = dict(conf)
        self._state = state
        self._code = code
        self._scheduling = scheduling
        self._require_leader = require_leader
        self._wake = wake
        self._replication = replication
        self._lock = threading.RLock()
        #: submitted topologies waiting for their package to reach enough nimbuses: not
        #: scheduled yet
        self._replicating: set[str] = set()
        #: when the waits of kills and rebalances end, on this nimbus's monotonic clock
        self._waits = TransitionWaits()

    # -- commands (gRPC handler threads) ------------------------------------------------------
    def submit(self, name: str, conf: dict[str, Any], topology_json: dict[str, Any],
               code: bytes, owner: str = "") -> str:
        """Validate and store a topology owned by ``owner``; returns its id.
        AlreadyAliveError, TopologyError."""
        from squall import config
        from squall.api.topology import check_topology_name
        from squall.runtime.system import add_system_components, cap_parallelism
        self._require_leader()
        check_topology_name(name)
        tconf = {**topology_conf(conf), "topology.name": name}
        # the workers beat at the pace this nimbus watches (its own, checked against its
        # nimbus.task.timeout.secs at start), not at their supervisors': a supervisor's slower
        # one would have nimbus take live workers for dead, over and over
        beat = self._conf.get(TASK_BEAT)
        if beat is not None:
            tconf.setdefault(TASK_BEAT, beat)
        merged = {**self._conf, **tconf}
        config.validate(merged, warn=False)
        try:
            topology = Topology.from_json(topology_json, resolve=False)
        except (KeyError, TypeError, ValueError) as exc:
            raise TopologyError(f"malformed topology description: {exc!r}") from exc
        full = add_system_components(cap_parallelism(topology, merged), merged)
        with self._code.staged(tconf, full.to_json(), code) as staged:
            validate.check_in_subprocess(str(staged))
            with self._lock:
                self._require_leader()
                if self._state.find_topology_id(name) is not None:
                    raise AlreadyAliveError(f"topology {name!r} is already running")
                dying = [base for base in self._state.storms().values()
                         if base.get("name") == name]
                if dying:       # killed, in its kill wait (as Storm, one name at a time)
                    raise AlreadyAliveError(f"{being_killed(name, dying[0])}; submit it again "
                                            "once it is gone")
                counter = self._code.next_counter(self._state.topology_ids())
                tid = f"{name}-{counter}-{int(time.time())}"
                self._code.install(staged, tid)
                if self._replication is not None:
                    self._replicating.add(tid)
                    # registered as holding it before /storms names it: a standby that sees
                    # the topology looks for its package here, and found no holder (one
                    # ERROR line, "no live nimbus holds the package", a second before it had it)
                    self._replication.publish()
                workers = int(merged.get("topology.workers") or 1)
                wanted = int(merged.get("topology.min.replication.count") or 1)
                waiting = (f"waiting for its package to reach {wanted} nimbuses "
                           f"(topology.min.replication.count)"
                           if self._replication is not None and wanted > 1 else "")
                self._state.set_storm(tid, {
                    "name": name, "launch_time": int(time.time()), "status": "active",
                    "status_reason": waiting, "num_workers": workers, "owner": owner,
                    "component_executors": {c: s.parallelism
                                            for c, s in sorted(full.components.items())}})
        if self._replication is not None:
            try:
                holders = self._replication.wait_for(tid, merged)
            finally:
                self._replicating.discard(tid)
            log.info("the package of %s is on %d nimbus(es)", tid, holders)
            with self._lock:
                base = self._state.get_storm(tid)
                if base is None or base.get("status") == "killed":
                    # killed while its package replicated: it was never scheduled
                    log.info("topology %s was killed before its package replicated", tid)
                    return tid
                if waiting:
                    self._state.update_storm(tid, status_reason="")
        from squall.plugin_manager import notify
        notify("squall_topology_submitted", name=name, topology_id=tid, conf=merged)
        log.info("submitted topology %s", tid)
        self._wake()
        return tid

    def kill(self, name: str, wait_secs: float | None = None) -> None:
        """Deactivate now; remove everything after ``wait_secs`` (default: the topology's
        ``topology.message.timeout.secs``). A topology already in its kill wait gets this
        wait instead, counted from now (Storm's kill in the killed state). ConfigError for a
        wait that is not a number of seconds from 0 to a day."""
        self._require_leader()
        wait_secs = checked_wait("kill", wait_secs)
        with self._lock:
            tid, base = killable_topology(self._state, name)
            if wait_secs is None:
                loaded = self._code.topology_of(tid)
                conf = loaded[0] if loaded else self._conf
                wait_secs = float(conf.get("topology.message.timeout.secs") or 30)
            # what held it back (its status reason: pending, a rebalance not applied) says
            # nothing about a topology being killed
            wait_secs = max(0.0, wait_secs)
            kill_time = time.time() + wait_secs
            self._state.update_storm(tid, status="killed", status_reason="",
                                     kill_time=kill_time, kill_wait=wait_secs)
            self._waits.began(tid, "killed", kill_time, wait_secs)
        log.info("killing topology %s in %.0f s", tid, wait_secs)
        self._wake()

    def set_active(self, name: str, active: bool) -> None:
        """Activate or deactivate the topology's spouts; TopologyError while it rebalances.
        Activating a pending topology is a no-op (it activates once placed)."""
        self._require_leader()
        with self._lock:
            tid, base = live_topology(self._state, name)
            if base.get("status") == "rebalancing":
                raise TopologyError(f"topology {name!r} is rebalancing; try again after it")
            status = "active" if active else "inactive"
            if base.get("status") == "pending" and active:
                return
            self._state.update_storm(tid, status=status)

    def set_log_levels(self, name: str, levels: Mapping[str, str], timeout_secs: float) -> None:
        """Set run-time log levels in every worker of the topology (``squall set-log-level``):
        ``levels`` maps a logger (``ROOT``: the root) to a level or ``RESET``; they revert
        after ``timeout_secs`` (0: never). ConfigError for a bad level or timeout."""
        from squall.daemon.log_levels import LEVELS, RESET, merge_request
        self._require_leader()
        bad = [f"{k}={v}" for k, v in levels.items() if v not in LEVELS and v != RESET]
        if bad or not levels:
            raise ConfigError(f"bad log levels {bad or 'none given'}: use LOGGER=LEVEL with "
                              f"LEVEL one of {', '.join(LEVELS)} or {RESET}")
        if not math.isfinite(timeout_secs) or timeout_secs < 0:     # inf/NaN: never reverts
            raise ConfigError(f"the timeout must be 0 (none) or a finite number of seconds "
                              f"more, got {timeout_secs}")
        with self._lock:
            tid, _ = live_topology(self._state, name)
            record = merge_request(self._state.get_log_config(tid), levels, timeout_secs)
            self._state.set_log_config(tid, record)
        log.info("log levels of %s: %s", tid, record["loggers"])

    def set_debug(self, name: str, component: str, enable: bool, sampling_pct: float) -> None:
        """``squall debug``: sample ``sampling_pct`` % of ``component``'s emits (every
        component when it is empty) into its workers' events logs, or stop (``enable``
        False). Kept as ``component_debug`` in ``/storms/<id>`` (``*``: every component).
        TopologyError for an unknown component, ConfigError for a percentage outside
        (0, 100]."""
        self._require_leader()
        if enable and not 0 < sampling_pct <= 100:
            raise ConfigError(f"the sampling percentage must be more than 0 and at most 100, "
                              f"got {sampling_pct:g}")
        with self._lock:
            tid, base = live_topology(self._state, name)
            loaded = self._code.topology_of(tid)
            if component and loaded is not None and component not in loaded[1].components:
                raise TopologyError(f"topology {name!r} has no component {component!r}; "
                                    f"components: {', '.join(sorted(loaded[1].components))}")
            debug = dict(base.get("component_debug") or {})
            key = component or "*"
            # a --disable is recorded, not forgotten: it must turn off what topology.debug in
            # the submitted conf turned on, which the workers read too
            if not component and not enable:
                debug = {key: {"enable": False}}
            elif enable:
                debug[key] = {"enable": True, "samplingpct": float(sampling_pct)}
            else:
                debug[key] = {"enable": False}
            self._state.update_storm(tid, component_debug=debug)
        log.info("debug of %s: %s", tid, debug or "off")

    def rebalance(self, name: str, wait_secs: float | None = None, num_workers: int | None = None,
                  executors: dict[str, int] | None = None) -> None:
        """Deactivate, wait, re-place with new parallelism / workers, restore the status.

        The scheduler keeps the surviving placement and moves as few executors as it can. A
        rebalance of a running topology that would not fit on the cluster as it is now is
        refused with a TopologyError naming the shortfall (the topology keeps running); a
        wait that is not a number of seconds from 0 to a day, with a ConfigError."""
        self._require_leader()
        wait_secs = checked_wait("rebalance", wait_secs)
        with self._lock:
            tid, base = live_topology(self._state, name)
            if base.get("status") == "rebalancing":
                raise TopologyError(f"topology {name!r} is already rebalancing")
            loaded = self._code.topology_of(tid)
            if loaded is None:
                raise TopologyError(f"nimbus cannot rebalance topology {tid}: "
                                    f"{self._code.problem(tid) or 'it has no package for it'}")
            conf, topology = loaded
            current = topology.with_parallelism(base.get("component_executors") or {})
            changed = current.with_parallelism(dict(executors or {}))   # validates the names
            if num_workers is not None and int(num_workers) < 1:
                raise TopologyError("rebalance: workers must be >= 1")
            if wait_secs is None:
                wait_secs = float(conf.get("topology.message.timeout.secs") or 30)
            previous = "inactive" if base.get("status") == "inactive" else "active"
            shape = {"status": previous,
                     "num_workers": int(num_workers or base.get("num_workers") or 1),
                     "component_executors": {c: s.parallelism
                                             for c, s in sorted(changed.components.items())}}
            short = self._scheduling.shortfall(tid, shape)
            if short is not None:    # refuse rather than stop a running topology
                raise TopologyError(f"rebalance of {name!r} does not fit: {short}; the topology "
                                    "keeps running as it is")
            wait_secs = max(0.0, wait_secs)
            due = time.time() + wait_secs
            self._state.update_storm(tid, status="rebalancing", rebalance={
                "due": due, "wait": wait_secs,
                "previous": previous, "num_workers": shape["num_workers"],
                "component_executors": shape["component_executors"]})
            self._waits.began(tid, "rebalancing", due, wait_secs)
        self._wake()

    # -- periodic work (the leader's monitor thread) ------------------------------------------
    def monitor_pass(self) -> float | None:
        """Under the lock: finish the kills and rebalances that are due, run a scheduling
        pass, remove ZooKeeper nodes of topologies that are gone. Returns when the next kill
        or rebalance wait ends (``time.monotonic()``; None: none waits), so that the monitor
        thread wakes then rather than at its next periodic pass."""
        with self._lock:
            due, resuming = self._finish_transitions()
            # a rebalanced topology is scheduled as if its status were back, and gets it back
            # only after the pass wrote its new assignment: a worker that saw the status
            # first, with its old assignment, would activate its spouts only to be replaced
            self._scheduling.run(hold=frozenset(self._replicating), statuses=resuming)
            for tid, status in resuming.items():
                base = self._state.get_storm(tid) or {}
                if base.get("status") == "rebalancing":     # else the pass set it (pending)
                    self._state.update_storm(tid, status=status, rebalance=None)
                else:
                    self._state.update_storm(tid, rebalance=None)
            self._clean_orphans()
            return due

    def clean_packages(self) -> None:
        """Delete this nimbus's packages of topologies that are gone. Under the lock: a
        submit installs its package before ``/storms`` names the topology, and a pass between
        the two deleted the package of a topology then scheduled without code."""
        with self._lock:
            self._code.clean(set(self._state.topology_ids()))

    def watch_transitions(self) -> None:
        """On a standby, at each of its passes: note the kills and rebalances waiting, so
        that, should it lead, it ends them on time by its own monotonic clock
        (:mod:`~squall.daemon.nimbus_waits`)."""
        with self._lock:
            self._waits.keep(self._waiting(self._state.storms()))

    def _waiting(self, storms: Mapping[str, Mapping[str, Any]]
                 ) -> dict[tuple[str, str], float]:
        """``(topology id, kind)`` -> seconds left of its wait, for each kill and rebalance
        in ``storms`` (``kind``: its status)."""
        out: dict[tuple[str, str], float] = {}
        for tid, base in storms.items():
            plan = base.get("rebalance")
            status = str(base.get("status"))
            if status == "killed":
                end, wait = base.get("kill_time"), base.get("kill_wait")
            elif status == "rebalancing" and plan:
                end, wait = plan["due"], plan.get("wait")
            else:
                continue
            out[(tid, status)] = self._waits.left(
                tid, status, float(end or 0), None if wait is None else float(wait))
        return out

    def _finish_transitions(self) -> tuple[float | None, dict[str, str]]:
        """Finish the kills that are due and give the rebalances that are due their new
        shape (their status and plan stay until the scheduling pass placed them); returns
        when (``time.monotonic()``) the earliest of the others is due (None: no other) and,
        for each rebalance finished, the status it goes back to."""
        storms = self._state.storms()
        waiting = self._waiting(storms)
        self._waits.keep(waiting)
        waits: list[float] = []
        resuming: dict[str, str] = {}
        for (tid, _), left in waiting.items():
            base = storms[tid]
            plan = base.get("rebalance")
            if left > 0:
                waits.append(left)
            elif base.get("status") == "killed":
                self._state.remove_topology(tid)
                self._scheduling.forget(tid)
                self._code.forget(tid)
                from squall.plugin_manager import notify
                notify("squall_topology_killed", name=base.get("name", ""), topology_id=tid)
                log.info("topology %s killed", tid)
            else:
                self._state.update_storm(tid, num_workers=plan["num_workers"],
                                         component_executors=plan["component_executors"])
                self._scheduling.rebalanced(tid, {
                    "num_workers": base.get("num_workers"),
                    "component_executors": base.get("component_executors")})
                resuming[tid] = str(plan["previous"])
                log.info("rebalancing topology %s", tid)
        return (self._waits.clock() + min(waits) if waits else None), resuming

    def _clean_orphans(self) -> None:
        state = self._state
        live = set(state.topology_ids())
        for tid in state.assignment_ids():
            if tid not in live:
                state.remove_assignment(tid)
        for tid in state.beat_topology_ids():
            if tid not in live:
                state.remove_worker_beats(tid)
                continue
            # the beats of workers that moved away (seed 002, step 8: a worker that died
            # could not remove its own)
            assignment = state.get_assignment(tid) or {}
            slots = {beat_key(str(n), int(p))
                     for n, p in (assignment.get("executor_node_port") or {}).values()}
            for key in state.worker_beat_keys(tid):
                if slots and key not in slots:
                    node, port = parse_beat_key(key)
                    state.remove_worker_beat(tid, node, port)
        for tid in state.error_topology_ids():
            if tid not in live:
                state.remove_errors(tid)
        for tid in state.log_config_topology_ids():
            if tid not in live:
                state.remove_log_config(tid)
        # what a worker still committing as its topology was killed wrote after the kill
        names = {base.get("name") for base in state.storms().values()}
        for name in state.trident_names():
            if name not in names:
                state.drop_trident(name)

