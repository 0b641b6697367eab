"""Validate a submitted topology package in a throw-away process (nimbus runs it).

``python -m squall.daemon.validate DIR`` loads ``DIR``'s conf, topology and code the way a worker
will (code dir on ``sys.path``, every component class imported, the serializer built with its
``topology.serializer.register`` types), refuses a transport that works in one process only
(:func:`check_transport`), imports a stateful topology's state provider
(:func:`check_state_provider`), checks each class is a component of the right kind, checks
each component's resources (``set_resources`` values and
the ``topology.component.*`` defaults), runs the ``squall_validate_topology`` hooks, and exits 0. On a
problem it prints one line ``squall-validate: <message>`` on stderr and exits 1. A user's bad code
(missing module, syntax error, a module raising at import) can therefore never affect nimbus.
Nimbus's side is :func:`check_in_subprocess`. The daemons' side of the same rule for the state
store is :func:`check_state_store`, which they run when they start.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import traceback
from typing import Any

PREFIX = "squall-validate: "
#: how long loading a submitted topology may take
TIMEOUT_SECS = 120
#: how much of the end of the child's stderr is read for its complaint
STDERR_TAIL_BYTES = 64 * 1024


def check_in_subprocess(directory: str, timeout: float = TIMEOUT_SECS) -> None:
    """Run this module on ``directory`` in a child process (cwd ``directory``); raise
    TopologyError with its one-line complaint, or saying it took more than ``timeout`` s.
    Blocks the calling thread while the child runs.

    The child runs in a session of its own and writes to a file, not a pipe: a process the
    topology's code starts at import (a helper, a sidecar) neither holds the answer back
    until it exits nor outlives the check, as the child's whole process group is killed
    once it exited or ran out of time."""
    from squall.errors import TopologyError
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-m", "squall.daemon.validate", directory],
                                cwd=directory, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)
        try:
            code: int | None = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            _kill_group(proc.pid)
            proc.wait()
        if code is None:
            raise TopologyError(f"loading the topology took more than {timeout:g} s")
        if code == 0:
            return
        size = err.seek(0, os.SEEK_END)
        err.seek(max(0, size - STDERR_TAIL_BYTES))
        stderr = err.read().decode("utf-8", "replace")
    lines = [ln for ln in stderr.splitlines() if ln.startswith(PREFIX)]
    msg = lines[-1][len(PREFIX):] if lines else (stderr.strip().splitlines() or
                                                ["the topology could not be loaded"])[-1]
    raise TopologyError(msg)


def _kill_group(pgid: int) -> None:
    """SIGKILL what is left of the validating child's process group (it leads it)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass            # nobody left in it


def check(directory: str) -> None:
    """Raise TopologyError describing the first problem of the package in ``directory``."""
    from squall.api.component import Bolt, Spout
    from squall.daemon.packaging import load_topology
    from squall.errors import TopologyError

    conf, topology = load_topology(directory)
    check_transport(conf)
    check_state_provider(conf, topology)
    check_resources(conf, topology)
    for cid, spec in sorted(topology.components.items()):
        if spec.kind == "acker" or cid.startswith("__"):
            continue
        base = {"spout": Spout, "bolt": Bolt}.get(spec.kind)
        if base is None:
            raise TopologyError(f"component {cid!r} has an unknown kind {spec.kind!r}")
        if not isinstance(spec.cls, type) or not issubclass(spec.cls, base):
            raise TopologyError(f"component {cid!r}: {spec.ref} is not a {base.__name__} "
                                f"subclass")
    from squall import config, drivers
    # the serializer imports its topology.serializer.register types here, as a worker will
    drivers.driver("serializer", {**config.defaults(), **conf})
    from squall.plugin_manager import validate_topology
    validate_topology(topology, conf)


