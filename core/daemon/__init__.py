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
    ``nimbus_slot_failures``
                           :class:`SlotFailures`: slots whose workers failed to start or
                           stopped beating, left out of scheduling for a while; says so once.
    ``nimbus_slot_clashes``
                           :class:`SlotClashes`: one host:port offered by two supervisors, kept
                           for one of them; says so once.
    ``nimbus_topologies``  :class:`TopologyLifecycle`: submit / kill / activate / deactivate /
                           rebalance, finishing kills and rebalances, orphan clean-up; owns the
                           lock serializing writes and scheduling.
    ``nimbus_info``        :class:`NimbusReads`: cluster and topology summaries, topology info,
                           package files (answered by any nimbus).
    ``nimbus_access``      :class:`TopologyAccess`: who may see and change which topology
                           (owners, ``nimbus.admins``; API.md section 14).
    ``nimbus_service``     :class:`NimbusService`: the gRPC API over the lifecycle and the reads,
                           asking the access part; callers authenticated by
                           :mod:`squall.security.grpc_auth`.
    ``nimbus_client``      :class:`NimbusClient`: finds the leader among ``nimbus.seeds``; used
                           by the CLI, supervisors, the UI and a standby nimbus.
    ``validate``           loads a submitted package in a throw-away process.

Supervisor (``squall supervisor``)
    ``supervisor``         :class:`Supervisor`: registration, syncing assignments, launching,
                           watching and adopting workers.
    ``supervisor_local``   its local bookkeeping: ``localstate``, worker processes, heartbeats.
    ``supervisor_local_dir``
                           its hold on ``storm.local.dir``: the lock, the conf its workers
                           read (both taken again when the dir was deleted), the probe and the
                           free room it waits for before it rejoins.
    ``supervisor_backoff`` how soon a slot whose workers keep failing is relaunched.
    ``supervisor_endings`` how a worker it stopped or found dead ended: its log line, the
                           ``__worker`` error that makes a crash loop the status reason.
    ``worker_main``        the worker process a supervisor launches.
    ``logviewer``          :class:`LogViewer`: serves the workers' (and daemons') log files over
                           HTTP; the port is published as ``logviewer_port``.

Logs
    ``log_files``          where every process logs (``storm.local.dir/logs``), rotation, the
                           metrics and events logs kept apart, clean-up after a kill.
    ``log_levels``         run-time log levels (``squall set-log-level``): the ``/logconfigs``
                           record nimbus merges and workers apply and revert.

Shared and tools
    ``packaging``          code packages: what ``squall submit`` ships, stores, extracts, loads.
    ``package_imports``    what squall imports before a package goes on ``sys.path``, and the
                           package modules named like squall's libraries.
    ``topology_flow``      components in the order tuples flow through them (``squall monitor``).
    ``addresses``          host names and their addresses: a supervisor's advertised host
                           checked at start, hosts nimbus compares, why a daemon cannot listen.
    ``dev_zookeeper``      a single-node ZooKeeper for development and tests.
    ``stop_signals``       SIGTERM and SIGHUP (unless ``nohup``) stop the foreground commands
                           (the daemons, ``dev-zookeeper``, ``squall local``) in order.
    ``_proto``             the generated gRPC messages and stubs.
"""
