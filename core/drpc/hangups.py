"""Noticing HTTP DRPC callers that hang up while they wait for their result.

A gRPC caller that gives up ends its call, and gRPC runs the callback its ``execute``
registered (``context.add_callback``). HTTP has no such signal, so the HTTP front watches the
connection of each caller while it waits: :class:`HangupWatch` runs one thread for the whole
front that polls those sockets and calls a caller's callback when its peer has closed the
connection (a FIN: the client closed its socket, after its own timeout or ``curl -m``) or reset
it. Its request is then dropped and its caller slot freed at once, as for gRPC.

What counts as hanging up:

- A client that stays connected and sends nothing, however long it waits, is not gone.
- A client that closes or resets its connection is gone.
- A client that half-closes (``shutdown(SHUT_WR)``) after sending its request looks the same
  as one that closed (a FIN either way) and is taken as gone: an HTTP caller keeps its
  connection open until its answer (curl, browsers, ``urllib``, ``requests`` do). The front
  still answers it, in one line, why its request was dropped.
- A client that sends more bytes while it waits (a pipelined request) is not watched any
  further where the platform cannot see a FIN behind unread bytes (no ``POLLRDHUP``, not
  Linux): it keeps its slot until its result or its timeout.

Thread-safe: :meth:`HangupWatch.watch` and :meth:`HangupWatch.unwatch` are called from the
front's handler threads; the callbacks run on the watcher's thread and must not block.
"""
from __future__ import annotations

import logging
import select
import socket
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

#: the peer shut down its sending side (Linux): seen even with unread bytes before the FIN
_RDHUP = getattr(select, "POLLRDHUP", 0)
#: what a watched socket is polled for: the FIN itself where the platform says so, else
#: readability (the bytes, or the end, a peek tells apart)
_EVENTS = _RDHUP or select.POLLIN
#: events that mean the connection is over whatever is still unread
_GONE = select.POLLHUP | select.POLLERR | _RDHUP


class Watch:
    """One caller's connection being watched; ``hung_up`` says whether it hung up."""

    __slots__ = ("callback", "fd", "hung_up", "sock")

    def __init__(self, sock: socket.socket, callback: Callable[[], None]) -> None:
        self.sock = sock
        self.fd = sock.fileno()
        self.callback = callback
        self.hung_up = False


class HangupWatch:
    """The sockets of callers waiting for their result, polled by one thread (started at the
    first :meth:`watch`) until :meth:`close`."""

    def __init__(self, name: str = "squall-drpc-hangups") -> None:
        self._name = name
        self._lock = threading.Lock()
        self._watched: dict[int, Watch] = {}
        self._changed = False
        self._closed = False
        self._thread: threading.Thread | None = None
        self._wake_r: socket.socket | None = None
        self._wake_w: socket.socket | None = None

    def watch(self, sock: socket.socket, callback: Callable[[], None]) -> Watch | None:
        """Call ``callback`` (once, on the watcher's thread) when the peer of ``sock`` hangs
        up, until :meth:`unwatch`. ``None`` when the watch is closed (the server stops)."""
        watch = Watch(sock, callback)
        with self._lock:
            if self._closed:
                return None
            if self._thread is None:
                self._wake_r, self._wake_w = socket.socketpair()
                self._wake_r.setblocking(False)
                self._wake_w.setblocking(False)
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._watched[watch.fd] = watch
            self._changed = True
        self._wake()
        return watch

    def unwatch(self, watch: Watch) -> None:
        """Stop watching (before the handler answers on the socket or closes it). After it
        returns, ``watch``'s callback runs only if the hang-up was seen before (then
        ``watch.hung_up`` is set already)."""
        with self._lock:
            if self._watched.get(watch.fd) is watch:
                del self._watched[watch.fd]
                self._changed = True
        # the poller forgets the fd at its next wake: a stale fd is no harm meanwhile (no
        # callback of an unwatched socket is called), so no wake for each answered call

    def close(self) -> None:
        """Stop watching every socket and end the thread (its callbacks are not called)."""
        with self._lock:
            self._closed = True
            self._watched.clear()
            thread = self._thread
        if thread is not None:
            self._wake()
            thread.join(5)
            for end in (self._wake_r, self._wake_w):
                if end is not None:
                    end.close()

    def _wake(self) -> None:
        try:
            if self._wake_w is not None:
                self._wake_w.send(b"\0")
        except (BlockingIOError, OSError):
            pass                        # full: it will wake anyway

    # -- the watcher's thread ----------------------------------------------------------------
    def _run(self) -> None:
        assert self._wake_r is not None
        wake = self._wake_r.fileno()
        poller = select.poll()
        poller.register(wake, select.POLLIN)
        polled: set[int] = set()
        while True:
            with self._lock:
                if self._closed:
                    return
                if self._changed:
                    self._changed = False
                    self._sync(poller, polled)
            for fd, events in poller.poll():
                if fd == wake:
                    self._drain()
                else:
                    self._event(poller, polled, fd, events)

    def _sync(self, poller: select.poll, polled: set[int]) -> None:
        """(lock held) Poll exactly the sockets watched now."""
        for fd in polled - self._watched.keys():
            _forget(poller, fd)
        for fd in self._watched.keys() - polled:
            poller.register(fd, _EVENTS)
        polled.clear()
        polled.update(self._watched)

    def _drain(self) -> None:
        assert self._wake_r is not None
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, OSError):
            pass

    def _event(self, poller: select.poll, polled: set[int], fd: int, events: int) -> None:
        """``events`` of ``fd`` polled: the watched caller on it hung up? They may be stale
        (a caller answered, its fd closed and given to the next caller between the poll and
        now), so its socket is asked again, now, with the lock held: it is not closed meanwhile
        (the handler unwatches it first)."""
        with self._lock:
            watch = self._watched.get(fd)
            gone = None if watch is None else _hung_up(watch.sock)
            if gone is False:
                return              # nothing to tell (yet): keep watching
            # unwatched (a stale fd), hung up, or more bytes came and nothing more can be
            # told: stop polling it
            _forget(poller, fd)
            polled.discard(fd)
            if watch is None:
                return
            del self._watched[fd]
            if not gone:
                log.debug("DRPC http caller %s sent more bytes while it waits: not watched "
                          "for hang-ups any more", _peer(watch.sock))
                return
            watch.hung_up = True
        try:
            watch.callback()
        except Exception:           # report, keep watching the others
            log.exception("DRPC: the hang-up callback of a caller failed")


def _hung_up(sock: socket.socket) -> bool | None:
    """Whether the peer of ``sock`` hung up, asked now: ``None`` when that cannot be told
    any more (it sent more bytes, and a FIN behind them cannot be seen; or ``sock`` is
    closed)."""
    if sock.fileno() < 0:
        return None
    now = select.poll()
    now.register(sock.fileno(), _EVENTS)
    events = 0
    for _, got in now.poll(0):
        events |= got
    if events & select.POLLNVAL:
        return None
    if events & _GONE:
        return True
    if not events & select.POLLIN:
        return False
    try:
        peeked = sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:                 # reset
        return True
    return True if not peeked else None


def _peer(sock: socket.socket) -> str:
    try:
        return str(sock.getpeername()[0])
    except OSError:
        return "?"


def _forget(poller: select.poll, fd: int) -> None:
    try:
        poller.unregister(fd)
    except KeyError:
        pass
