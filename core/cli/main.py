"""The ``squall`` command (also ``python -m squall``).

Global options ``--config FILE`` and ``-c key=value`` are accepted before or after the
subcommand; ``SQUALL_CONF`` names a config file for every subcommand. Every command validates
the driver names of its configuration first. User mistakes print one line
(``squall: error: ...``) and exit 2, without a traceback: a mistyped subcommand gets a
did-you-mean, and a command whose optional dependency is missing names the extra to install.
"""
from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from collections.abc import Sequence
from typing import Any

from squall import config, drivers
from squall.errors import PluginLoadError, SquallError
from squall.cli.argtypes import positive_seconds

log = logging.getLogger("squall.cli")


#: the namespace attributes ``-c`` lands in: one per parser, suffixed with its prog (argparse
#: would replace a list given before a subcommand with the one given after it)
OVERRIDES_PREFIX = "overrides"


def _global_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    default = None if top else argparse.SUPPRESS
    parser.add_argument("--config", metavar="FILE", default=default,
                        help="a YAML config file (default: $SQUALL_CONF)")
    parser.add_argument("-c", dest=OVERRIDES_PREFIX if top else
                        f"{OVERRIDES_PREFIX}@{parser.prog}", metavar="KEY=VALUE",
                        action="append", default=[] if top else argparse.SUPPRESS,
                        help="override a config key (value parsed as YAML; repeatable)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        default=False if top else argparse.SUPPRESS, help="log at DEBUG")


def global_options(parser: argparse.ArgumentParser) -> None:
    """Give a plugin's sub-subcommand squall's global options (``--config``, ``-c``, ``-v``):
    values given before it are kept, and its ``-c`` come after theirs."""
    _global_options(parser, top=False)


def _all_overrides(args: argparse.Namespace) -> list[str]:
    """Every ``-c`` of the command line, in order: before the subcommand, then after it (and
    after a sub-subcommand)."""
    levels = sorted((len(key), key) for key in vars(args)
                    if key.startswith(OVERRIDES_PREFIX + "@"))
    return [*(args.overrides or ()), *(v for _, key in levels for v in getattr(args, key))]


_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)")


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors as one line (``squall local: error: ...``), exit status 2;
    an unknown subcommand gets a did-you-mean, or the reason plugin commands are missing."""

    #: why the plugins' commands could not be added (None: they were)
    plugin_error: str | None = None

    def error(self, message: str) -> Any:
        found = _INVALID_CHOICE.search(message)
        if found:
            choices = re.findall(r"'([^']*)'", found.group(2))
            hint = drivers.did_you_mean(found.group(1), choices)
            option = re.match(r"argument (-[^:]*):", message)
            if option:      # an option's value, not a subcommand
                message = (f"{option.group(1)} {found.group(1)!r} is not one of "
                           f"{', '.join(choices)}")
            else:
                message = f"unknown command {found.group(1)!r}"
                if self.plugin_error:
                    message += f" (plugin commands did not load: {self.plugin_error})"
            message += f" (did you mean {hint!r}?)" if hint else ""
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


class _SubParsers:
    """Wraps argparse's subparsers so every subcommand also takes the global options."""

    def __init__(self, sub: Any) -> None:
        self._sub = sub

    def add_parser(self, name: str, **kw: Any) -> argparse.ArgumentParser:
        if name in self._sub.choices:
            raise ValueError(f"a command {name!r} exists already")
        parser = self._sub.add_parser(name, **kw)
        _global_options(parser, top=False)
        return parser


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="squall", description="squall: a distributed stream processor")
    parser.add_argument("--version", action="version", version=f"squall {_version()}",
                        help="print squall's version and exit")
    _global_options(parser, top=True)
    sub = _SubParsers(parser.add_subparsers(dest="command", metavar="COMMAND"))

    p = sub.add_parser("demo", help="run a word-count topology locally with a live view")
    p.add_argument("--duration", type=positive_seconds, default=8.0, metavar="S",
                   help="seconds to run (default 8; e.g. --duration 1 for a quick check)")
    p.set_defaults(func=_cmd_demo)

    p = sub.add_parser("local", help="run a topology in this process")
    p.add_argument("target", help="path/to/file.py:attr or package.module:attr")
    p.add_argument("--duration", type=positive_seconds, default=None, metavar="S",
                   help="seconds to run (default: until Ctrl-C)")
    p.add_argument("--name", default=None, help="topology name (default: the attribute)")
    p.set_defaults(func=_cmd_local)

    p = sub.add_parser("plugins", help="list every entry-point group and its plugins (and "
                                       "which cannot load, and why)")
    # it lists what cannot load: it runs even when a plugin breaks the configuration
    p.set_defaults(func=_cmd_plugins, reads_conf=False)

    p = sub.add_parser("config", help="print the effective configuration")
    p.add_argument("--sample", action="store_true", help="print a commented sample file")
    p.set_defaults(func=_cmd_config)

    try:
        from squall.cli import cluster
    except ImportError as exc:   # the cluster commands need the 'cluster' extra
        log.debug("cluster commands unavailable: %s", exc)
    else:
        cluster.register(sub)
    from squall.plugin_manager import notify
    try:
        notify("squall_add_commands", subparsers=sub)   # a broken one: one line
    except SquallError as exc:   # no plugin module loads: squall's own commands still work
        # said once: by the command (reading the conf loads the plugins again and fails),
        # by an unknown command's error, or at the foot of --help
        log.debug("no plugin commands: %s", exc)
        parser.plugin_error = str(exc)
        parser.epilog = f"plugin commands did not load: {exc}"
    return parser


