"""The runtime: what runs a topology's tasks inside one worker process (or one LocalCluster
worker). Read this page first; it follows a tuple from ``emit`` to ``process`` across two
workers, stage by stage.

======================  ===============================  ======================================
stage                   module                           where to start reading
======================  ===============================  ======================================
build a worker          :mod:`.worker`                   ``Worker.build``: tasks, parts, emits
one task's state        :mod:`.task`                     ``TaskState``, ``LocalTasks``
stream descriptors      :mod:`.streams`                  ``Sources``; system stream names
a component's instance  :mod:`.system`                   ``instantiate``; ``add_system_components``
routes and groupings    :mod:`.routing`                  ``Route``, ``make_grouping``
emit (choose a path)    :mod:`.emit`                     ``make_emit``: the decision table
emit (fast paths)       :mod:`.emit.fast`                ``stream_emit``, ``route_many``, ``Hold``
emit (general path)     :mod:`.emit.general`             ``emit_general``
to another worker       :mod:`.wire.outbox`              ``Outbox.send_*``, ``flush``
the wire format         :mod:`.wire.codec`               the entry table; ``encode``, ``*_of``
from another worker     :mod:`.wire.inbox`               ``Inbox._receive``, ``dispatch``
what is let in          :mod:`.wire.codec`, ``.peers``   ``check_entries``; ``PeerGate.admit``
the loop (one pass)     :mod:`.loop`                     ``Loop._run``
run a bolt              :mod:`.executors.bolt`           ``BoltExecutor.run_once``
run a spout             :mod:`.executors.spout`          ``SpoutExecutor.run_once``
run an acker            :mod:`.executors.acker`          ``AckerExecutor.run_once``
components that block   :mod:`.executors.threaded`       ``ComponentThread``, ``ThreadedBolt``
acks, fails, trees      :mod:`.acks`                     ``AckLedger.flush``, ``complete_tree``
backpressure            :mod:`.flow`                     ``Backpressure.check``, ``blocks``
credits                 :mod:`.wire.credits`            ``Grants.grant``, ``Windows.credit``
load-aware groupings    :mod:`.load`                     ``LoadTracker.tick``
ticks, metrics, stats   :mod:`.timers`, :mod:`.stats`    ``Timers.run``, ``fold_stats``
errors of components    :mod:`.errors`                   ``ErrorLog.record``
sampled emits (debug)   :mod:`.event_log`                ``EventSampler.apply``
status, debug handed    :mod:`.latest`                   ``Latest.set``: not waiting, last wins
garbage collector       :mod:`.gc_tuning`                ``apply``
in one process          :mod:`.local_cluster`            ``LocalCluster``
memory-backed state     :mod:`.memory_stores`            ``MemoryStores``
======================  ===============================  ======================================

A tuple's path: a spout's ``next_tuple`` (``SpoutExecutor.run_once``) calls ``emit``, which
:func:`.emit.make_emit` chose for the task; the grouping picks the target task; a target in
this worker gets a :class:`~squall.api.tuple.Tuple` appended to its queue
(``TaskState.queue``), one in another worker gets the values added to the open run of that
task in the outbox of its worker. At the end of the loop's pass (or when a run is full) the
outbox encodes one message per destination task and hands the batch to the transport. The
receiving worker's receive thread queues the messages; its loop's ``Inbox.dispatch`` decodes
each and appends Tuples (or TupleRuns, for a ``lazy_batch`` bolt) to the task's queue; the
``BoltExecutor`` calls ``process``, and the tuple's ack is folded into the ``AckLedger``,
which tells the acker task once per pass; the acker's completion reaches the spout task as
``(root, ok)`` (same worker) or an ack tuple (another worker), and the spout's ``ack`` runs.

Backpressure is per destination task: an executor whose emits may reach a full task (its queue
over the high watermark), or a remote task it has sent all its worker granted, waits until the
task has taken enough; see :mod:`.flow` and :mod:`.wire.credits`.

Everything in a worker runs on its loop thread, except the receive thread (which only queues
what arrives) and the threads of components that asked for one (which hand every call back
to the loop).
"""
