"""The cluster subcommands of ``squall``: daemons and topology management.

``nimbus``, ``supervisor``, ``ui``, ``drpc``, ``dev-zookeeper`` run in the foreground until SIGTERM,
SIGHUP (unless ignored: ``nohup``) or Ctrl-C;
``submit``, ``list``, ``kill``, ``activate``, ``deactivate``, ``rebalance`` talk to the nimbus
leader (found through ``nimbus.seeds``). Each handler is ``func(args, conf) -> int``; user
mistakes raise :class:`~squall.errors.SquallError` subclasses (printed as one line by
``squall.cli.main``).
"""
from __future__ import annotations

import argparse
import logging
import sys
from typing import Any, Protocol

from squall.cli.argtypes import port_number, wait_seconds
from squall.daemon.stop_signals import on_stop_signals
from squall.errors import ConfigError, SquallError

log = logging.getLogger(__name__)


#: what every cluster command needs (the ``cluster`` extra): ZooKeeper and the nimbus API
CLUSTER_MODULES = ("kazoo", "grpc")
#: what ``squall ui`` needs besides (the ``cluster`` extra too): its web server
UI_MODULES = (*CLUSTER_MODULES, "starlette", "uvicorn")


def require_cluster_extra(modules: tuple[str, ...] = CLUSTER_MODULES) -> None:
    """Raise ModuleNotFoundError naming the first of ``modules`` (of the ``cluster`` extra)
    that is missing (before a command does anything, so a failing command leaves nothing
    behind)."""
    import importlib.util
    for module in modules:
        if importlib.util.find_spec(module) is None:
            raise ModuleNotFoundError(f"No module named {module!r}", name=module)


def cluster_command(func: Any, modules: tuple[str, ...] = CLUSTER_MODULES) -> Any:
    """``func`` preceded by :func:`require_cluster_extra` of ``modules``."""
    def run(args: argparse.Namespace, conf: dict[str, Any]) -> int:
        require_cluster_extra(modules)
        return int(func(args, conf))
    run.__doc__ = func.__doc__
    return run


def register(subparsers: Any) -> None:
    """Add the cluster subcommands to ``squall``'s subparsers; each checks first that the
    ``cluster`` extra is installed (``dev-zookeeper`` needs only Java)."""
    p = subparsers.add_parser("nimbus", help="run a nimbus (the cluster's master)")
    p.set_defaults(func=cluster_command(cmd_nimbus))

    p = subparsers.add_parser("supervisor", help="run a supervisor (launches workers)")
    p.set_defaults(func=cluster_command(cmd_supervisor))

    p = subparsers.add_parser("ui", help="serve a web page and a JSON API about the cluster")
    p.add_argument("--host", default=None, help="address to bind (default: ui.host)")
    p.add_argument("--port", type=port_number, default=None, help="port (default: ui.port)")
    p.set_defaults(func=cluster_command(cmd_ui, UI_MODULES))

    p = subparsers.add_parser("drpc", help="run a DRPC server (gRPC drpc.port, HTTP "
                              "drpc.http.port)")
    p.set_defaults(func=cmd_drpc)

    p = subparsers.add_parser("dev-zookeeper", help="run a single-node ZooKeeper for development")
    p.add_argument("--port", type=port_number, default=2181,
                   help="client port (0: a free one)")
    p.add_argument("--dir", default=None, help="data directory")
    p.add_argument("--host", default="127.0.0.1", help="address to bind")
    p.set_defaults(func=cmd_dev_zookeeper)

    p = subparsers.add_parser("submit", help="send a topology to the cluster")
    p.add_argument("target", help="path/to/file.py:attr or package.module:attr")
    p.add_argument("--name", default=None, help="topology name (default: the attribute)")
    p.set_defaults(func=cluster_command(cmd_submit))

    p = subparsers.add_parser("list", help="list the cluster's topologies")
    p.set_defaults(func=cluster_command(cmd_list))

    p = subparsers.add_parser("kill", help="kill a topology")
    p.add_argument("name", help="the topology's name")
    p.add_argument("-w", "--wait", type=wait_seconds, default=None, metavar="S",
                   help="seconds between deactivation and shutdown, at most 86400 "
                        "(default: topology.message.timeout.secs)")
    p.set_defaults(func=cluster_command(cmd_kill))

    for name, helptext in (("activate", "activate a topology's spouts"),
                           ("deactivate", "deactivate a topology's spouts")):
        p = subparsers.add_parser(name, help=helptext)
        p.add_argument("name", help="the topology's name")
        p.set_defaults(func=cluster_command(cmd_activate if name == "activate"
                                             else cmd_deactivate))

    p = subparsers.add_parser("rebalance", help="change a topology's workers or executors")
    p.add_argument("name", help="the topology's name")
    p.add_argument("-n", "--workers", type=int, default=None, metavar="N",
                   help="run on N workers (at most the slots it can use)")
    p.add_argument("-e", "--executors", nargs="+", action="extend", default=[],
                   metavar="COMPONENT=N",
                   help="give COMPONENT N executors (at most its number of tasks); repeatable")
    p.add_argument("-w", "--wait", type=wait_seconds, default=None, metavar="S",
                   help="seconds between deactivation and the move, at most 86400 "
                        "(default: topology.message.timeout.secs)")
    p.set_defaults(func=cluster_command(cmd_rebalance))

    from squall.cli import logs, monitor
    logs.register(subparsers)
    monitor.register(subparsers)


