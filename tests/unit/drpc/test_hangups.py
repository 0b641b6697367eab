"""Watching a waiting HTTP caller's connection: a peer that closes or resets it has hung up;
one that stays connected, however quiet, has not; a socket no longer watched calls nothing."""
from __future__ import annotations

import select
import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from squall.drpc.hangups import HangupWatch
from squall.testing.waiting import wait_until


@pytest.fixture
def watch() -> Iterator[HangupWatch]:
    w = HangupWatch()
    yield w
    w.close()


def _pair() -> tuple[socket.socket, socket.socket]:
    """(server side, client side) of a TCP connection over 127.0.0.1."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname(), timeout=30)
        server, _ = listener.accept()
    return server, client


@pytest.mark.parametrize("how", ["close", "reset", "half-close"])
def test_a_peer_that_hangs_up_calls_back_once(watch: HangupWatch, how: str) -> None:
    server, client = _pair()
    called = threading.Event()
    calls: list[int] = []

    def hung_up() -> None:
        calls.append(1)
        called.set()
    w = watch.watch(server, hung_up)
    assert w is not None and not w.hung_up
    if how == "reset":           # linger 0: close sends a RST
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    if how == "half-close":
        client.shutdown(socket.SHUT_WR)
    else:
        client.close()
    assert called.wait(30)
    assert w.hung_up and calls == [1]
    watch.unwatch(w)
    server.close()
    client.close()


def test_a_quiet_peer_is_not_gone_and_an_unwatched_one_calls_nothing(
        watch: HangupWatch) -> None:
    """A quiet caller stays watched; one unwatched (answered) then closed calls nothing; the
    watcher still notices the next hang-up (it did not stop at the one it ignored)."""
    quiet, quiet_client = _pair()
    answered, answered_client = _pair()
    gone, gone_client = _pair()
    called: list[str] = []
    w_quiet = watch.watch(quiet, lambda: called.append("quiet"))
    w_answered = watch.watch(answered, lambda: called.append("answered"))
    w_gone = watch.watch(gone, lambda: called.append("gone"))
    assert w_quiet and w_answered and w_gone
    watch.unwatch(w_answered)
    answered_client.close()
    gone_client.close()
    wait_until(lambda: called == ["gone"], timeout=30, message=lambda: f"called {called}")
    assert not w_quiet.hung_up and not w_answered.hung_up
    quiet_client.close()
    wait_until(lambda: called == ["gone", "quiet"], timeout=30, message=lambda: f"{called}")
    for s in (quiet, answered, gone):
        s.close()


def test_a_closed_watch_watches_nothing() -> None:
    w = HangupWatch()
    w.close()
    server, client = _pair()
    assert w.watch(server, lambda: None) is None
    server.close()
    client.close()


@pytest.mark.skipif(not hasattr(select, "POLLRDHUP"), reason="a FIN behind unread bytes "
                    "is seen with POLLRDHUP only (Linux)")
def test_a_peer_that_sends_more_then_closes_has_hung_up(watch: HangupWatch) -> None:
    """A pipelined request (bytes the handler has not read) does not hide the close after it."""
    server, client = _pair()
    called = threading.Event()
    w = watch.watch(server, called.set)
    client.sendall(b"GET /drpc/f/next HTTP/1.1\r\n\r\n")
    client.close()
    assert called.wait(30) and w is not None and w.hung_up
    watch.unwatch(w)
    server.close()
