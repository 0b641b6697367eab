"""Executors: each runs a contiguous range of one component's tasks inside a worker's loop.

================  ==========================================  ============================
kind              class                                       module
================  ==========================================  ============================
bolt              :class:`~.bolt.BoltExecutor`                 bolt
spout             :class:`~.spout.SpoutExecutor`               spout
acker             :class:`~.acker.AckerExecutor`               acker
bolt, own thread  :class:`~.threaded.ThreadedBolt`             threaded
spout, own thread :class:`~.threaded.ThreadedSpout`            threaded
bolt, checkpoint  ``CheckpointedBoltExecutor``                 squall.stateful.executor
================  ==========================================  ============================

A component runs on a thread of its own when its class sets ``dedicated_thread = True`` or
its configuration sets ``topology.executor.dedicated.thread`` (ackers never do). A
:class:`squall.WindowedBolt` runs on :class:`squall.windowing.executor.WindowedBoltExecutor`
(a BoltExecutor holding its windows), always on the loop. A bolt on the checkpoint path of a
stateful bolt (it subscribes to a ``__checkpoint`` stream) always runs on the loop, in a
``CheckpointedBoltExecutor`` (a windowed bolt is refused there when the topology is built).
"""
from __future__ import annotations

from typing import Any

from squall.runtime.executors.acker import AckerExecutor
from squall.runtime.executors.base import Executor
from squall.runtime.executors.bolt import BoltExecutor
from squall.runtime.executors.spout import SpoutExecutor
from squall.runtime.executors.threaded import ThreadedBolt, ThreadedSpout, wants_thread
from squall.windowing.executor import WindowedBoltExecutor
from squall.windowing.topology import is_windowed

__all__ = ["AckerExecutor", "BoltExecutor", "Executor", "SpoutExecutor", "ThreadedBolt",
           "ThreadedSpout", "executor_class"]


def executor_class(kind: str, component_cls: type, conf: dict[str, Any], *,
                   checkpointed: bool = False) -> type[Executor]:
    """The executor class for a component of ``kind`` (``bolt``, ``spout``, ``acker``);
    ``checkpointed``: a bolt on the checkpoint path of a stateful bolt (it runs on the loop,
    :mod:`squall.stateful.executor`)."""
    if kind == "acker":
        return AckerExecutor
    if checkpointed:
        from squall.stateful.executor import CheckpointedBoltExecutor
        return CheckpointedBoltExecutor
    if kind == "bolt" and is_windowed(component_cls):
        return WindowedBoltExecutor        # windows live on the loop (never threaded)
    threaded = wants_thread(component_cls, conf)
    if kind == "spout":
        return ThreadedSpout if threaded else SpoutExecutor
    return ThreadedBolt if threaded else BoltExecutor
