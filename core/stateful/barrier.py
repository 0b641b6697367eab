"""Aligned barriers: when a task in the checkpoint path may act on a checkpoint tuple.

A task gets every checkpoint (the ``__checkpoint`` stream) once from each of its input
tasks. Between a checkpoint's arrival from one input and its arrival from the last, the
tuples of the inputs that already delivered it belong to the next checkpoint: they are held,
and handed back once the checkpoint is complete (after the task acted on it). So every tuple
a task processed before acting on a checkpoint was sent before that checkpoint by its sender
(Chandy-Lamport's aligned snapshot; channels keep their order).

A checkpoint is told apart by its key (the ``seq`` field: one per emission of the
checkpoint spout). A checkpoint with another key, or the same key again from an input that
already delivered it, abandons the one being aligned (its tuples are failed by the caller;
the spout has given up on it) and starts the new one. Pure logic, no I/O: one instance per
task, used from the loop thread.
"""
from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

__all__ = ["BarrierAligner", "Step"]


class Step:
    """What the caller does after :meth:`BarrierAligner.barrier`, in this order: fail the
    ``abandoned`` checkpoint tuples, process the ``before`` tuples, act on the checkpoint
    whose tuples are ``complete`` (None: not complete yet), process the ``after`` tuples."""

    __slots__ = ("abandoned", "after", "before", "complete")

    def __init__(self, abandoned: list[Any], before: list[Any], complete: list[Any] | None,
                 after: list[Any]) -> None:
        self.abandoned = abandoned
        self.before = before
        self.complete = complete
        self.after = after


class BarrierAligner:
    """One task's barrier alignment over its input tasks ``inputs``."""

    __slots__ = ("arrived", "held", "inputs", "key")

    def __init__(self, inputs: Iterable[int]) -> None:
        self.inputs = frozenset(inputs)
        if not self.inputs:
            raise ValueError("a barrier needs at least one input task")
        self.key: Hashable | None = None
        #: input task -> its checkpoint tuple, for the checkpoint being aligned
        self.arrived: dict[int, Any] = {}
        #: tuples from inputs that delivered the checkpoint, in arrival order
        self.held: list[Any] = []

    def holds(self, source_task: int) -> bool:
        """Whether a data tuple from ``source_task`` must wait (see :meth:`hold`)."""
        return source_task in self.arrived

    def hold(self, tup: Any) -> None:
        self.held.append(tup)

    @property
    def aligning(self) -> bool:
        return bool(self.arrived)

    def barrier(self, source_task: int, key: Hashable, tup: Any) -> Step:
        """The checkpoint tuple ``tup`` with ``key`` arrived from ``source_task``."""
        abandoned: list[Any] = []
        before: list[Any] = []
        if self.arrived and (key != self.key or source_task in self.arrived):
            abandoned = list(self.arrived.values())
            before = self.held
            self.arrived = {}
            self.held = []
        self.key = key
        self.arrived[source_task] = tup
        if not self.inputs.issubset(self.arrived):
            return Step(abandoned, before, None, [])
        complete = list(self.arrived.values())
        after = self.held
        self.arrived = {}
        self.held = []
        return Step(abandoned, before, complete, after)
