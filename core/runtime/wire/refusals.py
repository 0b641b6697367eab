"""What one batch of the outbox could not send: tuples whose values the serializer refuses,
or that alone are larger than the transport carries, gathered per source and cause.

Only the outbox's error paths come here (encoding a batch raised, or a batch is over the
transport's limit), once the refused pieces are found: a batch that encodes costs nothing
more. Each cause is reported once per batch with the number of tuples it refused there and,
for the serializer's refusals, the field of the first of them that holds the refused value.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from squall.api.tuple import Source
from squall.errors import SerializationError

__all__ = ["Refusals", "Report"]

#: what tells apart two messages of one cause: numbers (an int's value, a position, a size)
#: and the escapes of characters (a lone surrogate)
_PARTICULARS = re.compile(r"\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})|-?\d+")

#: ``report(source, error, count, field)``: ``count`` tuples of ``source`` refused in one batch
#: for the cause ``error`` (the first one's); ``field`` names the field (its declared name, else
#: its index) that holds the value refused in the first of them, None when not looked for or
#: not found
Report = Callable[[Source, SerializationError, int, "str | int | None"], None]


class Refusals:
    """The refused pieces of one batch (:func:`.codec.pieces`), gathered by source and cause:
    the exception's type and its message with its particulars masked, so that two ints too
    large or two lone surrogates are one cause, an object of an unknown type another.
    ``dumps`` is the serializer's, used to find the field when ``find_fields``."""

    __slots__ = ("causes", "dumps", "find_fields")

    def __init__(self, dumps: Callable[[Any], bytes], find_fields: bool) -> None:
        self.dumps = dumps
        self.find_fields = find_fields
        #: (source, exception type, masked message) -> [first exception, first piece, tuples]
        self.causes: dict[tuple[Source, type, str], list[Any]] = {}

    def add(self, piece: Any, exc: BaseException) -> None:
        """``piece`` (a run's smallest part) is refused for ``exc``."""
        key = (piece.src, type(exc), _PARTICULARS.sub("#", str(exc)))
        cause = self.causes.get(key)
        if cause is None:
            self.causes[key] = [exc, piece, len(piece.values)]
        else:
            cause[2] += len(piece.values)

    def report(self, report: Report) -> None:
        """Call ``report`` once per cause, in the order the causes were first met; whatever
        the serializer raised that is not a SerializationError (a plugin's bug, a
        RecursionError) is reported as one naming it."""
        for (src, _, _), (exc, piece, count) in self.causes.items():
            error = exc if isinstance(exc, SerializationError) else SerializationError(
                f"the serializer raised {exc!r}")
            report(src, error, count, self._field(piece) if self.find_fields else None)

    def _field(self, piece: Any) -> str | int | None:
        """The field of ``piece``'s first tuple whose value alone the serializer refuses."""
        dumps = self.dumps
        for values in piece.values:
            if not isinstance(values, (list, tuple)):
                continue
            for i, value in enumerate(values):
                try:
                    dumps(value)
                except Exception:   # SerializationError, or a plugin's bug: this field
                    fields = piece.src.fields
                    return fields[i] if i < len(fields) else i
        return None
