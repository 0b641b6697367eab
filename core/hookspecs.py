"""pluggy hook specifications: every hook squall calls, grouped by phase.

Plugins implement them with ``@squall.hookimpl`` in a module registered in the
``squall.plugins`` entry-point group (squall's own built-in hooks are loaded the same way).
No hook is called per tuple: they run at start-up, on submit, and on lifecycle events.
"""
from __future__ import annotations

from typing import Any

import pluggy

hookspec = pluggy.HookspecMarker("squall")
hookimpl = pluggy.HookimplMarker("squall")


# -- configuration -----------------------------------------------------------------------------
@hookspec
def squall_add_defaults() -> dict[str, Any] | None:
    """Return default config keys a plugin owns (merged under the user's config).

    Keys returned here become known keys: type-checked and never warned about."""


@hookspec
def squall_configure(conf: dict[str, Any]) -> None:
    """Inspect or adjust the merged configuration of a process before it starts."""


# -- topologies --------------------------------------------------------------------------------
@hookspec
def squall_validate_topology(topology: Any, conf: dict[str, Any]) -> None:
    """Raise :class:`squall.TopologyError` to reject a topology at submit time."""


@hookspec
def squall_topology_submitted(name: str, topology_id: str, conf: dict[str, Any]) -> None:
    """A topology was accepted (by nimbus or a LocalCluster)."""


@hookspec
def squall_topology_killed(name: str, topology_id: str) -> None:
    """A topology was killed and its executors stopped."""


# -- workers -----------------------------------------------------------------------------------
@hookspec
def squall_worker_start(topology_id: str, port: int, conf: dict[str, Any]) -> None:
    """A worker built its executors and is about to start its loop."""


@hookspec
def squall_worker_stop(topology_id: str, port: int) -> None:
    """A worker is shutting down (after its executors stopped)."""


# -- command line ------------------------------------------------------------------------------
@hookspec
def squall_add_commands(subparsers: Any) -> None:
    """Add ``squall`` subcommands: ``subparsers.add_parser(...)`` and set ``func=`` on it;
    ``func(args, conf) -> int`` is called with the parsed args and the merged config."""
