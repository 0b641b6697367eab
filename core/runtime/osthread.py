"""The operating system's name of the calling thread (Linux ``prctl(PR_SET_NAME)``), so that
``top -H``, ``ps -L``, ``/proc/<pid>/task/*/comm`` and profilers tell a worker's loop from its
receive thread and its components' threads. CPython (before 3.14) leaves every thread named
after the process; elsewhere than Linux this does nothing.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys

__all__ = ["set_name"]

_PR_SET_NAME = 15
_prctl = None
if sys.platform.startswith("linux"):
    try:
        _prctl = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True).prctl
    except (OSError, AttributeError):
        _prctl = None


def set_name(name: str) -> None:
    """Name the calling thread (the kernel keeps 15 bytes of it)."""
    if _prctl is not None:
        _prctl(_PR_SET_NAME, name.encode("utf-8", "replace")[:15], 0, 0, 0)
