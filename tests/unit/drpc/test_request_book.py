"""The DRPC server's request book: a request fetched and answered, timeouts, bad calls; leases
of fetched requests, requests given back, callers that give up, a topology's reasons."""
from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from squall.drpc import Call, Caller, DRPCServer
from squall.drpc import requests
from squall.drpc.requests import RequestBook
from squall.errors import ConfigError, DRPCError
from squall.testing.waiting import wait_until

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


# -- leases: a topology holds what it fetched only while it says so --------------------------
def _caller(book: RequestBook, function: str, args: str, on_end: Any = None
            ) -> tuple[threading.Thread, list[str]]:
    """A caller of ``book.execute`` on a thread of its own: its result, or its error's text."""
    out: list[str] = []

    def call() -> None:
        try:
            out.append(book.execute(function, args, on_end=on_end))
        except DRPCError as exc:
            out.append(f"DRPCError: {exc}")
    t = threading.Thread(target=call, daemon=True)
    t.start()
    return t, out


def _fetch(book: RequestBook, function: str, n: int, holder: str) -> list[tuple[str, str]]:
    """``n`` requests of ``function`` as a topology's task ``holder`` fetches them."""
    got: list[tuple[str, str]] = []

    def fetched() -> bool:
        got.extend(book.fetch(function, n - len(got), 0, holder))
        return len(got) == n
    wait_until(fetched, timeout=30, message=lambda: f"fetched {got}")
    return got


def test_a_request_given_back_is_first_for_the_next_topology() -> None:
    """A deactivated or stopping topology requeues what it had not started: another takes it
    (before any later request), and the one that gave it back can no longer answer for
    another's."""
    book = RequestBook(timeout=30)
    first, out1 = _caller(book, "f", "one")
    (id1, _), = _fetch(book, "f", 1, "a")
    second, out2 = _caller(book, "f", "two")
    wait_until(lambda: book.functions()[0]["waiting"] == 1, timeout=30)
    assert book.requeue("b", [id1]) == 0            # not b's to give back
    assert book.requeue("a", [id1]) == 1
    info = book.functions()[0]
    assert (info["waiting"], info["in_flight"]) == (2, 0)
    assert [a for _, a in book.fetch("f", 1, 0, "b")] == ["one"]
    assert book.requeue("a", [id1]) == 0            # b holds it now
    (id2, args2), = book.fetch("f", 1, 0, "b")
    assert args2 == "two"
    assert book.result(id1, "[[1]]") and book.result(id2, "[[2]]")
    for t in (first, second):
        t.join(30)
    assert (out1, out2) == (["[[1]]"], ["[[2]]"])


def test_a_lease_run_out_queues_an_unstarted_request_again_and_fails_a_started_one() -> None:
    """A worker killed with kill -9 renews nothing: what it had not started goes to another
    topology, and the caller of what it had started hears why at once."""
    book = RequestBook(timeout=30, lease=5)
    t1, out1 = _caller(book, "f", "started")
    (started, _), = _fetch(book, "f", 1, "dead")
    t2, out2 = _caller(book, "f", "queued")
    (queued, _), = _fetch(book, "f", 1, "dead")
    assert book.renew("dead", [queued], [started]) == 2
    assert book.renew("other", [queued], []) == 0
    assert book.expire() == (0, 0)                  # within its lease
    assert book.expire(now=time.monotonic() + 60) == (1, 1)
    t1.join(30)
    assert len(out1) == 1 and "failed: the topology that started it stopped answering" in \
        out1[0] and "drpc.fetch.lease.secs" in out1[0]
    (again, args), = book.fetch("f", 1, 0, "alive")
    assert (again, args) == (queued, "queued")
    assert book.result(queued, "[[2]]")
    t2.join(30)
    assert out2 == ["[[2]]"]


def test_a_fetch_takes_no_more_bytes_than_a_message_holds() -> None:
    """Requests whose args together are over drpc.max.message.bytes come a reply at a time
    (one reply with them all would not reach the topology, and they would be lost)."""
    book = RequestBook(timeout=30)
    callers = [_caller(book, "f", c * 600) for c in "abc"]
    wait_until(lambda: book.functions() and book.functions()[0]["waiting"] == 3, timeout=30)
    one = book.fetch("f", 10, 0, "h", max_bytes=1000)
    two = book.fetch("f", 10, 0, "h", max_bytes=2000)
    assert ([len(a) for _, a in one], [len(a) for _, a in two]) == ([600], [600, 600])
    for request_id, _ in one + two:
        assert book.result(request_id, "[]")
    for t, out in callers:
        t.join(30)
        assert out == ["[]"]


# -- callers that give up ----------------------------------------------------------------------
def test_a_caller_deadline_shorter_than_the_servers_bounds_the_wait() -> None:
    book = RequestBook(timeout=600)
    started = time.monotonic()
    with pytest.raises(DRPCError, match=r"timed out after 1.2 s \(the caller's deadline\)"):
        book.execute("nobody", "x", timeout=0.2)
    assert time.monotonic() - started < 30
    assert book.functions() == []               # nothing of it stays


