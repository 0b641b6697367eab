"""Stateful bolts with exactly-once state (API.md section 11): checkpoints through an aligned
barrier, as Storm's stateful bolts do them.

=====================================  =========================  =============================
stage                                  module                     where to start reading
=====================================  =========================  =============================
what users subclass and see            :mod:`.bolt`, :mod:`.state`  ``StatefulBolt``, ``KeyValueState``
the provider SPI and its drivers       :mod:`.provider`           ``StateProvider``; ``memory``, ``redis``
how keys and values are encoded        :mod:`.values`             ``value_codec``
the checkpoint path (build time)       :mod:`.wiring`             ``wire``
the coordinator (system spout)         :mod:`.checkpoint`         ``CheckpointSpout``: the protocol
a task's barrier                       :mod:`.barrier`            ``BarrierAligner.barrier``
a task's checkpoints                   :mod:`.keeper`             ``StateKeeper``
the executor of bolts on the path      :mod:`.executor`           ``CheckpointedBoltExecutor``
=====================================  =========================  =============================

A checkpoint's life: every ``topology.state.checkpoint.interval.ms`` the ``__checkpoint``
spout emits ``prepare``; each bolt on the path aligns it over its input tasks, acts on it
(a stateful task stores its changes as the prepared checkpoint) and forwards it; once every
task acked it, the spout records the commit decision and emits ``commit``; each stateful task
applies its prepared checkpoint and acks the inputs it covers. Any failure, and every start,
sends ``recover``: each stateful task goes back to the last committed checkpoint, fails the
inputs it held (the spouts replay them) and gets ``init_state`` again.
"""
from __future__ import annotations

from squall.stateful.bolt import StatefulBolt
from squall.stateful.provider import StateProvider, namespace
from squall.stateful.state import KeyValueState

__all__ = ["KeyValueState", "StateProvider", "StatefulBolt", "namespace"]
