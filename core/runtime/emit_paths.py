"""What every emit function of the loop shares, and the emit of a bolt's anchored default
stream (:func:`anchored_default`), built by :func:`squall.runtime.tasks.make_emit`.

Everything here runs on the worker's loop thread.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from squall.api.tuple import Source, Tuple
from squall.runtime.emit_general import _fast

if TYPE_CHECKING:
    from squall.runtime.tasks import TaskState

#: str keys an emitter remembers the local queue of (fields grouping on one field)
KEYED_QUEUES = 65536


class _Keywords:
    """The default of the marker parameter that keeps the emit options keyword-only.

    CPython 3.11 fills each keyword-only parameter a call leaves out by looking it up in the
    function's ``__kwdefaults__`` dict, which made every ``emit(values)`` cost about 650
    machine instructions more than a call to the same function with positional defaults
    (about 5 % of a word's whole path in word count). So the loop's emit functions take their
    options as ordinary parameters after ``_kw``: a third positional argument lands in
    ``_kw`` and is refused, and the options still work only by keyword, as documented.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "<keyword arguments only>"


KEYWORDS = _Keywords()


def positional_options(fn: str = "emit", first: str = "values",
                       options: str = "anchors, tup_id, direct_task and need_task_ids"
                       ) -> TypeError:
    """The error for options passed by position to an emit function."""
    return TypeError(f"{fn}() takes at most 2 positional arguments ({first} and stream); "
                     f"pass {options} by keyword")


def anchored_default(ts: TaskState, general: Callable[..., list[int] | None],
                     emit_many: Callable[..., None], choose0: Callable[[tuple], int],
                     src0: Source, held: list[Any]) -> Callable[..., list[int] | None]:
    """The emit of a bolt in a topology with ackers whose default stream has one
    single-target subscriber: an emit anchored to one tuple (the one in process, or
    ``anchors=[tup]``) on that stream skips the general emit's per-stream lookups and checks.
    Everything else goes to ``general``."""
    worker = ts.worker
    queues_get = worker.queues.get
    remote_tracked = worker.transfer.send_tracked
    src_task = ts.task
    rand = _fast
    T = Tuple
    new = object.__new__        # see make_emit: every slot of Tuple is set below
    route = ts.routes["default"][0]
    q0 = queues_get(route.targets[0]) if len(route.targets) == 1 else None
    key = route.key_index
    keyed: dict[str, Any] = {}      # as make_emit's keyed_of: str key -> queue or task id
    keyed_get = keyed.get

    def emit_anchored(values: Sequence[Any], stream: str = "default", _kw: object = KEYWORDS,
                      anchors: Any = None, tup_id: Any = None, direct_task: int | None = None,
                      need_task_ids: bool = False) -> list[int] | None:
        if (stream != "default" or direct_task is not None or need_task_ids or held
                or _kw is not KEYWORDS):
            return general(values, stream, _kw, anchors, tup_id, direct_task, need_task_ids)
        if anchors is None:
            anchor = ts.current
        elif len(anchors) == 1 and anchors[0].__class__ is T:
            anchor = anchors[0]
        else:
            anchor = None
        if anchor is None or not anchor.roots:
            return general(values, stream, _kw, anchors, tup_id, direct_task, need_task_ids)
        if values.__class__ is not tuple:
            values = tuple(values)
        ts.emitted += 1
        edge = rand(64)
        anchor.ackval ^= edge
        roots = anchor.roots
        q = q0
        if q is None:
            k = values[key] if key is not None else None
            if k.__class__ is str:
                q = keyed_get(k)
            if q is None:
                t = choose0(values)
                q = queues_get(t)
                if q is None:
                    q = t
                if k.__class__ is str and len(keyed) < KEYED_QUEUES:
                    keyed[k] = q
            if q.__class__ is int:
                remote_tracked(ts, q, values, src_task, src0, edge, roots)
                return None
        tup = new(T)
        tup.values = values
        tup.task = src_task
        tup.src = src0
        tup.id = edge
        tup.roots = roots
        tup.ackval = 0
        q.append(tup)  # type: ignore[union-attr]
        return None

    emit_anchored.many = emit_many  # type: ignore[attr-defined]
    return emit_anchored