def _cmd_demo(args: argparse.Namespace, conf: dict[str, Any]) -> int:
    from squall.cli.demo import run_demo
    return run_demo(conf, duration=args.duration)


def _cmd_local(args: argparse.Namespace, conf: dict[str, Any]) -> int:
    from squall.cli.local import run_local
    return run_local(args.target, conf, duration=args.duration, name=args.name)


def _version() -> str:
    from importlib import metadata
    try:
        return metadata.version("squall")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def _cmd_plugins(args: argparse.Namespace, conf: dict[str, Any]) -> int:
    from squall.cli.plugins import unavailable_reason
    listed = {group: drivers.entries(group) for group in drivers.GROUPS}
    width = max((len(name) for found in listed.values() for name, _ in found), default=0)
    for group, found in listed.items():
        print(group)
        shadowed: dict[str, list[tuple[str, str]]] = {}
        for name, dist, winner in drivers.shadowed(group):
            shadowed.setdefault(name, []).append((dist, winner))
        for name, dist in found:
            reason = unavailable_reason(group, name)
            print(f"  {name:<{width}}  {dist}" + (f"  UNAVAILABLE: {reason}" if reason else ""))
            for other, winner in shadowed.get(name, ()):
                print(f"  {name:<{width}}  {other}  SHADOWED by {winner}'s (not used)")
        if not found:
            print("  (none)")
    return 0


def _cmd_config(args: argparse.Namespace, conf: dict[str, Any]) -> int:
    print(config.sample() if args.sample else config.dump(conf), end="")
    return 0


class _ConfigWarningsOnce(logging.Filter):
    """Passes each distinct ``squall.config`` warning once: ``demo`` and ``local`` validate the
    conf, then LocalCluster validates the topology's again, which would repeat every warning."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message in self.seen:
            return False
        self.seen.add(message)
        return True


def _config_warnings_once() -> None:
    config_log = logging.getLogger(config.__name__)
    for old in [f for f in config_log.filters if isinstance(f, _ConfigWarningsOnce)]:
        config_log.removeFilter(old)
    config_log.addFilter(_ConfigWarningsOnce())


#: commands that run until stopped, whose log is their output
_LONG_RUNNING = frozenset({"nimbus", "supervisor", "ui", "drpc", "dev-zookeeper", "local",
                           "demo"})


def _escape_unencodable() -> None:
    """Have stdout and stderr write what their encoding cannot hold as backslash escapes
    (``\\xe9``): a component id or a log line outside an ASCII terminal's encoding
    (``PYTHONIOENCODING=ascii``, ``LC_ALL=C`` with ``PYTHONUTF8=0``) is printed, not a
    traceback in the middle of a command that may have acted already."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        # strict, or surrogateescape (an ASCII C locale with PYTHONUTF8=0): either raises on
        # a character its encoding lacks
        if callable(reconfigure) and getattr(stream, "errors", None) in ("strict",
                                                                         "surrogateescape"):
            try:
                reconfigure(errors="backslashreplace")
            except (OSError, ValueError):      # a stream that cannot change it: left as it is
                pass


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    _escape_unencodable()
    # gRPC's C core logs a failed TLS handshake itself, at INFO, before squall can say it in
    # one line; keep its own lines to errors unless the user asked for more
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: "
                        "%(message)s", stream=sys.stderr)
    args: argparse.Namespace | None = None
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        args.overrides = _all_overrides(args)
        if getattr(args, "verbose", False):
            logging.getLogger().setLevel(logging.DEBUG)
        elif args.command not in _LONG_RUNNING:
            # a command that asks ZooKeeper something prints its answer, or one error line,
            # not the client's connection chatter
            logging.getLogger("kazoo").setLevel(logging.WARNING)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        if args.command in ("demo", "local"):   # they validate again in LocalCluster
            _config_warnings_once()
        try:
            conf = config.load_config(args.config, args.overrides or ())
            config.validate(conf)
        except PluginLoadError as exc:
            if getattr(args, "reads_conf", True):
                raise
            # a plugin that cannot load: the listing that shows which still runs, after
            # the error line, with the error's exit status
            print(f"squall: error: {exc}", file=sys.stderr)
            args.func(args, {})
            return 2
        return int(args.func(args, conf) or 0)
    except SquallError as exc:
        print(f"squall: error: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        from squall.cli.plugins import missing_extra
        extra = missing_extra(exc)
        if extra is None:
            raise
        command = getattr(args, "command", None) or "this command"
        print(f"squall: error: `squall {command}` needs the {extra!r} extra (missing module "
              f"{exc.name!r}); install it with: pip install 'squall[{extra}]'", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
