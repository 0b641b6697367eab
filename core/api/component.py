"""The component classes users subclass: :class:`Spout` and :class:`Bolt`.

Components are constructed by the worker with no arguments, one instance per task. The runtime
installs ``emit`` (and the ack/fail methods of bolts) on each instance before ``initialize``;
every method of a component is called from its worker's executor loop, one call at a time, or
from a thread of its executor's own when the class sets ``dedicated_thread``.
"""
from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from squall.api.context import TopologyContext
from squall.api.tuple import Stream, Tuple

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
           "warn": logging.WARNING, "error": logging.ERROR, "critical": logging.CRITICAL}


class Component:
    #: field names of the default stream (``list[str]``) or a list of :class:`Stream`
    outputs: ClassVar[Sequence[str | Stream]] = ()

    #: run this component's callbacks on a thread of their own, so that a call that blocks
    #: (a database write, a blocking poll) holds up only this component's tasks instead of
    #: every executor of its worker. Emits, acks and fails are handed to the worker's loop and
    #: applied there in call order. Also set per component (or for every component) with
    #: ``topology.executor.dedicated.thread: true`` in its configuration.
    dedicated_thread: ClassVar[bool] = False

    context: TopologyContext

    @classmethod
    def declare_outputs(cls, config: Mapping[str, Any]) -> list[str | Stream]:
        """The output streams; override when they depend on the component's config."""
        outputs = cls.outputs
        # one field name or one Stream alone is a stream of its own (list("word") would
        # declare the fields w, o, r, d)
        return [outputs] if isinstance(outputs, (str, Stream)) else list(outputs)

    def initialize(self, conf: dict[str, Any], context: TopologyContext) -> None:
        """Called once per task before anything else; ``conf`` is the merged configuration."""

    def emit(self, values: Sequence[Any], stream: str | None = "default", *,
             anchors: Sequence[Tuple] | None = None, tup_id: Any = None,
             direct_task: int | None = None, need_task_ids: bool = False) -> list[int] | None:
        """Emit ``values`` on ``stream`` (``None`` is the default stream, as in streamparse).

        Raises TopologyError for an undeclared stream, or values whose number differs from
        the stream's declared fields (naming the component, stream, fields and count)."""
        raise RuntimeError("emit() is only available while the component runs in a topology")

    def emit_many(self, values_list: Sequence[Sequence[Any]], stream: str | None = "default", *,
                  anchors: Sequence[Tuple] | None = None) -> None:
        """Emit every values in ``values_list`` on ``stream`` with the same anchors.

        The same as calling :meth:`emit` for each, in order, but routed in one call: the
        fast way for ``process_batch`` bolts to emit many tuples."""
        raise RuntimeError("emit_many() is only available while the component runs in a "
                           "topology")

    def log(self, msg: str, level: str = "info") -> None:
        """Log ``msg`` at ``level`` under ``squall.component.<component id>``, the logger of
        multi-lang and streamparse components too (``squall set-log-level`` names it);
        under ``squall.component.<class name>`` before the component runs in a topology."""
        context = getattr(self, "context", None)
        name = context.component_id if context is not None else type(self).__name__
        logging.getLogger(f"squall.component.{name}").log(
            _LEVELS.get(level, logging.INFO), "%s", msg)

    def report_error(self, exc_or_msg: BaseException | str) -> None:
        """Record an error for this component (shown by ``get_topology_info`` / the UI)."""
        self.log(str(exc_or_msg), "error")


class Spout(Component):
    def next_tuple(self) -> None:
        """Emit zero or more tuples. Called repeatedly while the spout is active; must not
        block (return when there is nothing to emit; the runtime backs off briefly) unless
        the spout sets ``dedicated_thread``."""

    def ack(self, tup_id: Any) -> None:
        """The tuple tree emitted with ``tup_id`` was fully processed."""

    def fail(self, tup_id: Any) -> None:
        """The tuple tree failed or timed out; replaying it is the spout's decision."""

    def activate(self) -> None: ...

    def deactivate(self) -> None: ...

    def close(self) -> None: ...


class Bolt(Component):
    auto_ack: ClassVar[bool] = True
    auto_anchor: ClassVar[bool] = True
    auto_fail: ClassVar[bool] = True
    #: ``process_batch`` bolts only: receive a :class:`~squall.api.tuple.TupleBatch` (a
    #: read-only sequence whose Tuples are built when read, with ``values`` and ``column()``
    #: for reading without them) instead of a list of Tuple. Untracked tuples emitted to it
    #: with ``emit_many`` in the same worker then travel as one queue entry per call.
    lazy_batch: ClassVar[bool] = False

    def process(self, tup: Tuple) -> None:
        """Handle one tuple. With ``auto_ack`` it is acked when this returns; an exception
        fails it (``auto_fail``), is reported, and the executor goes on."""
        raise NotImplementedError(f"{type(self).__name__} defines neither process nor "
                                  "process_batch")

    def process_tick(self, tup: Tuple) -> None:
        """Handle a tick tuple (every ``topology.tick.tuple.freq.secs``)."""

    def cleanup(self) -> None:
        """Called once when the task stops."""

    def ack(self, tup: Tuple) -> None:
        raise RuntimeError("ack() is only available while the component runs in a topology")

    def fail(self, tup: Tuple) -> None:
        raise RuntimeError("fail() is only available while the component runs in a topology")

    def reset_timeout(self, tup: Tuple) -> None:
        """Restart the message timeout (``topology.message.timeout.secs``) of every tuple
        tree ``tup`` belongs to, at the acker and at the spout task that waits for it: a
        bolt that holds a tuple (``auto_ack = False``, or a windowed bolt's window) or works
        on it longer than the timeout calls it now and then, so the tree is not failed
        meanwhile. Nothing for an untracked tuple or without ackers; TopologyError for
        anything but a Tuple. Callable from the bolt's own threads, as ``ack`` is."""
        raise RuntimeError("reset_timeout() is only available while the component runs in "
                           "a topology")
