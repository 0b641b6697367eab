"""``multidim``: JStorm-style multi-dimensional scheduling (cpu, memory, net, disk slots).

Enable with ``squall.scheduler: multidim``. Supervisors advertise their capacity
(:func:`squall.scheduling.resources.default_supervisor_resources`); components ask with
``set_resources(cpu=, memory_mb=, net=, disk=)``; a topology that does not fit stays
``pending`` with a reason until capacity appears. Pure Python, no extra dependencies.
"""
from __future__ import annotations

from squall.plugins.scheduler_multidim.scheduler import MultiDimScheduler

__all__ = ["MultiDimScheduler"]
