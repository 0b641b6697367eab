"""Argument types of squall's commands: a value out of range is argparse's one usage line
(``squall kill: error: argument --wait: ...``), not a surprise later."""
from __future__ import annotations

import argparse
import math

from squall.daemon.topology_requests import MAX_WAIT_SECS

__all__ = ["byte_count", "port_number", "positive_seconds", "seconds", "wait_seconds"]


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if not math.isfinite(value):     # NaN, or an infinite wait that never ends
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return value


def positive_seconds(text: str) -> float:
    """More than 0 seconds."""
    value = _number(text, "a number of seconds")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text!r}")
    return value


def seconds(text: str) -> float:
    """0 seconds or more."""
    value = _number(text, "a number of seconds")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 seconds or more, got {text!r}")
    return value


def wait_seconds(text: str) -> float:
    """The wait of a kill or a rebalance: 0 seconds up to :data:`MAX_WAIT_SECS`."""
    value = seconds(text)
    if value > MAX_WAIT_SECS:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_WAIT_SECS} seconds (a day), "
                                         f"got {text!r}")
    return value


def _whole(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None


def byte_count(text: str) -> int:
    """A whole number of bytes, 0 or more."""
    value = _whole(text, "a number of bytes")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 bytes or more, got {text!r}")
    return value


def port_number(text: str) -> int:
    """A TCP port, 0 (a free one, where the command takes that) to 65535."""
    value = _whole(text, "a port number")
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port from 0 to 65535, got {text!r}")
    return value
