"""The executor of a bolt on the checkpoint path: a stateful bolt, or a bolt upstream of one.

It is a :class:`~squall.runtime.executors.bolt.BoltExecutor` that also aligns the checkpoint
tuples of its input tasks (:mod:`squall.stateful.barrier`). When a checkpoint is complete, a
stateful task acts on it (:class:`~squall.stateful.keeper.StateKeeper`: recover, prepare or
commit) and any task forwards it on its own ``__checkpoint`` stream, anchored to the
checkpoint tuples it got, and acks those (or fails them when the action failed). A stateful
task holds the ack of every input it processed until the checkpoint covering it committed;
while it is not recovered it keeps its inputs unprocessed and fails them once at the next
``recover`` (:meth:`StateKeeper.defer`). Chosen when the worker is built
(:func:`squall.runtime.executors.executor_class`), so topologies without stateful bolts run
the plain bolt executor untouched. Everything runs on the worker's loop thread.
"""
from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Sequence
from functools import partial
from itertools import islice
from itertools import repeat as _repeat
from itertools import starmap as _starmap
from operator import attrgetter

from squall import drivers
from squall.api.tuple import Source, Tuple, TupleBatch
from squall.errors import StateProviderError
from squall.runtime import flow
from squall.runtime.acks import SETTLED
from squall.runtime.executors.base import Services, _perf
from squall.runtime.executors.base import pass_cap
from squall.runtime.executors.bolt import PASS_SECONDS, BoltExecutor
from squall.runtime.executors.threaded import wants_thread
from squall.runtime.task import TaskState
from squall.stateful.barrier import BarrierAligner
from squall.stateful.bolt import StatefulBolt
from squall.stateful.checkpoint import CHECKPOINT, COMMIT, PREPARE, RECOVER, make_provider
from squall.stateful.keeper import NotRecovered, StateKeeper
from squall.stateful.provider import StateProvider, namespace, task_id_namespace
from squall.stateful.values import value_codec
from squall.stateful.wiring import checkpoint_inputs

__all__ = ["CheckpointedBoltExecutor"]

log = logging.getLogger(__name__)
_src = attrgetter("src")


