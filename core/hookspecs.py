"""pluggy hook specifications: every hook squall calls, grouped by phase.

Plugins implement them with ``@squall.hookimpl`` in a module registered in the
``squall.plugins`` entry-point group (squall's own built-in hooks are loaded the same way).
Implementations are checked against these specs when their module registers. A hook module
imports nothing heavy (no zmq, pynng, grpc or pyspark): every process that reads its
configuration loads every hook module. No hook is called per tuple: they run at start-up, on
submit, and on lifecycle events, on the thread that triggers them.

Where each hook is called:

==============================  ======================================================
``squall_add_defaults``         whenever defaults are built (``squall.config.defaults``:
                                loading, validating, printing a configuration)
``squall_add_config_types``     with it, when a configuration is validated
``squall_add_worker_shared_keys``  when a supervisor starts (what it advertises to nimbus)
``squall_validate_config``      when a configuration is validated
                                (``squall.config.validate``: the command line,
                                ``squall submit``, nimbus on submit, ``LocalCluster``)
``squall_configure``            once per process that runs topologies, when its
                                configuration is final: ``squall nimbus``,
                                ``squall supervisor``, each worker process, every
                                ``LocalCluster`` (so ``squall local`` and ``squall demo``)
``squall_validate_topology``    on submit: ``LocalCluster.submit_topology``; in a
                                cluster, nimbus's validation subprocess
``squall_topology_submitted``   after the topology is accepted (LocalCluster, nimbus)
``squall_topology_killed``      after the topology is removed (LocalCluster, nimbus)
``squall_worker_start/stop``    for each worker, in its process or its LocalCluster
``squall_worker_stopping``      with it, while the worker shuts down (see the spec)
``squall_add_commands``         when the ``squall`` command line is built
==============================  ======================================================
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pluggy

__all__ = [
    "hookimpl", "hookspec", "squall_add_commands", "squall_add_config_types",
    "squall_add_defaults", "squall_add_worker_shared_keys", "squall_configure",
    "squall_topology_killed", "squall_topology_submitted", "squall_validate_config",
    "squall_validate_topology", "squall_worker_start",
    "squall_worker_stop", "squall_worker_stopping",
]

hookspec = pluggy.HookspecMarker("squall")
hookimpl = pluggy.HookimplMarker("squall")


# -- configuration -----------------------------------------------------------------------------
@hookspec
def squall_add_defaults() -> Mapping[str, Any] | None:
    """Return the default config keys a plugin owns (merged under the user's config).

    Keys returned here become known keys: type-checked and never warned about. A key's type
    is its default's (``int`` accepts only ints, ``float`` ints and floats, ``str``, ``bool``,
    ``list``, ``dict``); a key whose default is null accepts any value unless the plugin
    declares its types with :func:`squall_add_config_types`. A plugin cannot change a key
    squall itself defines (ignored with a warning). ``squall config --sample`` prints the keys
    in a ``### Plugin NAME`` section. Called often (every time defaults are built): return a
    constant, computed without I/O. Raising is reported as PluginLoadError naming the plugin.
    """


@hookspec
def squall_add_config_types() -> Mapping[str, type | tuple[type, ...]] | None:
    """Return the accepted types of keys this plugin adds with a null default.

    ``{"squall.transport.x.tls.cert.file": str}``: the key then accepts a str or null, and
    anything else is a ConfigError naming the key, exactly as for squall's own nullable keys.
    A value is a type or a tuple of types. Naming a key no ``squall_add_defaults`` returns, or
    one with a non-null default (its type is its default's), is a ConfigError; a key squall
    itself defines is ignored with a warning.
    """


@hookspec
def squall_add_worker_shared_keys() -> Iterable[str] | None:
    """Return the config keys this plugin owns whose value every worker of one topology must
    share, or they cannot exchange tuples (a transport's security switch).

    A supervisor advertises its value of each (its conf's, else the default) when it starts,
    and nimbus reports supervisors hosting one topology's workers that advertise different
    values, unless the topology's own conf sets the key (one ERROR line and the topology's
    status reason). A key under ``squall.transport.NAME.`` is compared only among the
    supervisors whose workers run transport ``NAME``. Return a constant, without I/O; a value
    that is not a bool, number or str is not compared.
    """


@hookspec
def squall_validate_config(conf: Mapping[str, Any]) -> None:
    """Raise :class:`squall.ConfigError` naming a key this plugin owns whose value it cannot
    use, and the values it can (``squall.config.check_range`` words a range).

    Called by ``squall.config.validate`` after every known key's type was checked, so a
    value is missing, null or of the key's type; ``conf`` may be partial (a topology's own
    keys), so check only the keys present. Check the value, not whether the plugin is chosen:
    a type is checked the same way. A refusal stops what validates: the command line before
    it contacts a cluster, ``squall submit``, nimbus's acceptance of a topology,
    ``LocalCluster``. Do not change ``conf``; no I/O.
    """


@hookspec
def squall_configure(conf: dict[str, Any]) -> None:
    """Inspect or adjust (in place) the final configuration of a process about to start
    running topologies: ``squall nimbus`` and ``squall supervisor`` (called before the daemon
    is built), and every ``LocalCluster`` (from its constructor, before any topology is
    submitted; so ``squall local`` and ``squall demo`` too). A plugin that changes keys keeps
    them valid. Raise a :class:`squall.SquallError` to refuse to start."""


# -- topologies --------------------------------------------------------------------------------
@hookspec
def squall_validate_topology(topology: Any, conf: dict[str, Any]) -> None:
    """Raise :class:`squall.TopologyError` to reject a topology at submit time.

    Called by ``LocalCluster.submit_topology`` before anything starts, and in a cluster by the
    subprocess in which nimbus loads a submitted package (``conf`` is the topology's merged
    conf; the refusal's one-line message reaches the submitter)."""


@hookspec
def squall_topology_submitted(name: str, topology_id: str, conf: dict[str, Any]) -> None:
    """A topology was accepted: by a LocalCluster once its workers started, by nimbus once it
    is stored (before it is scheduled)."""


@hookspec
def squall_topology_killed(name: str, topology_id: str) -> None:
    """A topology was killed and removed: by a LocalCluster once its executors stopped, by
    nimbus when the kill's wait ended and the topology left the cluster state."""


# -- workers -----------------------------------------------------------------------------------
@hookspec
def squall_worker_start(topology_id: str, port: int, conf: dict[str, Any]) -> None:
    """A worker built its executors and is about to start its loop. What it raises stops
    the worker's start (its components cleaned up): a SquallError as it is, anything else as
    a PluginLoadError naming the plugin."""


@hookspec
def squall_worker_stopping(topology_id: str, port: int) -> None:
    """A worker is shutting down: its loop has stopped (no tuple reaches a component any
    more), and the threads of its components are about to be waited for, each up to the
    shutdown's timeout when it is still in a call. End here what can hold a component in a
    call (a subprocess it waits on, a connection), so that the wait is short and the
    components' cleanup runs."""


@hookspec
def squall_worker_stop(topology_id: str, port: int) -> None:
    """A worker is shutting down (after its executors stopped)."""


# -- command line ------------------------------------------------------------------------------
@hookspec
def squall_add_commands(subparsers: Any) -> None:
    """Add ``squall`` subcommands: ``subparsers.add_parser(...)`` and set ``func=`` on it;
    ``func(args, conf) -> int`` is called with the parsed args and the merged config."""
