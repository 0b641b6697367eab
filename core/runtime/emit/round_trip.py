"""``topology.testing.always.try.serialize``: every emitted value goes through the serializer,
even to a task of the same worker, so a topology tested in one process (LocalCluster,
``complete_topology``) meets the serializer exactly as it would between two workers.

Chosen once per task by the worker when the key is set; a topology without it never reaches
this module. The task's ``emit``/``emit_many`` are wrapped: the values are encoded and
decoded (what the receiving bolt gets is what another worker would have got: tuples as
lists, sets and dates as :mod:`squall.serializers.types` rebuilds them), and a value the
serializer refuses (or cannot read back) raises :class:`~squall.errors.SerializationError`
from ``emit`` naming the component and the stream, whatever the serializer raised (a
RecursionError of a value nested too deep, a plugin's bug), as between two workers.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from squall.errors import SerializationError
from squall.runtime.emit.fast import Emit, EmitMany

__all__ = ["KEY", "round_trip"]

KEY = "topology.testing.always.try.serialize"


def round_trip(emit: Emit, emit_many: EmitMany, serializer: Any,
               component: str) -> tuple[Emit, EmitMany]:
    """``emit`` and ``emit_many`` that pass every values through ``serializer`` first."""
    dumps, loads = serializer.dumps, serializer.loads

    def crossed(values: Sequence[Any], stream: str) -> Any:
        try:
            return loads(dumps(values))
        except Exception as exc:    # SerializationError; RecursionError or a plugin's bug
            why = exc if isinstance(exc, SerializationError) else \
                f"the serializer raised {type(exc).__name__}: {exc}"
            raise SerializationError(
                f"{component} emitted on stream {stream!r} values that cannot be sent to "
                f"another worker ({KEY} is set): {why}") from exc

    def checked_emit(values: Sequence[Any], stream: str = "default", **options: Any) -> Any:
        return emit(crossed(values, stream), stream, **options)

    def checked_emit_many(values_list: Sequence[Sequence[Any]], stream: str = "default",
                          **options: Any) -> None:
        emit_many([crossed(v, stream) for v in values_list], stream, **options)

    return checked_emit, checked_emit_many