class CheckpointedBoltExecutor(BoltExecutor):
    """Runs the tasks of a bolt on the checkpoint path (see the module docstring)."""

    def __init__(self, services: Services, component_id: str, tasks: list[TaskState]) -> None:
        super().__init__(services, component_id, tasks)
        topology = services.sources.topology
        inputs = checkpoint_inputs(topology, component_id)
        #: the sources of the checkpoint tuples this bolt gets (one per input component)
        self.barrier_sources = [services.sources.get(cid, CHECKPOINT) for cid in inputs]
        #: the only one of them, which :meth:`_run_inline` looks for (None: several inputs,
        #: or a bolt that takes batches, anchors or acks itself; then :meth:`_data_ahead`
        #: finds it)
        self.inline_barrier = self.barrier_sources[0] if len(self.barrier_sources) == 1 \
            and not self.batch_mode and self.auto_anchor and self.auto_ack \
            and self.acks.acking else None
        input_tasks = [t for cid in inputs for t in topology.tasks(cid)]
        self.aligners = {ts.task: BarrierAligner(input_tasks) for ts in tasks}
        self.stateful = isinstance(tasks[0].instance, StatefulBolt)
        self.lazy_batch = bool(getattr(type(tasks[0].instance), "lazy_batch", False))
        self.keepers: dict[int, StateKeeper] = {}
        self.provider: StateProvider | None = None
        #: tasks whose provider failed and that have not committed a checkpoint since: each
        #: says so once (an outage is one error line per task, and one when it ends)
        self.provider_down: set[int] = set()
        if wants_thread(type(tasks[0].instance), tasks[0].conf):
            log.warning("bolt %s is on the checkpoint path of a stateful bolt: it runs on the "
                        "worker's loop, not on a thread of its own", component_id)
        if self.stateful:
            conf = tasks[0].conf
            self.serializer = drivers.driver("serializer", conf)
            self.value_dumps, self.value_loads = value_codec(self.serializer)

    def recovered(self) -> bool:
        """Whether every stateful task here has its state (else it defers its inputs); True
        for a bolt that keeps none. Read from any thread."""
        return all(keeper.ready for keeper in list(self.keepers.values()))

    @classmethod
    def takes_runs(cls, component_cls: type) -> bool:
        return False        # every queued entry is a Tuple: barriers are told apart by one

    def install(self, ts: TaskState) -> None:
        super().install(ts)
        if not self.stateful:
            return
        assert ts.context is not None
        if self.provider is None:       # the worker's stores come with the first context
            self.provider = make_provider(ts.conf, ts.context.memory_stores)
        provider = self.provider
        inst = ts.instance
        acks = self.acks

        def ack(fold: dict[int, int], n: int) -> None:
            # ``fold`` is the keeper's, handed over (it keeps it no longer): the few acks this
            # pass folded already are XORed into it, and it joins the ledger's fold by one C
            # update instead of a Python step per root (a commit acks ~1 s of trees)
            ts.acked += n
            folded = acks.folded          # flushed to the acker after this executor's pass
            if folded:
                get = fold.get
                for r, v in folded.items():
                    fold[r] = get(r, 0) ^ v
            folded.update(fold)

        keeper = StateKeeper(
            provider=provider,
            namespace=namespace(ts.context.topology_name, ts.component_id,
                                ts.context.task_index),
            legacy=task_id_namespace(ts.context.topology_name, ts.component_id, ts.task),
            dumps=self.serializer.dumps, loads=self.serializer.loads,
            value_dumps=self.value_dumps, value_loads=self.value_loads,
            init_state=inst.init_state, ack=ack,
            fail=lambda roots, n: acks.fail_roots(ts, roots, n),
            defer_limit=flow.capacity(ts.conf))
        self.keepers[ts.task] = keeper
        inst.ack = keeper.hold        # an explicit ack waits for the commit too
        fail = inst.fail

        def fail_spoiling(tup: Tuple) -> None:
            # a tuple acked or failed already (its ack held: keeper.hold), and a tick (in no
            # tree, settled when made), is not failed, so the state is kept
            settled = tup.__class__ is Tuple and (
                not (tup.id or tup.ackval) if tup.roots else tup.ackval == SETTLED)
            fail(tup)
            if not settled:
                keeper.spoil()        # what it changed is dropped with the pass's changes
        inst.fail = fail_spoiling
        inst.process_tick = partial(_stateful_tick, keeper, inst.process_tick)

    # -- the loop's turn ---------------------------------------------------------------------
    def run_once(self) -> int:
        congested = self.flow.congested
        if congested and not congested.isdisjoint(self.downstream):
            self.paused += 1
            return 0
        done = 0
        inline = self.inline_barrier
        acks = self.acks
        # process latency as the plain executor measures it (a stateful task's acks wait for
        # a commit instead: its inputs' complete latency at the spout tells that wait)
        timed = self.auto_ack and not self.stateful
        for ts in self.tasks:
            q = ts.queue
            n = len(q)
            if not n:
                continue
            n = self._take(n, self.batch, ts.pass_cap)
            t0 = _perf()
            acked = ts.acked
            aligner = self.aligners[ts.task]
            keeper = self.keepers.get(ts.task)
            one = partial(self._run_tracked_one, ts) if keeper is None else \
                partial(self._run_stateful_one, ts, keeper)
            left = n
            while left:
                if inline is not None and not aligner.arrived and (keeper is None
                                                                   or keeper.ready):
                    k, barrier, folded = self._run_inline(
                        ts, q, left, inline, acks.folded if keeper is None else keeper.pending,
                        one)
                    if keeper is None:
                        ts.acked += folded
                    else:
                        keeper.pending_n += folded
                    left -= k
                    if barrier is not None:
                        self._barrier(ts, aligner, barrier)
                    continue
                k = self._data_ahead(q, left)
                if k:
                    if aligner.arrived:
                        self._run_aligning(ts, aligner, q, k)
                    else:
                        self._run_data(ts, q, k)
                    left -= k
                if left:
                    left -= 1
                    self._barrier(ts, aligner, q.popleft())
            if keeper is not None and keeper.spoiled:
                keeper.drop_spoiled()       # an input failed: the state goes back
            spent = _perf() - t0
            ts.pass_cap = pass_cap(n, spent, PASS_SECONDS)
            done += n
            if self.system_n:   # checkpoints and ticks: not in the user's counts
                n, spent = self.users_share(n, spent)
            if n:
                ts.exec_ms += spent * 1000.0
                ts.exec_n += n
                ts.executed += n
            if timed and ts.acked > acked:
                ts.proc_ms += spent * 1000.0 * (ts.acked - acked)
                ts.proc_n += ts.acked - acked
        return done

    def _data_ahead(self, q: deque[Tuple], n: int) -> int:
        """How many of the first ``n`` queued tuples come before a checkpoint tuple (``n``
        when none does): searched in C, so data tuples cost no Python step here."""
        sources = list(map(_src, islice(q, n)))
        first = n
        for src in self.barrier_sources:
            try:
                first = sources.index(src, 0, first)
            except ValueError:
                continue
        return first

    def _run_aligning(self, ts: TaskState, aligner: BarrierAligner, q: deque[Tuple],
                      n: int) -> None:
        """Take ``n`` data tuples while a checkpoint is being aligned: those of inputs that
        delivered it wait in the aligner, the others are processed."""
        ready: deque[Tuple] = deque()
        held = aligner.arrived
        for _ in range(n):
            tup = q.popleft()
            if tup.task in held and tup.src is not self.tick_src:
                aligner.hold(tup)
            else:
                ready.append(tup)
        if ready:
            self._run_data(ts, ready, len(ready))

    def _run_data(self, ts: TaskState, q: deque[Tuple], n: int) -> None:
        """Process the first ``n`` tuples of ``q`` (data and ticks) in order."""
        keeper = self.keepers.get(ts.task)
        if keeper is not None:
            self._run_stateful(ts, keeper, q, n)
        elif self.batch_mode:
            tuples = [q.popleft() for _ in range(n)]
            self._run_batch(ts, TupleBatch(tuples, n)  # type: ignore[arg-type]
                            if self.lazy_batch else tuples)
        else:
            self._run_tuples(ts, q, n)

    def _run_stateful(self, ts: TaskState, keeper: StateKeeper, q: deque[Tuple],
                      n: int) -> None:
        """``process`` each of ``n`` tuples; with ``auto_ack`` each one's ack is held in the
        keeper's pending acks, as :meth:`StateKeeper.hold` does (the common case, a recovered
        task of a bolt that anchors and acks automatically, by :meth:`_run_inline`; the rest
        one by one by :meth:`_run_stateful_one`)."""
        if not (keeper.ready and self.auto_anchor and self.auto_ack):
            popleft = q.popleft
            for _ in range(n):
                self._run_stateful_one(ts, keeper, popleft())
            return
        _, _, folded = self._run_inline(ts, q, n, None, keeper.pending,
                                        partial(self._run_stateful_one, ts, keeper))
        keeper.pending_n += folded

    def _run_inline(self, ts: TaskState, q: deque[Tuple], n: int, barrier: Source | None,
                    fold: dict[int, int], one: Callable[[Tuple], None]
                    ) -> tuple[int, Tuple | None, int]:
        """The pass of a bolt that anchors and acks automatically: ``process`` each of up to
        ``n`` tuples of ``q`` and fold its ack into ``fold`` (root -> XOR: the keeper's
        pending acks for a stateful task, the ledger's fold for the others); a tick or an
        untracked tuple goes to ``one``. Stops after taking a
        tuple of ``barrier`` (the task's only checkpoint source, while no checkpoint is being
        aligned), returned unprocessed. Returns (tuples taken, that tuple or None, acks
        folded).

        Two shortcuts of the plain bolt pass's loop (BoltExecutor._run_tracked):

        * the checkpoint tuple is found by one attribute compare per tuple here, where
          :meth:`_data_ahead` first built the list of every pass's sources (bench.stateful,
          memory arm, 2026-11-28: ~80 ns per word of the count bolt, ~20 of the split);
        * consecutive tuples of the same tree (the same ``roots``, as a split's words share
          their sentence's) are XORed in a local and folded once per run: a stateful task's
          fold holds a checkpoint interval of trees, a dict too big to stay in cache, so one
          touch per tree instead of one per tuple (the word count's 10 words per sentence).

        Each tuple folded is marked settled as an explicit ack marks it (``id`` and
        ``ackval`` zeroed), so an ``ack`` or ``fail`` the bolt makes of it later changes
        nothing and counts nothing; one it acked or failed itself is not folded again.
        """
        process = ts.instance.process
        get = fold.get
        folded = 0
        run: tuple[int, ...] | None = None        # the roots of the run being XORed in acc
        acc = 0
        try:
            for i, tup in enumerate(_starmap(q.popleft, _repeat((), n))):
                if tup.src is barrier:
                    return i + 1, tup, folded
                roots = tup.roots
                if roots.__class__ is tuple:
                    ts.current = tup
                    try:
                        process(tup)
                    except Exception as exc:  # the executor goes on; see API.md section 2
                        ts.current = None
                        self._failed(ts, tup, exc)
                        keeper = self.keepers.get(ts.task)
                        if keeper is not None:
                            keeper.spoil()   # the pass's end drops the state's changes
                        continue
                    v = tup.id ^ tup.ackval
                    if not v:       # the bolt acked or failed it itself: counted then
                        continue
                    tup.id = tup.ackval = 0
                    if roots is run:
                        acc ^= v
                    else:
                        if run is not None:
                            for r in run:
                                fold[r] = get(r, 0) ^ acc
                        run = roots
                        acc = v
                    folded += 1
                else:               # a tick, an untracked tuple
                    ts.current = None
                    one(tup)
        finally:
            ts.current = None
            if run is not None:
                for r in run:
                    fold[r] = get(r, 0) ^ acc
        return n, None, folded

    def _run_stateful_one(self, ts: TaskState, keeper: StateKeeper, tup: Tuple) -> None:
        if tup.src is self.tick_src:
            ts.ticks -= 1
            self._tick(ts, tup)
            return
        if not keeper.ready:
            # kept, failed once at the recover; past the keeper's bound failed now
            if not keeper.defer(tup):
                self.acks.fail_tuple(ts, tup)
            return
        if self.auto_anchor:
            ts.current = tup
        try:
            ts.instance.process(tup)
        except Exception as exc:  # the executor goes on; see API.md section 2
            self._failed(ts, tup, exc)
            keeper.spoil()            # the pass's end drops the state's changes
            return
        finally:
            ts.current = None
        if self.auto_ack:
            keeper.hold(tup)

    # -- checkpoints -------------------------------------------------------------------------
    def _barrier(self, ts: TaskState, aligner: BarrierAligner, tup: Tuple) -> None:
        """A checkpoint tuple taken from the task's queue: a system tuple, so neither it, its
        ack or failure, the checkpoint forwarded, nor the time acting on it count as the
        user's (``system_n``, and the task's counters put back)."""
        self.system_n += 1
        try:
            txid, action, seq = tup.values
            txid, action = int(txid), str(action)
        except (TypeError, ValueError):
            log.warning("bolt %s task %d dropped a malformed checkpoint tuple %.80r",
                        self.component_id, ts.task, tup.values)
            self._fail_system(ts, (tup,))
            return
        step = aligner.barrier(tup.task, seq, tup)
        self._fail_system(ts, step.abandoned)
        if step.before:
            self._run_data(ts, deque(step.before), len(step.before))
        if step.complete is None:
            return
        t0 = _perf()
        if self._act(ts, txid, action):
            self._forward(ts, [txid, action, seq], step.complete)
            ack = self.acks.ack_tuple
            for b in step.complete:
                ack(ts, b)
            ts.acked -= len(step.complete)
        else:
            self._fail_system(ts, step.complete)
        self.system_secs += _perf() - t0
        if step.after:
            self._run_data(ts, deque(step.after), len(step.after))

    def _forward(self, ts: TaskState, values: list[object], anchors: list[Tuple]) -> None:
        """Emit a checkpoint on the task's own ``__checkpoint`` stream, anchored to the
        checkpoint tuples it got: through the task's emit, with its emit counters put back
        (a checkpoint is not one of the bolt's emits)."""
        emitted, extra = ts.emitted, ts.transfer_extra
        try:
            ts.instance.emit(values, CHECKPOINT, anchors=anchors)
        finally:
            ts.emitted, ts.transfer_extra = emitted, extra

    def _fail_system(self, ts: TaskState, tuples: Sequence[Tuple]) -> None:
        """Fail checkpoint tuples (their trees replay), not counted as the task's failures."""
        fail = self.acks.fail_tuple
        for t in tuples:
            fail(ts, t)
        ts.failed -= len(tuples)

    def _act(self, ts: TaskState, txid: int, action: str) -> bool:
        """Act on a complete checkpoint; False when it must fail."""
        keeper = self.keepers.get(ts.task)
        if keeper is None:
            return True
        try:
            if action == RECOVER:
                keeper.recover(txid)
            elif action == PREPARE:
                keeper.prepare(txid)
            elif action == COMMIT:
                keeper.commit(txid)
            else:
                log.warning("bolt %s task %d ignored a checkpoint with unknown action %.40r",
                            self.component_id, ts.task, action)
                return False
        except StateProviderError as exc:
            self._provider_failed(ts, action, txid, exc)
            return False
        except NotRecovered as exc:   # the spout recovers every task next
            log.debug("bolt %s task %d: %s of checkpoint %d refused: %s", self.component_id,
                      ts.task, action, txid, exc)
            return False
        except Exception as exc:      # init_state raised: reported, recovery is retried
            self.report_error(ts, exc)
            return False
        if action == COMMIT and ts.task in self.provider_down:
            # at a commit, not at the first call that works: a recovery between prepares
            # that fail (a backend that reads but does not write) is no end of the outage
            self.provider_down.discard(ts.task)
            log.info("bolt %s task %d: the state provider answers again; checkpoint %d "
                     "committed", self.component_id, ts.task, txid)
        return True

    def _provider_failed(self, ts: TaskState, action: str, txid: int,
                         exc: StateProviderError) -> None:
        """One error line per task when the provider starts failing, then debug until the
        task commits a checkpoint again."""
        if ts.task in self.provider_down:
            log.debug("bolt %s task %d: %s of checkpoint %d failed: %s", self.component_id,
                      ts.task, action, txid, exc)
            return
        self.provider_down.add(ts.task)
        log.error("bolt %s task %d: %s of checkpoint %d failed (%s); the checkpoint is not "
                  "committed, inputs wait unacked or are replayed, and it is retried",
                  self.component_id, ts.task, action, txid, exc)

    def stop(self) -> None:
        super().stop()
        if self.provider is not None:
            try:
                self.provider.close()
            except Exception:
                log.exception("closing the state provider of %s failed", self.component_id)

    def queued(self) -> int:
        """Tuples held by the barriers of this executor's tasks."""
        return sum(len(a.held) for a in self.aligners.values())


