"""A pystorm component hosted in the worker whose class overrides ``emit`` (so pystorm's own
``emit`` runs and speaks through ``send_message``/``read_task_ids``): each emit that waits for
task ids gets its own, also after a direct emit, which pystorm answers itself and never reads
an answer for (as in Storm, none is queued for it)."""
from __future__ import annotations

import io
import logging
from typing import Any

import pystorm

from squall.multilang.streamparse import _wire


class Overriding(pystorm.Spout):
    def emit(self, *args: Any, **kwargs: Any) -> Any:
        return super().emit(*args, **kwargs)


class Host:
    """The squall spout hosting it: its emits go to task 7 unless direct."""

    def __init__(self) -> None:
        self.emits: list[tuple[Any, Any, dict[str, Any]]] = []

    def emit(self, values: Any, stream: Any = None, **kwargs: Any) -> list[int]:
        self.emits.append((values, stream, kwargs))
        task = kwargs.get("direct_task")
        return [7] if task is None else [task]

    def report_error(self, error: Any) -> None:
        raise AssertionError(error)


def test_the_task_ids_of_an_emit_after_a_direct_emit_are_its_own() -> None:
    inst = Overriding(input_stream=io.BytesIO(), output_stream=io.BytesIO(), rdb_signal=None)
    inst.logger = logging.getLogger("test.overriding")
    host = Host()
    _wire(host, inst, spout=True, held=False)
    assert inst.emit(["a"], direct_task=3, need_task_ids=True) == [3]
    assert inst.emit(["b"], need_task_ids=True) == [7]
    assert inst.emit(["c"], direct_task=4, need_task_ids=False) is None
    assert inst.emit(["d"], need_task_ids=True) == [7]
    assert [(values, kwargs["direct_task"]) for values, _, kwargs in host.emits] == \
        [(["a"], 3), (["b"], None), (["c"], 4), (["d"], None)]


class Plain(pystorm.Bolt):
    """pystorm's defaults, its own emit: squall's fast path."""


class BoltHost(Host):
    """The squall bolt hosting it."""

    def ack(self, tup: Any) -> None: ...

    def fail(self, tup: Any) -> None: ...


def test_an_in_process_bolt_may_ask_for_task_ids_or_emit_direct() -> None:
    """It raised TypeError ('NoneType' object is not iterable) and failed every tuple."""
    inst = Plain(input_stream=io.BytesIO(), output_stream=io.BytesIO(), rdb_signal=None)
    inst.logger = logging.getLogger("test.plain")
    host = BoltHost()
    _wire(host, inst, spout=False, held=False)
    assert inst.emit(["a"], need_task_ids=True) == [7]
    assert inst.emit(["b"], direct_task=3) == [3]
    # no anchors given: squall anchors them to the tuple in process, as auto_anchor says
    assert [(values, kwargs.get("anchors"), kwargs["direct_task"], kwargs["need_task_ids"])
            for values, _, kwargs in host.emits] == [(["a"], None, None, True),
                                                     (["b"], None, 3, False)]


def test_an_in_process_bolt_may_anchor_to_any_iterable_of_tuples() -> None:
    """As pystorm, which takes any iterable: a generator was read by the check for ids, and
    squall's emit got it empty (the emit went out unanchored)."""
    from squall.api.tuple import Source, Tuple
    inst = Plain(input_stream=io.BytesIO(), output_stream=io.BytesIO(), rdb_signal=None)
    inst.logger = logging.getLogger("test.plain")
    host = BoltHost()
    _wire(host, inst, spout=False, held=False)
    src = Source("s", "default", ("v",))
    a, b = Tuple((1,), 1, src, 5, (9,)), Tuple((2,), 1, src, 6, (9,))
    inst.emit(["x"], anchors=(t for t in [a, b]))
    inst.emit(["y"], anchors={a})
    assert [list(kwargs["anchors"]) for _, _, kwargs in host.emits] == [[a, b], [a]]
