"""Ports meant to be bound later, and the kernel's ephemeral range (Linux) they must stay out
of: the kernel takes a port from that range for a bind to port 0 (a worker's metrics server)
and for the local end of every outgoing connection, so a port chosen there (a supervisor's
slot) may be someone else's by the time its owner binds it. ``free_port`` hands out ports
from next to the range; ``slot_ports_warning`` tells a supervisor which of its slots lie in
it."""
from __future__ import annotations

import random
import socket
from collections.abc import Iterable
from pathlib import Path

#: where Linux keeps the range (``net.ipv4.ip_local_port_range``)
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def ephemeral_range() -> tuple[int, int] | None:
    """(lowest, highest) port of the range, or None where it cannot be read (not Linux)."""
    try:
        low, high = map(int, EPHEMERAL_RANGE.read_text().split())
    except (OSError, ValueError):
        return None
    return low, high


#: ports ``free_port`` handed out in this process: nobody may have bound them yet
_handed_out: set[int] = set()
#: most ports ``free_port`` draws from, next to the ephemeral range
SPAN = 12000
#: draws of a busy port before ``free_port`` takes what the kernel offers
MAX_DRAWS = 1000
_draw = random.SystemRandom().choice


def outside_ephemeral(span: int = SPAN) -> range | None:
    """Unprivileged ports the kernel never hands out by itself: ``span`` of them just below
    its ephemeral range (or above it, where there is no room below); None where the range
    is unknown."""
    kernels = ephemeral_range()
    if kernels is None:
        return None
    low, high = kernels
    if low - 1024 >= 1024:
        return range(max(1024, low - span), low)
    if 65535 - high >= 1024:
        return range(high + 1, min(65536, high + 1 + span))
    return None


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that was free a moment ago and not handed out before.

    The port is bound later, by whoever asked (a nimbus, a supervisor's slot for a worker
    started seconds on). Drawn from outside the kernel's ephemeral range, it cannot be
    taken meanwhile by a bind to port 0 (a worker's metrics server, another test's listener)
    or by the local end of an outgoing connection; and the kernel may offer a released
    port again at once, so two calls made before either port is bound could otherwise
    collide.
    """
    ports = outside_ephemeral()
    draws = 0
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            if ports is not None and draws < MAX_DRAWS:
                draws += 1
                try:
                    sock.bind((host, _draw(ports)))
                except OSError:         # in use, or lingering after its last use
                    continue
            else:                       # the kernel's choice, as a last resort
                sock.bind((host, 0))
            port = int(sock.getsockname()[1])
        if port not in _handed_out:
            _handed_out.add(port)
            return port


def slot_ports_warning(ports: Iterable[int]) -> str:
    """One line for the supervisor's log when it has no slot port, or some of its slot
    ports lie in the range (``""`` when it has some, none in the range)."""
    ports = list(ports)
    if not ports:
        return ("supervisor.slots.ports is empty: this supervisor registers, but nimbus can "
                "place no worker on it")
    span = ephemeral_range()
    if span is None:
        return ""
    low, high = span
    inside = sorted(p for p in ports if low <= p <= high)
    if not inside:
        return ""
    shown = ", ".join(map(str, inside[:8])) + (", ..." if len(inside) > 8 else "")
    return (f"supervisor.slots.ports in the kernel's ephemeral port range ({low}-{high}, "
            f"net.ipv4.ip_local_port_range): {shown}. A bind to port 0 or an outgoing "
            f"connection on this host can take such a port before its worker binds it (the "
            f"worker then backs off and is started again); choose ports below {low}, such as "
            f"the default 6700-6703")