def test_a_caller_that_gives_up_frees_its_request_and_its_server_slot() -> None:
    """drpc.worker.threads 1: a gRPC caller that cancels (or whose deadline passes) ends its
    call, and its slot serves the next caller at once, not after drpc.request.timeout.secs."""
    server = DRPCServer({"drpc.request.timeout.secs": 600, "drpc.worker.threads": 1})
    ended: list[Any] = []
    errors: list[Exception] = []

    def call() -> None:
        try:
            server.handle(Call("execute", function="f", args="x", timeout=600,
                               on_end=ended.append), CALLER)
        except DRPCError as exc:
            errors.append(exc)
    t = threading.Thread(target=call, daemon=True)
    t.start()
    wait_until(lambda: ended and server.functions()[0]["waiting"] == 1, timeout=30)
    with pytest.raises(DRPCError, match="busy"):
        server.handle(Call("execute", function="f", args="y"), CALLER)
    ended[0]()                      # the caller's call ended: gRPC runs the callback
    t.join(30)
    assert not t.is_alive() and "its caller gave up" in str(errors[0])
    assert server.functions() == []
    got: list[str] = []
    t = threading.Thread(target=lambda: got.append(server.handle(
        Call("execute", function="f", args="z"), CALLER)), daemon=True)
    t.start()                       # not busy: the slot is free again
    (request_id, args), = _fetch(server.book, "f", 1, "h")
    assert args == "z" and server.book.result(request_id, "[[1]]")
    t.join(30)
    assert got == ["[[1]]"]


# -- a topology's reason for failing a request -------------------------------------------------
@pytest.mark.parametrize("reason,said", [
    ("its batch failed 3 times (the topology's errors say why)",
     "its batch failed 3 times (the topology's errors say why)"),
    ("", "the topology failed the request"),
    ("two\nlines", "two lines"),
    ("x" * 5000, "x" * 1000 + "...")])
def test_the_topologys_reason_reaches_the_caller_on_one_line(reason: str, said: str) -> None:
    server = DRPCServer({"drpc.request.timeout.secs": 30})
    t, out = _caller(server.book, "f", "a")
    (request_id, _), = _fetch(server.book, "f", 1, "h")
    assert server.handle(Call("fail", request_id=request_id, reason=reason), CALLER)
    t.join(30)
    assert out == [f"DRPCError: DRPC request f('a') failed: {said}"]


@pytest.mark.parametrize("key", ["drpc.max.message.bytes", "drpc.fetch.lease.secs"])
@pytest.mark.parametrize("value", [0, -1, "big"])
def test_a_bad_limit_is_one_clear_error(key: str, value: object) -> None:
    with pytest.raises(ConfigError, match=rf"{key} must be a number above 0, got"):
        DRPCServer({key: value})


# -- nothing of a request stays after it ---------------------------------------------------------
def test_names_callers_made_up_leave_nothing_once_their_requests_end() -> None:
    """Any HTTP client can name functions: once their requests time out, are answered,
    failed or given up, the server lists (and keeps) none of them."""
    book = RequestBook(timeout=0.01)
    for i in range(200):
        with pytest.raises(DRPCError, match="timed out"):
            book.execute(f"made-up-{i}", "x")
    assert book.functions() == []
    book.timeout = 30
    ended: list[Any] = []
    callers = [_caller(book, "abandoned", "x", on_end=ended.append)]
    callers += [_caller(book, name, "x") for name in ("answered", "failed")]
    wait_until(lambda: ended and len(book.functions()) == 3, timeout=30,
               message=lambda: f"{book.functions()}")
    ended[0]()                                  # its caller gave up before any fetch
    (answered, _), = _fetch(book, "answered", 1, "h")
    (failed, _), = _fetch(book, "failed", 1, "h")
    assert book.result(answered, "[]") and book.fail(failed, "no")
    for t, _ in callers:
        t.join(30)
    assert [out for _, out in callers] == [
        ["DRPCError: DRPC request abandoned('x') failed: its caller gave up"], ["[]"],
        ["DRPCError: DRPC request failed('x') failed: no"]]
    # what stays is when a topology fetched, and only that
    assert [(f["function"], f["waiting"], f["in_flight"]) for f in book.functions()] == [
        ("answered", 0, 0), ("failed", 0, 0)]


def test_the_functions_topologies_fetched_are_remembered_a_while_and_a_bounded_number(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What an operator sees of functions with no request: those a topology fetched lately,
    at most MAX_FETCHED_FUNCTIONS (the least recently fetched go first)."""
    book = RequestBook(timeout=30)
    for i in range(requests.MAX_FETCHED_FUNCTIONS + 10):
        book.fetch(f"f{i:05}", 1, 0, "h")
    book.fetch("f00000", 1, 0, "h")         # fetched again: the most recent now
    names = [f["function"] for f in book.functions()]
    assert len(names) == requests.MAX_FETCHED_FUNCTIONS
    assert "f00000" in names and "f00001" not in names and "f00011" in names
    assert all(0 <= f["last_fetch_secs_ago"] < 60 for f in book.functions())
    monkeypatch.setattr(requests, "FETCH_MEMORY_SECS", 0.05)
    wait_until(lambda: book.functions() == [], timeout=30, message="old fetches forgotten")
