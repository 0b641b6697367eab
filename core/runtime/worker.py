"""A worker: the executors of one (topology, port), their loop and their links to other workers.

One loop thread drives every executor cooperatively (no GIL contention between executors);
a receive thread waits on the transport (libraries release the GIL there) and hands raw batches
to the loop. Tuples for tasks in this worker go straight into the target task's queue; tuples
for remote tasks are collected per destination worker, serialized once per batch and sent when
the loop finishes an iteration or the batch is full. The public methods are thread-safe: they
hand work to the loop thread. See DESIGN.md, "The tuple path".
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from typing import Any

from squall import drivers
from squall.api.context import TopologyContext
from squall.api.topology import ACKER, Topology
from squall.api.tuple import TICK_STREAM, Source, Tuple
from squall.errors import SquallError, TransportError
from squall.runtime import errors as error_log
from squall.runtime.executors import AckerExecutor, BoltExecutor, Executor, SpoutExecutor
from squall.runtime.tasks import ACK_ACK, ACK_FAIL, ACK_INIT, METRICS_STREAM, TaskState, make_emit

log = logging.getLogger(__name__)
CONTROL = 0          # destination "task" of worker-to-worker control entries


class Worker:
    """Runs the executors assigned to one (topology, port).

    Parameters:
      conf: merged topology configuration (defaults < files < topology conf).
      topology: a :class:`squall.api.topology.Topology` with its system components.
      topology_id: e.g. ``wordcount-3-1732262400``.
      port: this worker's port (the transport binds it; 0 = any free port, see ``.port``).
      executors: the ``(start_task, end_task)`` ranges this worker runs.
      task_to_worker: every task id of the topology -> ``(host, port)`` of its worker.
      transport: a :class:`squall.Transport`, or ``None`` when every task is in this worker.
      host: the host name this worker is reached at.
    """

    def __init__(self, *, conf: dict[str, Any], topology: Topology, topology_id: str, port: int,
                 executors: list[tuple[int, int]], task_to_worker: dict[int, tuple[str, int]],
                 transport: Any = None, host: str = "127.0.0.1") -> None:
        self.conf = conf
        self.topology = topology
        self.topology_id = topology_id
        self.port = port
        self.host = host
        self.executor_ranges = [tuple(e) for e in executors]
        self.transport = transport
        self.serializer = drivers.driver("serializer", conf)
        self.batch_size = max(1, int(conf.get("topology.transfer.batch.size") or 100))
        cap = int(conf.get("topology.executor.receive.buffer.size") or 32768)
        self.high = int(cap * float(conf.get("topology.backpressure.high.watermark", 0.9)))
        self.low = int(cap * float(conf.get("topology.backpressure.low.watermark", 0.4)))
        self.acker_tasks = topology.tasks(ACKER)
        self.acking = bool(self.acker_tasks)
        self.queues: dict[int, deque[Tuple]] = {}
        self.tasks: dict[int, TaskState] = {}
        self.executors: list[Executor] = []
        self.now = time.monotonic()
        self.throttled = False
        self._overloaded = False
        self._remote_throttle: dict[str, bool] = {}
        self._sources: dict[tuple[str, str], Source] = {}
        self.tick_source = Source("__system", TICK_STREAM, ("freq",))
        self._sys = {s: Source("__system", s, ("root", "value", "task"))
                     for s in (ACK_INIT, ACK_ACK, ACK_FAIL)}
        self._task_to_worker: dict[int, tuple[str, int]] = {}
        self._outbox_of_task: dict[int, list[tuple[int, Tuple]]] = {}
        self._outboxes: dict[tuple[str, int], list[tuple[int, Tuple]]] = {}
        self._conns: dict[tuple[str, int], Any] = {}
        self._inbox: deque[bytes] = deque()
        self._acks: dict[int, int] = {}
        self._commands: deque[Any] = deque()
        self._wake = threading.Event()
        self._running = False
        self._alive = False
        self._loop_thread: threading.Thread | None = None
        self._recv_thread: threading.Thread | None = None
        self._recv_conn: Any = None
        self.errors = error_log.ErrorLog(conf)
        self.start_time = time.time()
        self._send_failures = 0
        self._set_assignment(task_to_worker)

    # -- set-up ------------------------------------------------------------------------------
    def source(self, component: str, stream: str) -> Source:
        key = (component, stream)
        src = self._sources.get(key)
        if src is None:
            spec = self.topology.components.get(component)
            if stream in self._sys:
                return self._sys[stream]
            fields = spec.streams[stream].fields if spec and stream in spec.streams else ()
            src = self._sources[key] = Source(component, stream, tuple(fields))
        return src

    def start(self) -> None:
        """Build executors (``initialize`` every component), bind, connect, start the loop.

        Raises whatever a component's ``initialize`` raises (the worker is then not alive)."""
        from squall.runtime.system import instantiate
        topo = self.topology
        local_tasks = [t for s, e in self.executor_ranges for t in range(s, e + 1)]
        for start, end in self.executor_ranges:
            cid = topo.task_to_component[start]
            spec = topo.components[cid]
            group = []
            for task in range(start, end + 1):
                conf = component_conf(self.conf, spec.config)
                ts = TaskState(self, cid, task, instantiate(spec, conf), conf)
                self.tasks[task] = ts
                self.queues[task] = ts.queue
                group.append(ts)
            cls = {"spout": SpoutExecutor, "acker": AckerExecutor}.get(spec.kind, BoltExecutor)
            self.executors.append(cls(self, cid, group))
        for ex in self.executors:
            for ts in ex.tasks:
                ts.executor = ex  # type: ignore[attr-defined]
                ctx = TopologyContext(
                    topology_id=self.topology_id, topology_name=self.conf.get(
                        "topology.name", self.topology_id), component_id=ts.component_id,
                    task_id=ts.task, task_to_component=topo.task_to_component,
                    this_worker_port=self.port, host=self.host,
                    outputs={n: s.fields for n, s in topo.components[ts.component_id]
                             .streams.items()},
                    register_metric=self._metric_registrar(ts))
                ctx.worker_tasks = local_tasks  # type: ignore[attr-defined]
                ts.context = ctx  # type: ignore[attr-defined]
                ts.build_routes(ctx)
                self._install(ex, ts)
        for ex in self.executors:
            for ts in ex.tasks:
                if ex.kind != "acker":
                    ts.instance.initialize(ts.conf, ts.context)  # type: ignore[attr-defined]
        self._running = True
        if self.transport is not None:
            self._recv_conn = self.transport.bind(self.topology_id, self.port)
            self.port = getattr(self._recv_conn, "port", self.port) or self.port
            self._recv_thread = threading.Thread(target=self._recv_loop, daemon=True,
                                                 name=f"squall-recv-{self.port}")
            self._recv_thread.start()
        self._alive = True
        self._loop_thread = threading.Thread(target=self._loop, daemon=True,
                                             name=f"squall-worker-{self.topology_id}-{self.port}")
        self._loop_thread.start()

    def _install(self, ex: Executor, ts: TaskState) -> None:
        inst = ts.instance
        inst.context = ts.context  # type: ignore[attr-defined]
        if ex.kind == "acker":
            return
        inst.emit = make_emit(ts, spout=ex.kind == "spout")
        inst.emit_many = inst.emit.many
        inst.report_error = lambda e, _ts=ts: self.report_error(_ts, e, user=True)
        if ex.kind == "bolt":
            inst.ack = lambda tup, _ts=ts: self.ack_tuple(_ts, tup) if tup.roots else None
            inst.fail = lambda tup, _ts=ts: self.fail_tuple(_ts, tup)
        else:
            ts.deferred = []  # type: ignore[attr-defined]

    def _metric_registrar(self, ts: TaskState) -> Any:
        from squall.metrics.registry import MetricRegistry
        bucket = int(self.conf.get("topology.builtin.metrics.bucket.size.secs") or 60)

        def register(name: str, metric: Any, bucket_secs: float | None) -> Any:
            registry = ts.__dict__.get("metrics")
            if registry is None:
                registry = ts.metrics = MetricRegistry(bucket)  # type: ignore[attr-defined]
            return registry.register(name, metric, bucket_secs)
        return register

    # -- the hot path (loop thread only) -------------------------------------------------------
    def deliver(self, ts: TaskState, task: int, tup: Tuple) -> None:
        q = self.queues.get(task)
        if q is not None:
            q.append(tup)
        else:
            self.send_remote(ts, task, tup)

    def send_remote(self, ts: TaskState | None, task: int, tup: Tuple) -> None:
        out = self._outbox_of_task.get(task)
        if out is None:
            self._undeliverable([(task, tup)], f"no worker is assigned task {task}")
            return
        out.append((task, tup))
        if ts is not None:
            ts.transferred += 1
        if len(out) >= self.batch_size:
            self._flush(self._task_to_worker[task], out)

    def ack_tuple(self, ts: TaskState, tup: Tuple) -> None:
        """Ack ``tup``: its XOR contribution is folded per root and sent to the acker once
        per executor batch (XOR is associative, so the acker sees the same totals)."""
        ts.acked += 1
        roots = tup.roots
        if not roots:
            return
        acks = self._acks
        if roots.__class__ is tuple:
            v = tup.id ^ tup.ackval  # type: ignore[operator]
            for r in roots:
                acks[r] = acks.get(r, 0) ^ v
        else:
            for r, e in roots.items():  # type: ignore[attr-defined]
                acks[r] = acks.get(r, 0) ^ e ^ tup.ackval

    def flush_acks(self) -> None:
        acks = self._acks
        tasks = self.acker_tasks
        n = len(tasks)
        src = self._sys[ACK_ACK]
        queues_get = self.queues.get
        for r, v in acks.items():
            if v:
                t = tasks[r % n]
                tup = Tuple((r, v), 0, src)
                q = queues_get(t)
                if q is not None:
                    q.append(tup)
                else:
                    self.send_remote(None, t, tup)
        acks.clear()

    def fail_tuple(self, ts: TaskState | None, tup: Tuple) -> None:
        if ts is not None:
            ts.failed += 1
        roots = tup.roots
        if not roots or not self.acker_tasks:
            return
        n = len(self.acker_tasks)
        src = self._sys[ACK_FAIL]
        for r in roots:
            self.deliver(ts, self.acker_tasks[r % n], Tuple((r, 0), 0, src))  # type: ignore

    def track_spout_tuple(self, ts: TaskState, root: int, xor: int, tup_id: Any,
                          stream: str, values: tuple) -> None:
        ts.executor.track(ts, root, tup_id)  # type: ignore[attr-defined]
        task = self.acker_tasks[root % len(self.acker_tasks)]
        self.deliver(ts, task, Tuple((root, xor, ts.task), ts.task, self._sys[ACK_INIT]))

    def complete_tree(self, ts: TaskState, root: int, spout_task: int, ok: bool) -> None:
        src = self._sys[ACK_ACK if ok else ACK_FAIL]
        self.deliver(ts, spout_task, Tuple((root,), ts.task, src))

    def ack_untracked(self, ts: TaskState, tup_id: Any) -> None:
        ts.deferred.append(tup_id)  # type: ignore[attr-defined]

    def run_deferred_acks(self, ts: TaskState) -> None:
        deferred = ts.deferred  # type: ignore[attr-defined]
        if deferred:
            ts.deferred = []  # type: ignore[attr-defined]
            for tup_id in deferred:
                ts.acked += 1
                try:
                    ts.instance.ack(tup_id)
                except Exception as exc:
                    self.report_error(ts, exc)

    # -- errors --------------------------------------------------------------------------------
    def report_error(self, ts: TaskState, exc: BaseException | str, user: bool = False) -> None:
        self.errors.record(ts.component_id, ts.task, exc, self.host, self.port)
        if not user and self.conf.get("topology.worker.die.on.error"):
            log.critical("component %s task %d failed and topology.worker.die.on.error is set; "
                         "the worker stops", ts.component_id, ts.task)
            self._running = False
            self._alive = False

    def drain_errors(self) -> list[dict[str, Any]]:
        return self.errors.drain()

    # -- the loop ------------------------------------------------------------------------------
    def _loop(self) -> None:
        executors = self.executors
        next_timer = 0.0
        monotonic = time.monotonic
        try:
            while self._running:
                self.now = now = monotonic()
                while self._commands:
                    self._commands.popleft()()
                if self._inbox:
                    self._dispatch_inbox()
                done = 0
                for ex in executors:
                    done += ex.run_once()
                    if self._acks:
                        self.flush_acks()
                self._flush_all()
                if now >= next_timer:
                    next_timer = now + 0.005
                    self._timers(now)
                self._check_backpressure()
                if not done and not self._inbox and not self._commands:
                    self._wake.wait(0.001)
                    self._wake.clear()
        except BaseException:
            log.exception("worker %s:%d loop died", self.topology_id, self.port)
            self._alive = False
        finally:
            self._flush_all()

    def _timers(self, now: float) -> None:
        for ex in self.executors:
            ex.on_timer(now)
        from squall.runtime.system import timers
        timers(self, now)

    def _check_backpressure(self) -> None:
        if self._overloaded:
            if all(len(q) <= self.low for q in self.queues.values()):
                self._overloaded = False
                self._broadcast_throttle(False)
        elif any(len(q) > self.high for q in self.queues.values()):
            self._overloaded = True
            self._broadcast_throttle(True)
        self.throttled = self._overloaded or any(self._remote_throttle.values())

    def _broadcast_throttle(self, on: bool) -> None:
        me = f"{self.host}:{self.port}"
        for key in list(self._conns):
            self._send_entries(key, [[CONTROL, "throttle", me, on]], [])

    # -- remote transfer -----------------------------------------------------------------------
    def _flush_all(self) -> None:
        for key, out in self._outboxes.items():
            if out:
                self._flush(key, out)

    def _flush(self, key: tuple[str, int], out: list[tuple[int, Tuple]]) -> None:
        batch = out[:]
        out.clear()
        entries = [[task, t.task, t.src.stream, t.values, t.id, t.roots] for task, t in batch]
        self._send_entries(key, entries, batch)

    def _send_entries(self, key: tuple[str, int], entries: list[Any],
                      batch: list[tuple[int, Tuple]]) -> None:
        conn = self._conns.get(key)
        try:
            if conn is None:
                conn = self._conns[key] = self.transport.connect(self.topology_id, *key)
            conn.send([(0, self.serializer.dumps(entries))])
        except SquallError as exc:
            self._undeliverable(batch, f"sending to worker {key[0]}:{key[1]} failed: {exc}")

    def _undeliverable(self, batch: list[tuple[int, Tuple]], why: str) -> None:
        """Tuples that cannot be delivered fail back to the acker, so spouts replay them."""
        self._send_failures += 1
        if self._send_failures == 1 or self._send_failures % 1000 == 0:
            log.warning("%s; %d tuple(s) failed back for replay", why, len(batch))
        for _, tup in batch:
            if tup.roots and tup.src.stream not in self._sys:
                roots = tup.roots
                n = len(self.acker_tasks)
                for r in roots:
                    task = self.acker_tasks[r % n]
                    if task in self.queues or task in self._outbox_of_task:
                        self.deliver(None, task, Tuple((r, 0), 0, self._sys[ACK_FAIL]))  # type: ignore

    def _recv_loop(self) -> None:
        conn = self._recv_conn
        while self._running:
            try:
                msgs = conn.recv(timeout=0.1)
            except TransportError as exc:
                log.warning("receive failed on port %d: %s", self.port, exc)
                continue
            except Exception:
                if not self._running:
                    return
                log.exception("receive thread error on port %d", self.port)
                continue
            if msgs:
                self._inbox.extend(payload for _, payload in msgs)
                self._wake.set()

    def _dispatch_inbox(self) -> None:
        inbox = self._inbox
        loads = self.serializer.loads
        queues = self.queues
        source = self.source
        comp_of = self.topology.task_to_component
        while inbox:
            payload = inbox.popleft()
            try:
                entries = loads(payload)
                for dest, src_task, stream, values, tid, roots in entries:
                    if dest == CONTROL:
                        self._control(src_task, stream, values)
                        continue
                    if roots is not None and roots.__class__ is list:
                        roots = tuple(roots)
                    tup = Tuple(tuple(values), src_task,
                                source(comp_of.get(src_task, "__system"), stream), tid, roots)
                    q = queues.get(dest)
                    if q is not None:
                        q.append(tup)
                    else:
                        self.send_remote(None, dest, tup)
            except Exception as exc:
                log.warning("worker %d dropped a malformed batch of %d bytes: %s", self.port,
                            len(payload) if isinstance(payload, (bytes, bytearray)) else -1, exc)

    def _control(self, kind: Any, who: Any, on: Any) -> None:
        if kind == "throttle":
            self._remote_throttle[str(who)] = bool(on)

    # -- assignment ----------------------------------------------------------------------------
    def _set_assignment(self, task_to_worker: dict[int, tuple[str, int]]) -> None:
        me = (self.host, self.port)
        self._task_to_worker = {int(t): (str(h), int(p)) for t, (h, p) in task_to_worker.items()}
        mine = {t for s, e in self.executor_ranges for t in range(s, e + 1)}
        keys = {w for t, w in self._task_to_worker.items() if t not in mine and w != me}
        for key in keys:
            self._outboxes.setdefault(key, [])
        self._outbox_of_task = {t: self._outboxes[w] for t, w in self._task_to_worker.items()
                                if w in keys and t not in mine}
        for key in list(self._outboxes):
            if key not in keys:
                stale = self._outboxes.pop(key)
                self._undeliverable(stale, f"worker {key[0]}:{key[1]} is no longer assigned")
                conn = self._conns.pop(key, None)
                if conn is not None:
                    conn.close()
                self._remote_throttle.pop(f"{key[0]}:{key[1]}", None)

    def update_assignment(self, task_to_worker: dict[int, tuple[str, int]]) -> None:
        """Refresh links to remote workers (thread-safe; applied by the loop)."""
        self._commands.append(lambda: self._set_assignment(task_to_worker))
        self._wake.set()

    def activate(self) -> None:
        self._call(lambda: [ex.set_active(True) for ex in self.executors
                            if isinstance(ex, SpoutExecutor)])

    def deactivate(self) -> None:
        self._call(lambda: [ex.set_active(False) for ex in self.executors
                            if isinstance(ex, SpoutExecutor)])

    def _call(self, fn: Any, timeout: float = 10.0) -> None:
        """Run ``fn`` on the loop thread and wait for it (or run it here if no loop runs)."""
        if not self._running or threading.current_thread() is self._loop_thread:
            fn()
            return
        done = threading.Event()
        self._commands.append(lambda: (fn(), done.set()))
        self._wake.set()
        done.wait(timeout)

    # -- observation ---------------------------------------------------------------------------
    def is_alive(self) -> bool:
        return self._alive and self._loop_thread is not None and self._loop_thread.is_alive()

    def pending(self) -> int:
        """Spout tuples in flight in this worker."""
        return sum(ex.pending(ts) for ex in self.executors if isinstance(ex, SpoutExecutor)
                   for ts in ex.tasks)

    def queued(self) -> int:
        return sum(len(q) for q in self.queues.values()) + len(self._inbox) + sum(
            len(o) for o in self._outboxes.values())

    def stats(self) -> dict[str, Any]:
        from squall.runtime.system import executor_stats
        return {"executors": {f"[{ex.range[0]}, {ex.range[1]}]": executor_stats(ex)
                              for ex in self.executors},
                "uptime_secs": int(time.time() - self.start_time), "time_secs": int(time.time())}

    # -- shutdown ------------------------------------------------------------------------------
    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop spouts, flush and close links, stop the loop, clean up every component."""
        if self._running:
            self.deactivate()
        self._running = False
        self._wake.set()
        if self._loop_thread is not None:
            self._loop_thread.join(timeout)
        for ex in self.executors:
            ex.stop()
        for conn in self._conns.values():
            try:
                conn.close()
            except Exception:
                log.debug("closing a connection failed", exc_info=True)
        self._conns.clear()
        if self._recv_conn is not None:
            self._recv_conn.close()
        if self._recv_thread is not None:
            self._recv_thread.join(timeout)
        self._alive = False


def component_conf(conf: dict[str, Any], component_config: dict[str, Any]) -> dict[str, Any]:
    """Topology conf < per-component config < command-line overrides."""
    if not component_config:
        return conf
    from squall import config
    return config.component_conf(conf, component_config)
