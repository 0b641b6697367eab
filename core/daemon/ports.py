"""The kernel's ephemeral port range (Linux): where it takes a port for a bind to port 0 (a
worker's metrics server) and for the local end of every outgoing connection. A port meant to
be bound later (a supervisor's slot, one handed out by ``free_port``) is safe only outside
it: inside, the kernel may give it to someone else first."""
from __future__ import annotations

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


def slot_ports_warning(ports: Iterable[int]) -> str:
    """One line for the supervisor's log when some of its slot ports lie in the range
    (``""`` when none does)."""
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
