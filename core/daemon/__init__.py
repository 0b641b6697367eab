"""squall's cluster daemons: nimbus, supervisor, worker process, UI (DESIGN.md "Processes").

Module map (a newcomer's first page). Every import points down this list or sideways, never up
to :mod:`squall.cli` (which starts these daemons), and nothing imports :class:`Nimbus` back.

Nimbus (``squall nimbus``)
    ``nimbus``             :class:`Nimbus`: assembles the parts below, binds the gRPC server,
                           registers ``/nimbuses``, runs the election and monitor threads.
    ``nimbus_leader``      :class:`Leadership` (the ``/leader-lock`` candidacy, who leads) and
                           :class:`NotLeaderError`.
    ``nimbus_code``        :class:`CodeStore`: packages under ``nimbus/stormdist/``, the inbox,
                           the topology counter, downloads a standby takes from the leader.
    ``nimbus_schedule``    :class:`Scheduling`: worker-beat liveness, the configured scheduler,
                           ``/assignments`` and scheduling statuses; rebalance checks.
    ``nimbus_topologies``  :class:`TopologyLifecycle`: submit / kill / activate / deactivate /
                           rebalance, finishing kills and rebalances, orphan clean-up; owns the
                           lock serializing writes and scheduling.
    ``nimbus_info``        :class:`NimbusReads`: cluster and topology summaries, topology info,
                           package files (answered by any nimbus).
    ``nimbus_service``     :class:`NimbusService`: the gRPC API over the lifecycle and the reads.
    ``nimbus_client``      :class:`NimbusClient`: finds the leader among ``nimbus.seeds``; used
                           by the CLI, supervisors, the UI and a standby nimbus.
    ``validate``           loads a submitted package in a throw-away process.

Supervisor (``squall supervisor``)
    ``supervisor``         :class:`Supervisor`: registration, syncing assignments, launching,
                           watching and adopting workers.
    ``supervisor_local``   its local bookkeeping: ``localstate``, worker processes, heartbeats.
    ``worker_main``        the worker process a supervisor launches.

Shared and tools
    ``packaging``          code packages: what ``squall submit`` ships, stores, extracts, loads.
    ``dev_zookeeper``      a single-node ZooKeeper for development and tests.
    ``_proto``             the generated gRPC messages and stubs.
"""
