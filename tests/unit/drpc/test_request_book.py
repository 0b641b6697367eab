"""The DRPC server's request book: a request fetched and answered, timeouts, bad calls."""
from __future__ import annotations

import threading

import pytest

from squall.drpc import Call, Caller, DRPCServer
from squall.drpc.requests import RequestBook
from squall.errors import DRPCError

CALLER = Caller("grpc", "ipv4:127.0.0.1:1", {})


def test_a_fetched_request_gets_its_result() -> None:
    book = RequestBook(timeout=30)
    out: list[str] = []
    caller = threading.Thread(target=lambda: out.append(book.execute("count", "a b")))
    caller.start()
    (request_id, args), = book.fetch("count", 10, wait=30)
    assert args == "a b"
    assert book.functions()[0]["in_flight"] == 1
    assert book.result(request_id, "[[2]]")
    caller.join(30)
    assert out == ["[[2]]"]
    assert not book.result(request_id, "[[3]]")      # answered already


def test_an_unserved_request_times_out_with_a_clear_error() -> None:
    book = RequestBook(timeout=0.05)
    with pytest.raises(DRPCError, match=r"timed out after 0.05 s.*no topology has fetched"):
        book.execute("nobody", "x")
    assert book.fetch("nobody", 1, wait=0) == []       # the timed-out request is gone


def test_a_failed_request_raises_for_its_caller() -> None:
    book = RequestBook(timeout=30)
    errors: list[Exception] = []

    def call() -> None:
        try:
            book.execute("f", "x")
        except DRPCError as exc:
            errors.append(exc)
    t = threading.Thread(target=call)
    t.start()
    (request_id, _), = book.fetch("f", 1, wait=30)
    assert book.fail(request_id, "boom")
    t.join(30)
    assert "failed: boom" in str(errors[0])


@pytest.mark.parametrize("function", ["", "a/b", "x" * 300])
def test_bad_function_names_are_refused(function: str) -> None:
    server = DRPCServer({"drpc.request.timeout.secs": 1})
    with pytest.raises(DRPCError, match="bad DRPC function name"):
        server.handle(Call("execute", function=function, args="x"), CALLER)
    with pytest.raises(DRPCError, match="unknown DRPC call"):
        server.handle(Call("nope"), CALLER)