class Daemon(Protocol):
    """What ``squall nimbus|supervisor|ui`` run: ``start()``, ``wait()`` until
    ``request_stop()`` (called from the SIGTERM / SIGHUP handler, so it only sets a flag),
    ``stop()``. One that stops by itself may say why in a ``failure`` attribute: the command
    then ends with that line (exit code 2)."""

    def start(self) -> Any: ...

    def wait(self) -> None: ...

    def request_stop(self) -> None: ...

    def stop(self) -> None: ...


class _StoppedWhileStarting(Exception):
    """SIGTERM or SIGHUP arrived while a daemon was starting."""


def _run_daemon(daemon: Daemon, conf: dict[str, Any], name: str) -> int:
    """Run ``daemon`` until SIGTERM / SIGHUP / Ctrl-C, also logging to ``storm.local.dir/logs/
    <name>.log`` (rotated like worker logs) while it runs."""
    from squall.daemon.log_files import add_daemon_log
    try:
        handler = add_daemon_log(conf, name)
    except OSError as exc:
        raise ConfigError(f"cannot write the {name} log under storm.local.dir: {exc}") from exc

    started = False

    def stop(*_: Any) -> None:
        daemon.request_stop()
        if not started:
            # start() may wait long (an unreachable ZooKeeper, up to its connection
            # timeout): leave it now, as Ctrl-C does
            raise _StoppedWhileStarting
    restore = on_stop_signals(stop)
    try:
        try:
            daemon.start()
            started = True
        except _StoppedWhileStarting:
            log.info("%s: stopped while starting", name)
            return 0
        try:
            daemon.wait()
        except KeyboardInterrupt:
            pass
    finally:
        restore()
        try:
            daemon.stop()
        finally:
            logging.getLogger().removeHandler(handler)
            handler.close()
    failure = getattr(daemon, "failure", "")    # a daemon that stopped by itself says why
    if failure:
        raise SquallError(failure)
    return 0


def cmd_nimbus(args: argparse.Namespace, conf: dict[str, Any]) -> int:
    from squall.daemon.nimbus import Nimbus
    from squall.daemon.validate import check_state_store
    from squall.plugin_manager import configure
    check_state_store(conf, "nimbus")
    return _run_daemon(Nimbus(configure(conf)), conf, "nimbus")


def cmd_supervisor(args: argparse.Namespace, conf: dict[str, Any]) -> int:
    from squall.daemon.supervisor import Supervisor
    from squall.daemon.validate import check_state_store
    from squall.plugin_manager import configure
    check_state_store(conf, "supervisor")
    return _run_daemon(Supervisor(configure(conf)), conf, "supervisor")


def cmd_ui(args: argparse.Namespace, conf: dict[str, Any]) -> int:
    from squall.daemon.validate import check_state_store
    from squall.ui import UiServer
    check_state_store(conf, "ui")
    return _run_daemon(UiServer(conf, host=args.host, port=args.port), conf, "ui")


def cmd_drpc(args: argparse.Namespace, conf: dict[str, Any]) -> int:
    from squall.daemon.validate import check_state_store
    from squall.drpc.server import DRPCServer
    check_state_store(conf, "drpc")
    return _run_daemon(DRPCServer(conf), conf, "drpc")


def cmd_dev_zookeeper(args: argparse.Namespace, conf: dict[str, Any]) -> int:
    import os

    from squall.daemon.dev_zookeeper import main
    data = args.dir or os.path.join(str(conf.get("storm.local.dir") or "squall-local"),
                                    "dev-zookeeper")
    return main(["--port", str(args.port), "--dir", data, "--host", args.host])


def _client(conf: dict[str, Any]) -> Any:
    from squall.daemon.nimbus_client import NimbusClient
    return NimbusClient(conf)


def submitted_conf(conf: dict[str, Any], topology_conf: dict[str, Any]) -> dict[str, Any]:
    """What ``submit`` sends: keys the user's files set (differing from the defaults) <
    the topology's conf < ``-c`` overrides (which stay recorded for components)."""
    from squall import config
    defaults = config.defaults()
    missing = object()
    out = {k: v for k, v in conf.items() if defaults.get(k, missing) != v}
    out.update(topology_conf)
    overrides = conf.get(config.OVERRIDES_KEY) or {}
    out.update(overrides)
    out[config.OVERRIDES_KEY] = dict(overrides)
    return out