def _stateful_tick(keeper: StateKeeper, process_tick: Callable[[Tuple], None],
                   tup: Tuple) -> None:
    """A stateful task's ``process_tick`` as the executor's tick call
    (``BoltExecutor._tick``, which counts it as a system tuple and reports what it raises)
    reaches it: set on the instance by :meth:`CheckpointedBoltExecutor.install`, so every
    path a tick takes goes through it, and no data tuple pays for it.

    * While the task has no state to give it (``keeper.ready`` False: before the first
      ``init_state``, or after a failure until the rollback reloads the committed state) or
      its state is spoiled (an input failed earlier in this pass), the tick is dropped: it
      would see a state that is missing or about to be discarded, and emit from it. Dropped,
      not held: ticks are periodic, so the next one after ``init_state`` comes within the
      tick period and sees the recovered state; a held one would be stale by then, and
      calling it from the rollback would run user code inside a checkpoint.
    * What ``process_tick`` raises spoils the state, as an exception in ``process`` does:
      the changes since the last prepare are dropped and their inputs replayed (else a
      half-made change would commit). Re-raised for the executor to report."""
    if not keeper.ready or keeper.spoiled:
        log.debug("stateful task %s: tick dropped, its state is not recovered yet",
                  keeper.namespace)
        return
    try:
        process_tick(tup)
    except Exception:
        keeper.spoil()      # the pass's end drops the state's changes
        raise
