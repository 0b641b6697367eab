"""The supervisor (``squall supervisor``): runs the workers nimbus assigns to this machine.

- Registers the ephemeral ``/supervisors/<id>`` (host name from ``storm.local.hostname`` or the
  machine's, ports from ``supervisor.slots.ports``, resources), refreshed every
  ``supervisor.heartbeat.frequency.secs``; the id is kept in ``supervisor/localstate`` so it
  survives restarts. After a ZooKeeper session loss the store re-creates the node and the
  supervisor re-registers and re-syncs.
- Syncs every ``supervisor.monitor.frequency.secs`` and whenever ``/assignments`` changes:
  downloads missing code packages from nimbus into ``supervisor/stormdist/<id>/``, kills workers
  that died, stopped heart-beating (``supervisor.worker.timeout.secs``; at start
  ``supervisor.worker.start.timeout.secs``; both on the supervisor's monotonic clock, so a step
  of the host's clock restarts no worker: :mod:`~squall.daemon.supervisor_beats`) or are no
  longer assigned (SIGTERM, then SIGKILL after ``supervisor.worker.shutdown.sleep.secs``), and
  launches one worker process per assigned slot that has none. Never two workers on one port:
  the old one is dead before a new one starts.
- Before it launches a worker it checks the package against the digests recorded at download
  and downloads it again when a file changed on its disk since (:meth:`Supervisor.code_intact`).
  A package nimbus sends that cannot be used (nimbus's copy damaged, not a valid zip) is one
  ERROR line and a start failure of the slot in ``/errors`` (the status reason), and is asked
  for again every :data:`BAD_PACKAGE_RETRY_SECS`, not at every round.
- Keeps each worker's ``.out`` file (what the process writes outside logging) near
  ``worker.log.max.bytes`` every round (:func:`~squall.daemon.log_files.cap_out_file`).
- Serves its workers' log files over HTTP (:mod:`squall.daemon.logviewer`, port published as
  ``logviewer_port``; with authentication on, to their topology's owner and admins) and
  deletes the logs of topologies it no longer runs once they were not written for
  ``worker.log.cleanup.grace.secs``.
- A slot whose workers keep failing (to start, or soon after) is relaunched with a growing
  wait (:mod:`~squall.daemon.supervisor_backoff`). A worker that cannot start reports why to
  ``/errors`` itself; one found dead (its exit code or signal), or killed for missing its
  start deadline or its heartbeats, is reported there by the supervisor, under ``__worker``
  (:mod:`~squall.daemon.supervisor_endings`), so ``squall list`` shows a crash loop.
- A supervisor that cannot write its local dir (full, read-only) leaves ``/supervisors`` with
  one error line, so nimbus moves its executors, and registers again once it can and the dir
  has ``supervisor.local.dir.min.free.mb`` free; started on such a dir, it exits with one line.
  Its lock on the dir and the conf file its workers read are taken and written again when the
  dir was deleted under it (:mod:`~squall.daemon.supervisor_local_dir`); when another
  supervisor took the dir meanwhile, it stops with one line.
- After its own restart it adopts the workers it left (process alive, loop not stuck, same
  assignment; their timeouts count from the restart) and kills the others. Stopping the
  supervisor leaves its workers running (as Storm does); :meth:`Supervisor.kill_workers`
  stops them. A stop (SIGTERM) closes its ZooKeeper session, so its ``/supervisors`` node
  goes at once and nimbus moves its executors to other supervisors (the workers left then
  exit: their executors were reassigned); only a supervisor that died (``kill -9``, a crash)
  and is back within the ZooKeeper session timeout finds its workers still assigned and
  adopts them.

Threads: one monitor thread does all syncing (workers are only touched there); one heartbeat
thread refreshes the registration. ``start``/``stop`` from the caller's thread.
"""
from __future__ import annotations

import logging
import shutil
import socket
import threading
import time
from pathlib import Path
from typing import Any