def cmd_submit(args: argparse.Namespace, conf: dict[str, Any]) -> int:
    from squall.daemon.packaging import prepare_submission, zip_code_dir
    from squall import config
    sub = prepare_submission(args.target, conf)
    # the topology's own keys, here where the user sees the warnings (nimbus checks again)
    config.validate(sub.topology.conf)
    config.validate_components(sub.topology.components.values())
    from squall.daemon.nimbus_topologies import machine_keys
    given = machine_keys({**sub.topology.conf, **(conf.get(config.OVERRIDES_KEY) or {})})
    if given:
        print(f"squall: warning: {', '.join(given)}: the machines' keys, read from each "
              "daemon's own config (nimbus, supervisor, ui, drpc; a worker's log level: "
              "squall set-log-level); a submit drops them from the topology", file=sys.stderr)
    _warn_of_memory_state(sub.topology, submitted_conf(conf, sub.topology.conf))
    # an empty --name is refused by nimbus with the rule a name follows, not replaced
    name = sub.default_name if args.name is None else args.name
    code = zip_code_dir(sub.code_dir, sub.prefix, sub.extra_dirs)
    client = _client(conf)
    try:
        tid = client.submit_topology(name, submitted_conf(conf, sub.topology.conf),
                                     sub.topology.to_json(), code)
    finally:
        client.close()
    print(f"submitted topology {name!r} as {tid}")
    return 0


def _warn_of_memory_state(topology: Any, sent: dict[str, Any]) -> None:
    """Say that stateful bolts on the ``memory`` state provider (the default, made for local
    mode) lose their state whenever a worker of theirs restarts on a cluster."""
    from squall import config
    from squall.stateful.wiring import stateful_components
    provider = sent.get("topology.state.provider",
                        config.defaults().get("topology.state.provider"))
    stateful = stateful_components(topology)
    if stateful and provider == "memory":
        print(f"squall: warning: stateful bolt(s) {', '.join(stateful)} keep their state in "
              "their worker's memory (topology.state.provider: memory): a worker that "
              "restarts (a crash, a rebalance) starts them empty; on a cluster choose a "
              "backend that outlives workers, such as redis", file=sys.stderr)


def cmd_list(args: argparse.Namespace, conf: dict[str, Any]) -> int:
    client = _client(conf)
    try:
        info = client.cluster_info()
    finally:
        client.close()
    if not info.topologies:
        print("no topologies running", file=sys.stderr)
        return 0
    rows = [[t.name, t.status, str(t.num_workers), str(t.num_executors), str(t.num_tasks),
             uptime_text(int(t.uptime_secs))] for t in info.topologies]
    reasons = [t.status_reason for t in info.topologies]
    head = ["NAME", "STATUS", "WORKERS", "EXECUTORS", "TASKS", "UPTIME"]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for row, reason in zip([head, *rows], ["", *reasons], strict=True):
        line = "  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(row, widths, strict=True))).rstrip()
        print(line + (f"  ({reason})" if reason else ""))
    return 0


def uptime_text(secs: int) -> str:
    """``93784`` -> ``"1d 2h 3m"``, ``75`` -> ``"1m 15s"``."""
    days, rest = divmod(max(0, secs), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h {minutes}m"
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m {seconds}s" if minutes else f"{seconds}s"


def _call_nimbus(conf: dict[str, Any], call: Any, done: str) -> int:
    """Run ``call(client)`` against the nimbus leader, then print ``done``."""
    client = _client(conf)
    try:
        call(client)
    finally:
        client.close()
    print(done)
    return 0


def cmd_kill(args: argparse.Namespace, conf: dict[str, Any]) -> int:
    return _call_nimbus(conf, lambda c: c.kill_topology(args.name, args.wait),
                        f"killing topology {args.name!r}")


def cmd_activate(args: argparse.Namespace, conf: dict[str, Any]) -> int:
    return _call_nimbus(conf, lambda c: c.activate(args.name),
                        f"activated topology {args.name!r}")


def cmd_deactivate(args: argparse.Namespace, conf: dict[str, Any]) -> int:
    return _call_nimbus(conf, lambda c: c.deactivate(args.name),
                        f"deactivated topology {args.name!r}")


def cmd_rebalance(args: argparse.Namespace, conf: dict[str, Any]) -> int:
    from squall.daemon.nimbus_client import MAX_REBALANCE_COUNT, parse_executors
    from squall.daemon.topology_requests import rebalance_caps
    executors = parse_executors(args.executors)
    if args.workers is not None and not 1 <= args.workers <= MAX_REBALANCE_COUNT:
        raise ConfigError(f"--workers must be from 1 to {MAX_REBALANCE_COUNT}, "
                          f"got {args.workers}")
    client = _client(conf)
    try:
        notes = rebalance_caps(client.topology_info(args.name), client.cluster_info(),
                               args.workers, executors)
        client.rebalance(args.name, args.wait, args.workers, executors)
    finally:
        client.close()
    print(f"rebalancing topology {args.name!r}")
    for note in notes:
        print(f"  note: {note}")
    return 0


__all__ = ["register", "submitted_conf"]
