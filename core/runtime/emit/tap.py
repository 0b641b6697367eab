"""Recording what tasks emit, for :func:`squall.testing.complete_topology`.

``TAPS`` maps a topology name to ``recorder(ts)``, which returns ``record(stream, values_list)``
for that task (or None to leave the task alone). While it is empty, :func:`~squall.runtime.emit.
make_emit` returns the task's emit untouched: a topology that is not recorded never reaches
:func:`tapped`, and pays nothing per tuple. Where a recorder is registered, the task's ``emit``
and ``emit_many`` record each call's values after it succeeded: the recording is made when the
emit is made, before the component's ``initialize``, so every reference to the emit records
(``self.out = self.emit`` in ``initialize``, a streamparse bolt's pystorm ``emit``).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from squall.runtime.emit.fast import Emit, EmitMany
from squall.runtime.emit.general import values_list_of

if TYPE_CHECKING:
    from squall.runtime.task import TaskState

__all__ = ["TAPS", "Record", "tapped"]

#: record(stream, values_list): called after an emit of ``values_list`` on ``stream`` succeeded
Record = Callable[[str, Sequence[Sequence[Any]]], None]

#: topology name -> recorder(ts) -> Record or None; set and cleared by complete_topology
TAPS: dict[str, Callable[[TaskState], Record | None]] = {}


def tapped(ts: TaskState, emit: Emit, emit_many: EmitMany) -> tuple[Emit, EmitMany]:
    """``emit`` and ``emit_many`` of ``ts``, recorded where a tap wants the task."""
    context = ts.context
    recorder = TAPS.get(context.topology_name) if context is not None else None
    record = recorder(ts) if recorder is not None else None
    if record is None:
        return emit, emit_many

    def recorded_emit(values: Sequence[Any], stream: str = "default", *args: Any,
                      **options: Any) -> Any:
        result = emit(values, stream, *args, **options)
        record(stream or "default", (values,))
        return result

    def recorded_emit_many(values_list: Sequence[Sequence[Any]], stream: str = "default",
                           *args: Any, **options: Any) -> None:
        # an iterator is read once, here: the emit and the record take the same list
        values_list = values_list_of(ts, stream or "default", values_list)
        emit_many(values_list, stream, *args, **options)
        record(stream or "default", values_list)

    return recorded_emit, recorded_emit_many