def check_transport(conf: Any) -> None:
    """Raise TopologyError when ``conf`` chooses a transport whose connections never leave
    one process (its class's ``in_process``, as the local one's): a cluster's workers are
    separate processes, so the topology would show ``active`` and process nothing. The
    transport's own attribute decides, so a third-party in-process transport is refused the
    same way. A conf choosing none runs on each supervisor's transport, not checked here:
    nimbus compares what the supervisors advertise once workers are placed
    (:mod:`~squall.daemon.nimbus_worker_defaults`).
    (LocalCluster refuses the opposite.) Imports the chosen transport, as a worker will."""
    from squall import config, drivers
    from squall.errors import TopologyError
    name = conf.get("squall.transport")
    if name is None or not drivers.driver_class("transport", conf).in_process:
        return
    raise TopologyError(
        f"squall.transport {name!r} only connects workers inside one process and a "
        f"cluster runs each worker in a process of its own, so nothing would be processed: "
        f"choose a transport between processes ({config.defaults()['squall.transport']!r} "
        f"is the default), or run the topology with LocalCluster (squall local)")


def check_state_provider(conf: Any, topology: Any) -> None:
    """Import the class of the state provider ``conf`` chooses (``topology.state.provider``)
    when the topology has stateful bolts, as its workers will, without connecting to it:
    PluginLoadError naming the extra to install when its library is missing (``redis``
    without ``squall[redis]``), instead of a topology shown ``active`` whose workers fail to
    start. A conf choosing none runs on each supervisor's, not checked here."""
    from squall import drivers
    from squall.stateful.checkpoint import CHECKPOINT
    if CHECKPOINT in topology.components and conf.get("topology.state.provider") is not None:
        drivers.driver_class("state_provider", conf)


def check_state_store(conf: Any, daemon: str) -> None:
    """Raise ConfigError when ``conf`` chooses a state store whose tree never leaves one
    process (its class's ``in_process``, as the memory one's): ``squall <daemon>`` runs in a
    process of its own, so nimbus, the supervisors and their workers would each keep a tree
    of their own and never see each other (a topology pending for ever). The store's own
    attribute decides, so a third-party in-process store is refused the same way. Called by
    ``squall nimbus``, ``supervisor``, ``ui`` and ``drpc`` when they start; imports the
    store's class, not its client library."""
    from squall import config, drivers
    from squall.errors import ConfigError
    name = conf.get("squall.state")
    if name is None or not drivers.driver_class("state", conf).in_process:
        return
    raise ConfigError(
        f"squall.state {name!r} keeps the cluster's state inside one process and `squall "
        f"{daemon}` runs in a process of its own, so the cluster's daemons and workers would "
        f"never see each other: choose a store shared between processes "
        f"({config.defaults()['squall.state']!r} is the default), or run topologies with "
        f"LocalCluster (squall local)")


def check_resources(conf: Any, topology: Any) -> None:
    """Raise TopologyError naming the first component whose ``set_resources`` values (or the
    ``topology.component.*`` keys of its config or the topology conf standing in for them) no
    scheduler could use."""
    from squall.errors import ConfigError, TopologyError
    from squall.scheduling.resources import check_request, component_conf, component_resources
    for cid, spec in sorted(topology.components.items()):
        asked = dict(getattr(spec, "resources", None) or {})
        try:
            check_request(asked)
            component_resources(component_conf(conf, getattr(spec, "config", None)), **asked)
        except ConfigError as exc:
            raise TopologyError(f"component {cid!r}: {exc}") from None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(PREFIX + "usage: python -m squall.daemon.validate DIR", file=sys.stderr)
        return 2
    from squall.errors import SquallError
    try:
        check(args[0])
    except SquallError as exc:
        print(PREFIX + str(exc).replace("\n", " "), file=sys.stderr)
        return 1
    except SyntaxError as exc:
        print(PREFIX + f"syntax error in {exc.filename}, line {exc.lineno}: {exc.msg}",
              file=sys.stderr)
        return 1
    except BaseException as exc:   # the user's code may raise anything
        frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
        where = f" ({frame.filename}, line {frame.lineno})" if frame else ""
        print(PREFIX + f"loading the topology raised {type(exc).__name__}: {exc}{where}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
