"""The cluster subcommands of ``squall``: daemons and topology management.

``nimbus``, ``supervisor``, ``ui``, ``dev-zookeeper`` run in the foreground until SIGTERM / Ctrl-C;
``submit``, ``list``, ``kill``, ``activate``, ``deactivate``, ``rebalance`` talk to the nimbus
leader (found through ``nimbus.seeds``). Each handler is ``func(args, conf) -> int``; user
mistakes raise :class:`~squall.errors.SquallError` subclasses (printed as one line by
``squall.cli.main``).
"""
from __future__ import annotations

import argparse
import logging
import signal
import sys
from typing import Any, Protocol

from squall.errors import ConfigError

log = logging.getLogger(__name__)


def register(subparsers: Any) -> None:
    """Add the cluster subcommands to ``squall``'s subparsers."""
    p = subparsers.add_parser("nimbus", help="run a nimbus (the cluster's master)")
    p.set_defaults(func=cmd_nimbus)

    p = subparsers.add_parser("supervisor", help="run a supervisor (launches workers)")
    p.set_defaults(func=cmd_supervisor)

    p = subparsers.add_parser("ui", help="serve a web page and a JSON API about the cluster")
    p.add_argument("--host", default=None, help="address to bind (default: ui.host)")
    p.add_argument("--port", type=int, default=None, help="port (default: ui.port)")
    p.set_defaults(func=cmd_ui)

    p = subparsers.add_parser("dev-zookeeper", help="run a single-node ZooKeeper for development")
    p.add_argument("--port", type=int, default=2181, help="client port (0: a free one)")
    p.add_argument("--dir", default=None, help="data directory")
    p.add_argument("--host", default="127.0.0.1", help="address to bind")
    p.set_defaults(func=cmd_dev_zookeeper)

    p = subparsers.add_parser("submit", help="send a topology to the cluster")
    p.add_argument("target", help="path/to/file.py:attr or package.module:attr")
    p.add_argument("--name", default=None, help="topology name (default: the attribute)")
    p.set_defaults(func=cmd_submit)

    p = subparsers.add_parser("list", help="list the cluster's topologies")
    p.set_defaults(func=cmd_list)

    p = subparsers.add_parser("kill", help="kill a topology")
    p.add_argument("name")
    p.add_argument("--wait", type=float, default=None, metavar="S",
                   help="seconds between deactivation and shutdown "
                        "(default: topology.message.timeout.secs)")
    p.set_defaults(func=cmd_kill)

    for name, helptext in (("activate", "activate a topology's spouts"),
                           ("deactivate", "deactivate a topology's spouts")):
        p = subparsers.add_parser(name, help=helptext)
        p.add_argument("name")
        p.set_defaults(func=cmd_activate if name == "activate" else cmd_deactivate)

    p = subparsers.add_parser("rebalance", help="change a topology's workers or executors")
    p.add_argument("name")
    p.add_argument("--workers", type=int, default=None, metavar="N")
    p.add_argument("--executors", nargs="+", default=[], metavar="COMPONENT=N")
    p.add_argument("--wait", type=float, default=None, metavar="S")
    p.set_defaults(func=cmd_rebalance)


class Daemon(Protocol):
    """What ``squall nimbus|supervisor|ui`` run: ``start()``, ``wait()`` until
    ``request_stop()`` (called from the SIGTERM handler, so it only sets a flag), ``stop()``."""

    def start(self) -> Any: ...

    def wait(self) -> None: ...

    def request_stop(self) -> None: ...

    def stop(self) -> None: ...


def _run_daemon(daemon: Daemon) -> int:
    def stop(*_: Any) -> None:
        daemon.request_stop()
    previous = signal.signal(signal.SIGTERM, stop)
    try:
        daemon.start()
        try:
            daemon.wait()
        except KeyboardInterrupt:
            pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        daemon.stop()
    return 0


def cmd_nimbus(args: argparse.Namespace, conf: dict[str, Any]) -> int:
    from squall.daemon.nimbus import Nimbus
    from squall.plugin_manager import configure
    return _run_daemon(Nimbus(configure(conf)))


def cmd_supervisor(args: argparse.Namespace, conf: dict[str, Any]) -> int:
    from squall.daemon.supervisor import Supervisor
    from squall.plugin_manager import configure
    return _run_daemon(Supervisor(configure(conf)))


def cmd_ui(args: argparse.Namespace, conf: dict[str, Any]) -> int:
    from squall.daemon.ui import UiServer
    return _run_daemon(UiServer(conf, host=args.host, port=args.port))


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
    sub = prepare_submission(args.target)
    name = args.name or sub.default_name
    code = zip_code_dir(sub.code_dir, sub.prefix)
    client = _client(conf)
    try:
        tid = client.submit_topology(name, submitted_conf(conf, sub.topology.conf),
                                     sub.topology.to_json(), code)
    finally:
        client.close()
    print(f"submitted topology {name!r} as {tid}")
    return 0


def cmd_list(args: argparse.Namespace, conf: dict[str, Any]) -> int:
    client = _client(conf)
    try:
        info = client.cluster_info()
    finally:
        client.close()
    if not info.topologies:
        print("no topologies running", file=sys.stderr)
    for t in info.topologies:
        print(f"{t.name} {t.status}" + (f"  ({t.status_reason})" if t.status_reason else ""))
    return 0


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
    from squall.daemon.nimbus_client import parse_executors
    executors = parse_executors(args.executors)
    if args.workers is not None and args.workers < 1:
        raise ConfigError("--workers must be >= 1")
    client = _client(conf)
    try:
        client.rebalance(args.name, args.wait, args.workers, executors)
    finally:
        client.close()
    print(f"rebalancing topology {args.name!r}")
    return 0


__all__ = ["register", "submitted_conf"]