from squall import config, drivers
from squall.daemon import log_files, nimbus_worker_defaults, packaging
from squall.daemon import supervisor_endings as endings
from squall.daemon.addresses import check_advertised_host
from squall.daemon.logviewer import LogViewer
from squall.daemon.logviewer_access import LogAccess
from squall.daemon.ports import slot_ports_warning
from squall.daemon.supervisor_backoff import SETTLE_SECS, LaunchBackoff
from squall.daemon.supervisor_beats import WorkerBeats
from squall.daemon.supervisor_local import (
    LocalState,
    WorkerRecord,
    launch_worker,
    record_alive,
    registered_process,
    stop_workers,
    stray_worker_ids,
)
from squall.daemon.supervisor_local_dir import LocalDir
from squall.daemon.worker_main import my_executors
from squall.errors import AuthenticationError, AuthorizationError, SquallError, TopologyError
from squall.state.cluster_state import ClusterState

log = logging.getLogger(__name__)
#: how soon a package nimbus sent that could not be used is asked for again (each try is
#: reported to ``/errors``, so the status reason stays while it lasts)
BAD_PACKAGE_RETRY_SECS = 60.0


class Supervisor:
    """See the module docstring. ``start()``, then ``stop()``."""

    def __init__(self, conf: dict[str, Any]) -> None:
        """ConfigError for a period no loop can wait (see ``config.period_secs``),
        SquallError for a local dir it cannot use."""
        self.conf = dict(conf)
        #: the monitor and heartbeat threads' periods
        self._monitor_secs = config.period_secs(self.conf, "supervisor.monitor.frequency.secs")
        self._beat_secs = config.period_secs(self.conf, "supervisor.heartbeat.frequency.secs")
        self.local_dir = Path(str(conf.get("storm.local.dir") or "squall-local")).resolve()
        self.ports = sorted({int(p) for p in conf.get("supervisor.slots.ports") or ()})
        self.hostname = str(conf.get("storm.local.hostname") or socket.gethostname())
        self.start_time = time.time()
        self._wake = threading.Event()
        self._stop = threading.Event()
        #: its hold on storm.local.dir: the lock, the conf file its workers read, the health
        self._dir = LocalDir(self.local_dir, self.conf)
        self._threads: list[threading.Thread] = []
        self.store: Any = None
        try:
            self.local = LocalState(self.local_dir)
            self.id = self.local.supervisor_id
        except OSError as exc:
            raise SquallError(f"supervisor cannot use storm.local.dir {self.local_dir}: "
                              f"{exc.strerror or exc}") from None
        self.log_rotation = log_files.rotation(self.conf)
        #: what its workers must share with every other worker of a topology (transport,
        #: serializer, transport security) unless the topology chooses its own
        self.worker_defaults = nimbus_worker_defaults.advertised(self.conf)
        self.logviewer: LogViewer | None = None
        self.backoff = LaunchBackoff()
        #: how long each worker has gone without a heartbeat, on this supervisor's clock
        self.worker_beats = WorkerBeats()
        #: why the local dir cannot be written ('' when it can): then this supervisor is not
        #: registered, so nimbus gives its slots to others
        self.unhealthy = ""
        #: why it stopped by itself ('' while it runs or when it was asked to): the command
        #: ends with that line and exit code 2
        self.failure = ""
        #: it can write again but waits for room (said once an outage)
        self._told_short = False
        #: the kind of credential refusal (authentication, authorization) nimbus last gave a
        #: download, logged once until a download goes through
        self._download_refused: type[SquallError] | None = None
        #: topology id -> (why the package nimbus sent cannot be used, when (monotonic) to
        #: ask for it again)
        self._bad_packages: dict[str, tuple[str, float]] = {}
        #: those of them whose last try is not in ``/errors`` yet
        self._bad_unreported: set[str] = set()

    @property
    def workers(self) -> dict[str, WorkerRecord]:
        return self.local.workers

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self) -> None:
        """Connect, register, adopt or clean old workers, start syncing. StateError if the
        store is unreachable, ConfigError if its advertised host does not resolve."""
        unreachable = check_advertised_host(self.conf, self.hostname)
        if unreachable:
            log.warning("%s", unreachable)
        problem = self.local_dir_problem()
        if problem:
            raise SquallError(f"supervisor cannot write storm.local.dir: {problem}")
        self._dir.claim()
        packaging.remove_partial(self.local_dir / "supervisor" / "stormdist")
        self._dir.write_conf()
        clash = slot_ports_warning(self.ports)
        if clash:
            log.warning("%s", clash)
        self.store = drivers.driver("state", self.conf)
        self.store.start()
        self.state = ClusterState(self.store, self.conf)
        self.state.setup()
        try:
            from squall.scheduling.resources import default_supervisor_resources
            self.resources = default_supervisor_resources(self.conf)
        except ImportError:
            self.resources = {}
        self._start_logviewer()
        # a node left by our previous life still belongs to its (dying) session: the ephemeral
        # put takes it over atomically, so nimbus never sees this supervisor missing (it would
        # reassign our workers away) and the old session's expiry cannot remove it
        self.register()
        self.store.add_reconnect_listener(self._on_reconnect)
        self.adopt()
        for target, name in ((self._monitor_loop, "monitor"), (self._heartbeat_loop, "beat")):
            t = threading.Thread(target=target, name=f"squall-supervisor-{name}", daemon=True)
            t.start()
            self._threads.append(t)
        log.info("supervisor %s on %s started, ports %s", self.id, self.hostname, self.ports)

    def stop(self) -> None:
        """Stop syncing and disconnect (workers keep running). Idempotent."""
        self._stop.set()
        self._wake.set()
        for t in self._threads:
            t.join(10)
        if self.logviewer is not None:
            self.logviewer.stop()
            self.logviewer = None
        if self.store is not None:
            self.store.close()
        self._dir.release()

    def _start_logviewer(self) -> None:
        viewer = LogViewer(log_files.logs_dir(self.local_dir),
                           str(self.conf.get("logviewer.host") or self.hostname),
                           int(self.conf.get("logviewer.port") or 0),
                           LogAccess(self.conf, self._topology_owner))
        try:
            viewer.start()
        except OSError as exc:   # the supervisor runs on; its logs are only on disk
            log.error("logviewer cannot listen on %s:%d (%s); worker logs are not served",
                      viewer.host, viewer.requested_port, exc)
            return
        self.logviewer = viewer

    def _shutdown_grace(self) -> float:
        """``supervisor.worker.shutdown.sleep.secs``: how long a worker has between SIGTERM
        and SIGKILL (0: none; null: the default 12, the 10 s a worker gives its components'
        calls at most, :func:`squall.runtime.worker.stop_budget`, and a margin)."""
        value = self.conf.get("supervisor.worker.shutdown.sleep.secs")
        return 12.0 if value is None else float(value)

    def _topology_owner(self, topology_id: str) -> str | None:
        """The ``owner`` of ``/storms/<topology_id>`` (the logviewer's ownership check)."""
        storm = self.state.get_storm(topology_id) or {}
        return str(storm.get("owner") or "") or None

    def kill_workers(self) -> None:
        """Stop every worker of this supervisor (call after :meth:`stop`)."""
        stop_workers(self.local_dir, list(self.workers.values()), self._shutdown_grace())
        self.workers.clear()
        self.local.save()

    def wait(self) -> None:
        """Block until :meth:`request_stop` or :meth:`stop`."""
        while not self._stop.wait(1.0):
            pass

    def request_stop(self) -> None:
        """Make :meth:`wait` return and the loops end (safe from a signal handler); call
        :meth:`stop` after it to join them and disconnect."""
        self._stop.set()

    # -- registration -------------------------------------------------------------------------
    def register(self) -> None:
        if self.unhealthy:
            return
        now = time.time()
        self.state.register_supervisor(self.id, {
            "hostname": self.hostname, "time_secs": int(now),
            "uptime_secs": int(now - self.start_time), "ports": self.ports,
            "used_ports": sorted({r.port for r in self.workers.values()}),
            "resources": self.resources, "supervisor_id": self.id,
            # what its workers use unless a topology chooses (nimbus compares supervisors)
            nimbus_worker_defaults.FIELD: self.worker_defaults,
            **({"logviewer_port": self.logviewer.port} if self.logviewer is not None else {})})

    def _on_reconnect(self) -> None:
        log.info("supervisor %s: new ZooKeeper session; re-registering", self.id)
        self._wake.set()

    def _heartbeat_loop(self) -> None:
        while not self._stop.wait(self._beat_secs):
            try:
                self.register()
            except SquallError as exc:
                log.warning("supervisor heartbeat failed: %s", exc)
            except Exception:  # keep beating whatever happened
                log.exception("supervisor heartbeat failed")

    # -- syncing (monitor thread) -------------------------------------------------------------
    def _monitor_loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.sync()
            except SquallError as exc:
                log.warning("supervisor sync failed: %s", exc)
            except OSError as exc:     # its local dir (the next round's health check says)
                log.error("supervisor sync failed: %s", exc)
            except Exception:  # keep supervising whatever happened
                log.exception("supervisor sync failed")
            self._wake.wait(self._monitor_secs)
            self._wake.clear()

    def _watch(self, _path: str) -> None:
        self._wake.set()

    def assigned_slots(self) -> dict[int, tuple[str, list[list[int]]]]:
        """port -> (topology id, executors) this supervisor must run, from ``/assignments``."""
        wanted: dict[int, tuple[str, list[list[int]]]] = {}
        for tid in self.state.assignment_ids(watch=self._watch):
            assignment = self.state.get_assignment(tid, watch=self._watch)
            for port in self.ports:
                execs = my_executors(assignment, self.id, port)
                if execs:
                    wanted[port] = (tid, sorted([list(e) for e in execs]))
        return wanted

    def local_dir_problem(self) -> str:
        """'' when this supervisor can write where it keeps things (a probe file in each of
        its local dirs), else what went wrong."""
        return self._dir.problem()

    def check_health(self) -> bool:
        """Leave ``/supervisors`` when the local dir cannot be written, come back when it
        can and has ``supervisor.local.dir.min.free.mb`` free; True when healthy."""
        problem = self.local_dir_problem()
        if problem and not self.unhealthy:
            log.error("supervisor %s cannot write its local dir (%s): it leaves the cluster "
                      "so nimbus moves its workers, and comes back once it can", self.id,
                      problem)
            self.unhealthy = problem
            self.state.unregister_supervisor(self.id)
        elif not problem and self.unhealthy:
            short = self._dir.short_of_room()
            if short:
                if not self._told_short:
                    self._told_short = True
                    log.warning("supervisor %s can write its local dir again, but %s: it "
                                "comes back once it has that room", self.id, short)
                return False
            log.info("supervisor %s can write its local dir again; registering", self.id)
            self.unhealthy = ""
            self._told_short = False
            self.register()
        return not self.unhealthy

    def _keep_local_dir(self) -> bool:
        """Hold the local dir as at start, whatever was deleted there (its lock, the conf
        file the workers read, ``localstate``); False (one ERROR line, and the supervisor
        stops) when another supervisor took it meanwhile."""
        taken = self._dir.keep()
        if taken:
            log.error("%s; this supervisor stops (one supervisor a directory)", taken)
            self.failure = f"{taken}; this supervisor stopped"
            self.request_stop()
            return False
        if not self.local.path.is_file():
            self.local.save()
        return True

    def sync(self) -> None:
        """One round: registration, code, dead/stale/unassigned workers out, new ones in."""
        if not self.check_health() or not self._keep_local_dir():
            return
        self.register()
        wanted = self.assigned_slots()
        for tid in set(self._bad_packages) - {tid for tid, _ in wanted.values()}:
            del self._bad_packages[tid]         # no longer assigned here: nothing to retry
            self._bad_unreported.discard(tid)
        for port, (tid, _) in list(wanted.items()):
            if not self.ensure_code(tid):
                del wanted[port]
                self._report_bad_package(tid, port)
        stopping = [(rec, problem) for rec in list(self.workers.values())
                    if (problem := self.worker_problem(rec, wanted.get(rec.port)))]
        if stopping:
            self._stop_workers(stopping, self._shutdown_grace())
        busy = {r.port for r in self.workers.values()}
        intact: dict[str, bool] = {}      # each package checked once a round, to launch only
        for port, (tid, execs) in sorted(wanted.items()):
            if port in busy or not self.backoff.ready(port):
                continue
            if tid not in intact:
                intact[tid] = self.code_intact(tid)
            if not intact[tid]:
                self._report_bad_package(tid, port)
                continue
            try:
                rec = launch_worker(self.local_dir, self.id, tid, port, execs,
                                    self._install_credentials, self.log_rotation)
            except (OSError, SquallError) as exc:
                # one topology's launch that cannot happen (its files, its credentials)
                # must not keep the round from the other slots, registering and cleaning
                self._launch_failed(tid, port, exc)
                continue
            self.workers[rec.worker_id] = rec
            self.worker_beats.launched(rec.worker_id)
            self.local.save()
        self._cap_out_files()
        self.register()
        running = ({tid for tid, _ in wanted.values()} |
                   {r.topology_id for r in self.workers.values()})
        self._clean_code(running)
        log_grace = float(self.conf.get("worker.log.cleanup.grace.secs") or 0)
        live = running | set(self.state.topology_ids())
        for name in log_files.remove_dead_worker_logs(log_files.logs_dir(self.local_dir),
                                                       live, log_grace, time.time()):
            log.info("removed %s (its topology is gone)", name)

    def _cap_out_files(self) -> None:
        """Keep each running worker's ``.out`` file near ``worker.log.max.bytes``
        (:func:`~squall.daemon.log_files.cap_out_file`): one ``stat`` a worker a round."""
        max_bytes, backups = self.log_rotation
        if not max_bytes:
            return
        logs = log_files.logs_dir(self.local_dir)
        for rec in self.workers.values():
            path = logs / log_files.worker_out_name(rec.topology_id, rec.port)
            try:
                log_files.cap_out_file(path, max_bytes, backups)
            except OSError as exc:
                log.warning("cannot cap %s at worker.log.max.bytes: %s", path,
                            exc.strerror or exc)

    def _stop_workers(self, stopping: list[tuple[WorkerRecord, str]], grace: float) -> None:
        """Stop each worker of ``stopping`` for its problem (:meth:`worker_problem`), side by
        side (:func:`~squall.daemon.supervisor_local.stop_workers`: a topology's workers
        each in a long call are waited for once, not one after another), count a failure
        towards its slot's backoff, and say what it was
        (:func:`~squall.daemon.supervisor_endings.ending`): in the log, and in ``/errors``
        unless the worker said why itself."""
        ends = [(rec, problem, self._ending(rec, problem)) for rec, problem in stopping]
        stop_workers(self.local_dir, [rec for rec, _, _ in ends], grace)
        for rec, _, _ in ends:
            del self.workers[rec.worker_id]
            self.worker_beats.forget(rec.worker_id)
        self.local.save()
        for rec, problem, (end, started) in ends:
            self._stopped(rec, problem, end, started)

    def _ending(self, rec: WorkerRecord, problem: str) -> tuple[endings.Ending, bool]:
        """How ``rec``, about to be stopped for ``problem``, ended (logged now, while its
        heartbeats are still there to read), and whether it had started (beat once)."""
        silent = self.worker_beats.look(self.local_dir, rec.worker_id).silent
        started = silent is not None
        limit = float(self.conf.get(endings.TIMEOUT_KEY if started else
                                    endings.START_TIMEOUT_KEY) or (30 if started else 120))
        end = endings.ending(
            problem, returncode=rec.proc.poll() if rec.proc is not None else None,
            child=rec.proc is not None, started=started, limit=limit,
            beats_written=silent is not None and silent <= limit,
            stopped=problem != endings.UNASSIGNED and endings.process_stopped(rec.pid))
        if end.text:
            log.log(logging.WARNING if end.failed else logging.INFO, "worker %s (%s port %d) %s",
                    rec.worker_id, rec.topology_id, rec.port, end.text)
        else:
            log.info("stopping worker %s (%s port %d): %s", rec.worker_id, rec.topology_id,
                     rec.port, problem)
        return end, started

    def _stopped(self, rec: WorkerRecord, problem: str, end: endings.Ending,
                 started: bool) -> None:
        """``rec`` was stopped for ``problem``, having ended as ``end``: its slot's backoff,
        and the report of a failure."""
        wait = self.backoff.stopped(rec.port, time.time() - rec.launched, end.failed)
        failures = self.backoff.count(rec.port)
        if end.start_failure is not None:
            self._report_ending(rec, endings.report_text(rec.port, end.text, failures,
                                                         SETTLE_SECS),
                                end.start_failure, problem == endings.DIED)
        if wait and end.failed:
            what = "failed to start" if not started else "failed"
            when = "" if not started else f"each within {SETTLE_SECS:g} s of its launch; "
            log.warning("the workers of %s on port %d %s %d times in a row (%ssee its log and "
                        "/errors); next launch in %.0f s", rec.topology_id, rec.port, what,
                        failures, when, wait)

    def _report_ending(self, rec: WorkerRecord, text: str, start_failure: bool,
                       died: bool) -> None:
        """Report how ``rec`` ended to its topology's ``/errors`` (``__worker``) unless, having
        died, it reported why itself; a store that cannot be reached is only logged."""
        try:
            if died and endings.reported_itself(self.state.errors(rec.topology_id), rec.port,
                                                rec.launched):
                return
        except SquallError as exc:
            log.warning("cannot report the end of worker %s to the cluster state: %s",
                        rec.worker_id, exc)
            return
        self._report_slot_error(rec.topology_id, rec.port, text, start_failure,
                                f"the end of worker {rec.worker_id}")

    def _report_slot_error(self, tid: str, port: int, text: str, start_failure: bool,
                           what: str) -> None:
        """One ``__worker`` entry in ``tid``'s ``/errors`` about the slot on ``port``: a start
        failure or a fatal error (what nimbus shows as the status reason); a store that cannot
        be reached is only logged, naming ``what`` was to be reported."""
        from squall.runtime.errors import WORKER_COMPONENT
        entry: dict[str, Any] = {
            "component": WORKER_COMPONENT, "task": 0, "error": text, "time_secs": time.time(),
            "host": self.hostname, "node": self.id, "port": port, "source": endings.SOURCE}
        entry["start_failure" if start_failure else "fatal"] = True
        try:
            self.state.report_error(tid, WORKER_COMPONENT, entry)
        except SquallError as exc:
            log.warning("cannot report %s to the cluster state: %s", what, exc)

    def _launch_failed(self, tid: str, port: int, exc: Exception) -> None:
        """A worker of ``tid`` could not be launched on ``port``: the slot backs off as after
        a failed start, and the topology's errors say why (``squall list``, the UI)."""
        wait = self.backoff.stopped(port, 0.0, True)
        text = f"supervisor {self.id} cannot launch a worker on port {port}: {exc}"
        log.error("%s (next try in %.0f s)", text, wait)
        self._report_slot_error(tid, port, text, True, "the failed launch")

    def _install_credentials(self, worker_dir: Path) -> None:
        """The cluster's generated transport credentials into a new worker's directory
        (``squall.transport.tls``; files 0600). StateError while nimbus has not made them."""
        from squall.security.transport_creds import install_for_worker
        install_for_worker(self.conf, self.store, worker_dir)

    def worker_problem(self, rec: WorkerRecord, wanted: tuple[str, list[list[int]]] | None
                       ) -> str:
        """Why ``rec`` must stop ('' if it is fine). Its heartbeats are judged on this
        supervisor's monotonic clock (:mod:`~squall.daemon.supervisor_beats`), never by the
        times the worker wrote in them."""
        if wanted is None or wanted != rec.slot():
            return endings.UNASSIGNED
        if not record_alive(rec, self.local_dir):
            return endings.DIED
        seen = self.worker_beats.look(self.local_dir, rec.worker_id)
        if seen.silent is None:
            limit = float(self.conf.get(endings.START_TIMEOUT_KEY) or 120)
            return endings.NO_START_BEAT if seen.since_launch > limit else ""
        limit = float(self.conf.get(endings.TIMEOUT_KEY) or 30)
        if seen.silent > limit or seen.stuck > limit:
            return endings.no_beat_for(limit)
        return ""

    def ensure_code(self, tid: str) -> bool:
        """Download ``tid``'s package unless present (its files, its code unpacked and the
        digests of both recorded: :func:`~squall.daemon.packaging.record_digests`); False
        (logged) when nimbus cannot provide it now, or sent one that cannot be used (then
        not asked for again for :data:`BAD_PACKAGE_RETRY_SECS`)."""
        dist = self.local_dir / "supervisor" / "stormdist"
        package = dist / tid
        if (packaging.has_package(package) and (package / packaging.CODE_DIR).is_dir()
                and (package / packaging.DIGEST_FILE).is_file()):
            return True
        bad = self._bad_packages.get(tid)
        if bad is not None and time.monotonic() < bad[1]:
            return False
        from squall.daemon.nimbus_client import NimbusClient
        tmp = dist / f"{tid}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        client = NimbusClient(self.conf, timeout=60, election_wait=0)   # retried next sync
        try:
            for file in packaging.PACKAGE_FILES:
                (tmp / file).write_bytes(client.download(tid, file))
            packaging.extract_code(tmp / packaging.CODE_FILE, tmp / packaging.CODE_DIR)
            packaging.record_digests(tmp)
        except (AuthenticationError, AuthorizationError) as exc:
            self._refused_download(tid, exc)
            shutil.rmtree(tmp, ignore_errors=True)
            return False
        except TopologyError as exc:    # nimbus's copy is damaged, or the zip is not one
            self._bad_package(tid, exc)
            shutil.rmtree(tmp, ignore_errors=True)
            return False
        except SquallError as exc:
            log.warning("cannot download topology %s from nimbus yet: %s", tid, exc)
            shutil.rmtree(tmp, ignore_errors=True)
            return False
        finally:
            client.close()
        self._download_refused = None
        if self._bad_packages.pop(tid, None) is not None:
            log.info("the package of topology %s nimbus sent now can be used", tid)
        self._bad_unreported.discard(tid)
        shutil.rmtree(dist / tid, ignore_errors=True)
        tmp.rename(dist / tid)
        log.info("downloaded topology %s", tid)
        return True

    def code_intact(self, tid: str) -> bool:
        """Before a worker of ``tid`` is launched: True when its package is as downloaded.
        A package changed on this disk since (a file truncated, edited or gone) would fail
        every worker started from it: one ERROR line names the files, and the package is
        downloaded again (False when nimbus cannot provide it now; the next sync retries).
        Reads the whole package: called only for a launch (once a round), not on every
        pass."""
        package = self.local_dir / "supervisor" / "stormdist" / tid
        damaged = packaging.damaged_files(package)
        if not damaged:
            return True
        shown = ", ".join(damaged[:3]) + (f" and {len(damaged) - 3} more"
                                          if len(damaged) > 3 else "")
        log.error("the package of topology %s in %s changed since it was downloaded (%s); "
                  "downloading it again", tid, package, shown)
        (package / packaging.DIGEST_FILE).unlink(missing_ok=True)    # incomplete until then
        return self.ensure_code(tid)

    def _bad_package(self, tid: str, exc: TopologyError) -> None:
        """The package of ``tid`` nimbus sent cannot be used: one ERROR line (again only when
        the reason changes), asked for again after :data:`BAD_PACKAGE_RETRY_SECS`, and this try
        reported to ``/errors`` by :meth:`_report_bad_package`."""
        text = str(exc)
        old = self._bad_packages.get(tid)
        self._bad_packages[tid] = (text, time.monotonic() + BAD_PACKAGE_RETRY_SECS)
        self._bad_unreported.add(tid)
        if old is None or old[0] != text:
            log.error("the package of topology %s that nimbus sent cannot be used: %s; no "
                      "worker of it starts here until nimbus has a good one (kill the "
                      "topology and submit it again); asking again every %.0f s", tid, text,
                      BAD_PACKAGE_RETRY_SECS)

    def _report_bad_package(self, tid: str, port: int) -> None:
        """A start failure of the slot on ``port`` in ``tid``'s ``/errors`` (the topology's
        status reason) for the last try at its package, once a try, when it could not be
        used; nothing otherwise."""
        if tid not in self._bad_unreported:
            return
        self._bad_unreported.discard(tid)
        text = self._bad_packages[tid][0]
        self._report_slot_error(tid, port, f"worker on port {port} cannot start: the package "
                                f"nimbus sent cannot be used: {text}", True,
                                f"the unusable package of {tid}")

    def _refused_download(self, tid: str, exc: SquallError) -> None:
        """Nimbus refused this supervisor's credentials: one ERROR naming what to fix (per kind
        of refusal, until a download goes through), then quiet retries at every sync (the
        operator may fix nimbus's side)."""
        if self._download_refused is type(exc):
            log.debug("cannot download topology %s: %s", tid, exc)
            return
        self._download_refused = type(exc)
        from squall.security.settings import authentication_mode
        mode = authentication_mode(self.conf)
        if mode == "mtls":
            setting = ("squall.tls.cert / squall.tls.key of this supervisor (its certificate's "
                       "name must be in nimbus.admins)")
        else:
            setting = ("squall.auth.token of this supervisor (a token of nimbus's "
                       "nimbus.auth.tokens whose user is in nimbus.admins)")
        log.error("cannot download topology %s: %s; fix %s. Its workers cannot start until "
                  "then; retrying at every sync without logging this again", tid, exc, setting)

    def _clean_code(self, keep: set[str]) -> None:
        dist = self.local_dir / "supervisor" / "stormdist"
        for path in dist.iterdir():
            if path.name not in keep and not path.name.endswith(".tmp"):
                shutil.rmtree(path, ignore_errors=True)

    # -- restart ------------------------------------------------------------------------------
    def adopt(self) -> None:
        """After a restart: keep the workers still running their current assignment whose
        loop is not stuck (the heartbeat timeouts count from now: see
        :mod:`~squall.daemon.supervisor_beats`); kill and clean everything else (recorded or
        stray)."""
        wanted = self.assigned_slots()
        kept_ports: set[int] = set()
        stopping: list[WorkerRecord] = []
        for wid, rec in list(self.workers.items()):
            reason = self.worker_problem(rec, wanted.get(rec.port))
            if not reason and rec.port in kept_ports:
                reason = "a second worker on its port"
            if reason:
                log.info("not adopting worker %s: %s", wid, reason)
                stopping.append(self.workers.pop(wid))
                self.worker_beats.forget(wid)
            else:
                log.info("adopted worker %s (pid %d, port %d)", wid, rec.pid, rec.port)
                kept_ports.add(rec.port)
        for wid in stray_worker_ids(self.local_dir, set(self.workers) | {
                rec.worker_id for rec in stopping}):
            pids = _pids(self.local_dir / "workers" / wid)
            pids_dir = self.local_dir / "workers" / wid / "pids"
            live = [p for p in pids if registered_process(pids_dir, p)]
            if live:
                log.info("killing stray worker %s (pid %d)", wid, live[0])
            stopping.append(WorkerRecord(wid, "?", -1, [], live[0] if live else 0))
        stop_workers(self.local_dir, stopping, self._shutdown_grace())     # side by side
        self.local.save()


def _pids(wdir: Path) -> list[int]:
    try:
        return [int(p.name) for p in (wdir / "pids").iterdir() if p.name.isdigit()]
    except FileNotFoundError:
        return []
