"""``topology.testing.always.try.serialize``: every emitted value goes through the serializer,
even to a task of the same worker, so a topology tested in one process (LocalCluster,
``complete_topology``) meets the serializer exactly as it would between two workers.

Chosen once per task by :func:`squall.runtime.emit.make_emit` when the task's conf sets the
key; a topology without it never reaches this module. The task's ``emit``/``emit_many`` are
wrapped (:func:`checked`): the values are encoded and decoded (what the receiving bolt gets
is what another worker would have got: tuples as lists, sets and dates as
:mod:`squall.serializers.types` rebuilds them). Values the serializer refuses (or cannot
read back, or that make it raise anything else: a RecursionError of a value nested too deep,
a plugin's bug) go nowhere, as between two workers: the emit returns, the
:class:`~squall.errors.SerializationError` naming the component and the stream is reported
as the component's error, and the tuple's trees fail at once (a spout's tracked emit gets
``fail(tup_id)``; a bolt's anchors' trees fail, so their spouts replay). What the emit itself
would raise (an undeclared stream, values that do not match its fields) still raises.
"""
from __future__ import annotations

from collections.abc import Sequence
from threading import get_ident
from typing import TYPE_CHECKING, Any

from squall.errors import SerializationError
from squall.runtime.emit.fast import KEYWORDS, Emit, EmitMany, handoff_of, positional_options
from squall.runtime.emit.general import (
    ANCHOR_SEQUENCES, anchors_of, as_values, check_anchors, check_arity, check_emit,
    fail_new_tree, values_list_of,
)

if TYPE_CHECKING:
    from squall.runtime.emit import Wiring
    from squall.runtime.task import TaskState

__all__ = ["KEY", "checked"]

KEY = "topology.testing.always.try.serialize"


def checked(ts: TaskState, w: Wiring, emit: Emit, emit_many: EmitMany,
            spout: bool) -> tuple[Emit, EmitMany]:
    """``emit`` and ``emit_many`` of task ``ts`` that pass every values through the worker's
    serializer first, and fail what it refuses as another worker's would (module docstring)."""
    dumps, loads = w.outbox.dumps, w.outbox.loads
    component = ts.component_id
    gate = handoff_of(ts)

    def crossed(values: Sequence[Any], stream: str) -> Any:
        try:
            return loads(dumps(values))
        except Exception as exc:    # SerializationError; RecursionError or a plugin's bug
            why = exc if isinstance(exc, SerializationError) else \
                f"the serializer raised {exc!r}"        # as the outbox says it
            raise SerializationError(
                f"{component} emitted on stream {stream!r} values that cannot be sent to "
                f"another worker ({KEY} is set); the tuple fails: {why}") from exc

    def refused(values: Any, stream: str, anchors: Any, direct_task: int | None) -> None:
        """Raise what the emit itself would, else count the emit as made (it was, as far as
        the component can tell)."""
        check_emit(ts, stream, direct_task)
        check_arity(ts, stream, as_values(ts, stream, values))
        if anchors is not None:
            check_anchors(ts, anchors)
        ts.emitted += 1

    def fail(anchors: Any, tup_id: Any, exc: SerializationError) -> None:
        """The refused tuple's trees fail, as an undelivered tuple's (the outbox's loss); the
        error is reported as its one line (the traceback would show the serializer's
        insides, not the emit)."""
        w.report(ts, str(exc))
        if spout:
            if tup_id is not None:
                if w.acking:
                    fail_new_tree(ts, w, tup_id)
                else:
                    ts.deferred.append(tup_id)  # untracked: acked once next_tuple returns
        elif w.acking:
            tuples = (ts.current,) if anchors is None else anchors
            w.acks.fail_lost({r for a in tuples if a is not None for r in a.roots or ()})

    def checked_emit(values: Sequence[Any], stream: str = "default", _kw: object = KEYWORDS,
                     anchors: Any = None, tup_id: Any = None, direct_task: int | None = None,
                     need_task_ids: bool = False) -> list[int] | None:
        if get_ident() != gate.ident and not gate.here():  # the serializer is the loop's
            return gate.emit(ts, checked_emit, values, stream, _kw, anchors, tup_id,
                             direct_task, need_task_ids)
        if _kw is not KEYWORDS:
            raise positional_options()
        if stream is None:
            stream = "default"
        if anchors is not None and anchors.__class__ not in ANCHOR_SEQUENCES:
            anchors = anchors_of(ts, anchors)   # read here and by the emit: read once
        try:
            sent = crossed(values, stream)
        except SerializationError as exc:
            refused(values, stream, anchors, direct_task)
            fail(anchors, tup_id, exc)
            return [] if need_task_ids else None
        return emit(sent, stream, _kw, anchors, tup_id, direct_task, need_task_ids)

    def checked_emit_many(values_list: Sequence[Sequence[Any]], stream: str = "default",
                          _kw: object = KEYWORDS, anchors: Any = None) -> None:
        if get_ident() != gate.ident and not gate.here():
            gate.emit_many(ts, checked_emit_many, values_list, stream, _kw, anchors)
            return
        if _kw is not KEYWORDS:
            raise positional_options("emit_many", "values_list", "anchors")
        if stream is None:
            stream = "default"
        if anchors is not None and anchors.__class__ not in ANCHOR_SEQUENCES:
            anchors = anchors_of(ts, anchors)
        sent: list[Any] = []
        error: SerializationError | None = None
        for values in values_list_of(ts, stream, values_list):
            try:
                sent.append(crossed(values, stream))
            except SerializationError as exc:
                refused(values, stream, anchors, None)
                error = error or exc
        if sent:
            emit_many(sent, stream, _kw, anchors)
        if error is not None:
            fail(anchors, None, error)

    return checked_emit, checked_emit_many
