"""Host names and the addresses behind them, for the daemons' checks (never on a tuple's path).

* :func:`check_advertised_host`: a supervisor's advertised name (``storm.local.hostname``, else
  the machine's host name) is where every other worker sends tuples to its workers. A name
  that does not resolve is refused at start; one whose addresses its workers do not listen on
  (``squall.transport.<name>.bind.host``) gets a warning line. Either would otherwise stall a
  topology in silence: the transports connect lazily and retry for ever.
* :func:`host_key`: what nimbus compares two supervisors' hosts by, so ``localhost``,
  ``127.0.0.1`` and the machine's own name are one host.
* :func:`listen_error`: the line a daemon gives when it cannot listen, naming its config keys
  and the system's reason (a port in use, a host that does not resolve, an address that is not
  this machine's), found with a plain socket where the server library (gRPC) hides it.

Each call may block on the resolver (a name not in ``/etc/hosts``): callers run them at start
or once per host name, never per tuple.
"""
from __future__ import annotations

import socket
from collections.abc import Mapping
from typing import Any

from squall.errors import ConfigError

#: bind hosts that stand for every interface of the machine
WILDCARDS = frozenset({"0.0.0.0", "::", "[::]", "*"})
#: the key of every address of the machine :func:`host_key` runs on
THIS_MACHINE = "this machine"


def resolve(host: str) -> frozenset[str]:
    """The addresses ``host`` (a name or an address) resolves to here. socket.gaierror (an
    OSError) when it does not."""
    infos = socket.getaddrinfo(host.strip("[]"), None, type=socket.SOCK_STREAM)
    return frozenset(str(info[4][0]) for info in infos)


def is_local(address: str) -> bool:
    """Whether ``address`` is one of this machine's (a loopback address or an interface's):
    a socket can bind it."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.bind((address, 0))
    except OSError:
        return False
    return True


def host_key(host: str) -> frozenset[str]:
    """What ``host`` names, for comparing hosts: its addresses, where each of this machine's
    is :data:`THIS_MACHINE` (``localhost``, ``127.0.0.1`` and the machine's name alike); the
    name itself when it does not resolve. Two hosts are one where their keys meet."""
    try:
        addresses = resolve(host)
    except (OSError, UnicodeError):
        return frozenset({host})
    return frozenset(THIS_MACHINE if is_local(a) else a for a in addresses) or frozenset({host})


def check_advertised_host(conf: Mapping[str, Any], hostname: str) -> str:
    """Check ``hostname``, the name a supervisor registers (``storm.local.hostname``, else the
    machine's host name): ConfigError, one line naming the key, when it does not resolve; the
    warning line to log when its workers would not be reachable by it (``""`` when they
    are, or where it cannot be told). Its workers listen on ``bind.host`` of the supervisor's
    ``squall.transport``: a wildcard host listens on every address of this machine, another
    host on its own addresses only."""
    given = conf.get("storm.local.hostname")
    what = (f"storm.local.hostname {hostname!r}" if given else
            f"this machine's host name {hostname!r} (storm.local.hostname is not set)")
    try:
        advertised = resolve(hostname)
    except socket.gaierror as exc:
        if exc.errno == socket.EAI_AGAIN:   # the resolver is down now, not the name wrong
            return (f"{what} cannot be resolved now ({exc.strerror}): workers of other "
                    f"supervisors send tuples to this one's by that name")
        raise ConfigError(f"{what} does not resolve ({exc.strerror}): workers of other "
                          f"supervisors send tuples to this one's by that name; set "
                          f"storm.local.hostname to a name or address they reach this "
                          f"machine by") from None
    except UnicodeError as exc:
        raise ConfigError(f"{what} is not a valid host name ({exc})") from None
    shown = ", ".join(sorted(advertised))
    key = f"squall.transport.{conf.get('squall.transport') or 'zmq'}.bind.host"
    bind = conf.get(key)
    if not isinstance(bind, str) or not bind.strip():
        return ""                           # a transport without that option
    if bind.strip() in WILDCARDS:
        if any(is_local(a) for a in advertised):
            return ""
        return (f"{what} resolves to {shown}, not an address of this machine: workers send "
                f"tuples to this supervisor's workers there, which works only where that "
                f"address forwards to this machine")
    try:
        bound = resolve(bind.strip())
    except (OSError, UnicodeError):
        return ""                           # the transport says so when a worker binds it
    if advertised & bound:
        return ""
    return (f"{what} resolves to {shown}, but {key} is {bind!r}: this supervisor's workers "
            f"listen on {', '.join(sorted(bound))} only, so tuples sent to them by that name "
            f"are not received (the topology stalls, its spouts replaying); set {key} to "
            f"0.0.0.0 (every interface) or to an address of that name")


def listen_problem(host: str, port: int) -> str:
    """Why a server cannot listen on ``host:port``, in the system's words (``Address already
    in use``, ``Cannot assign requested address``, ``host 'x' does not resolve (...)``), found
    by binding a plain socket there as a server would; ``""`` when that socket binds (the
    caller's own reason stands)."""
    try:
        infos = socket.getaddrinfo(host.strip("[]") or None, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return f"host {host!r} does not resolve ({exc.strerror})"
    except (OSError, UnicodeError, OverflowError) as exc:
        return str(exc)
    reasons = []
    for family, kind, proto, _, address in infos:
        try:
            with socket.socket(family, kind, proto) as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(address)
        except OSError as exc:
            reasons.append(exc.strerror or str(exc))
            continue
        return ""                           # one of its addresses binds
    return reasons[0] if reasons else ""


def listen_error(who: str, host: str, port: int, keys: str, reason: object = None, *,
                 kind: str = "") -> str:
    """The line a daemon gives when it cannot listen: ``nimbus cannot listen on
    127.0.0.1:6627 (nimbus.host / nimbus.port): Address already in use`` (``kind="HTTP"``:
    ``cannot listen for HTTP on``). ``reason`` is the error the daemon met: an OSError speaks
    for itself; another (gRPC's "Failed to bind") gives way to :func:`listen_problem`'s when
    that finds one."""
    if isinstance(reason, socket.gaierror):
        said = f"host {host!r} does not resolve ({reason.strerror})"
    elif isinstance(reason, OSError):
        said = reason.strerror or str(reason)
    else:
        said = listen_problem(host, port) or str(reason or "") or "the address cannot be bound"
    where = f" for {kind}" if kind else ""
    return f"{who} cannot listen{where} on {host}:{port} ({keys}): {said}"
