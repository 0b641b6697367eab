"""Tuples and streams."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

TICK_STREAM = "__tick"
SYSTEM_COMPONENT = "__system"


class Stream:
    """A declared output stream: ``Stream(["word"])``, ``Stream(["a", "b"], name="x", direct=True)``."""

    __slots__ = ("direct", "fields", "name")

    def __init__(self, fields: Sequence[str], name: str = "default", direct: bool = False) -> None:
        if isinstance(fields, str):
            fields = [fields]
        self.fields = tuple(str(f) for f in fields)
        self.name = str(name)
        self.direct = bool(direct)

    def __repr__(self) -> str:
        extra = ", direct=True" if self.direct else ""
        return f"Stream({list(self.fields)!r}, name={self.name!r}{extra})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and (self.fields, self.name, self.direct) == (
            other.fields, other.name, other.direct)

    def __hash__(self) -> int:
        return hash((self.fields, self.name, self.direct))


class Source:
    """What every tuple of one (component, stream) shares; one instance per pair and process."""

    __slots__ = ("component", "fields", "index", "stream")

    def __init__(self, component: str, stream: str, fields: tuple[str, ...]) -> None:
        self.component = component
        self.stream = stream
        self.fields = fields
        self.index = {f: i for i, f in enumerate(fields)}


class Tuple:
    """A tuple as a bolt receives it.

    ``values`` is a tuple; ``tup["field"]`` reads a field by name. ``id`` identifies this tuple
    inside its tuple tree (``None`` when it is not tracked by the acker).
    """

    __slots__ = ("ackval", "id", "roots", "src", "task", "values")

    def __init__(self, values: Sequence[Any], task: int, src: Source,
                 id: int | None = None, roots: tuple[int, ...] | None = None) -> None:
        self.values = values
        self.task = task
        self.src = src
        self.id = id
        self.roots = roots
        self.ackval = 0

    @property
    def component(self) -> str:
        return self.src.component

    @property
    def stream(self) -> str:
        return self.src.stream

    @property
    def fields(self) -> tuple[str, ...]:
        return self.src.fields

    @property
    def is_tick(self) -> bool:
        return self.src.stream == TICK_STREAM

    def __getitem__(self, field: str) -> Any:
        try:
            return self.values[self.src.index[field]]
        except KeyError:
            raise KeyError(f"stream {self.src.component}:{self.src.stream} has no field "
                           f"{field!r}; fields: {list(self.src.fields)}") from None

    def __repr__(self) -> str:
        return (f"Tuple(component={self.component!r}, stream={self.stream!r}, task={self.task}, "
                f"id={self.id}, values={tuple(self.values)!r})")
