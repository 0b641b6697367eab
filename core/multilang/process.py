"""The subprocess of a shell component: one run of it (:class:`ShellProcess`), and the part
that keeps one running, restarting it when it dies (:class:`ShellHost`).

Threads, per running subprocess: a *reader* (reads stdout, decodes messages and hands them
to the component's ``on_messages``; on end of file it calls ``on_exit`` once), a *writer*
(writes what :meth:`ShellProcess.send` queued, so no caller ever blocks on a full pipe, and
a reader answering task ids cannot deadlock against a writer blocked on a subprocess that is
itself blocked writing) and a *stderr* thread (reads 64 KB at a time, each line to the
component's logger at INFO, a line over ``STDERR_LINE_MAX`` cut in the middle; the last few
are kept, with the first line that names an error, and an exit nobody asked for quotes them
in its reason).

Every :class:`ShellHost` of a worker is registered under ``(topology id, worker port)``;
:func:`stop_worker` (the ``squall_worker_stopping`` hook, and ``squall_worker_stop`` after it)
stops those still running when the worker shuts down, so no subprocess outlives its worker,
and no component's thread is held at shutdown by a call waiting on its subprocess.

A worker that dies without stopping them (``kill -9``, a crash) does not leave them running
either: in a worker a supervisor runs, the handshake's ``pidDir`` is the worker's own
``pids/`` directory (:func:`use_pid_dir`), where each subprocess is registered as it starts,
and the supervisor stops every process registered there with the worker (as Storm's does);
and on Linux each subprocess gets SIGKILL when the process that started it dies
(``PR_SET_PDEATHSIG``; all are started from one thread that lives as long as the process, as
the signal comes when the *thread* that forked ends), with or without a supervisor. That
signal reaches the subprocess alone, not what it started; the supervisor signals the process
group of each process registered there that still runs.
"""
from __future__ import annotations

import logging
import os
import queue
import re
import signal
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from squall.errors import MultilangError
from squall.multilang.protocol import Codec

log = logging.getLogger(__name__)
#: bytes a subprocess's writer may hold before a caller of ``wait_room`` waits
WRITE_BACKLOG = 1 << 20
#: how long a stopping subprocess gets to leave after its stdin closes, then after SIGTERM
#: (at most: a quarter of ``supervisor.worker.shutdown.sleep.secs`` each, so a worker stops
#: its subprocesses well before its supervisor's SIGKILL; see :func:`stop_grace`)
STOP_GRACE = 2.0
SHUTDOWN_SLEEP_KEY = "supervisor.worker.shutdown.sleep.secs"
#: restart delays after a subprocess that died young (doubling from the first, to the last)
BACKOFF_FIRST, BACKOFF_MAX = 0.5, 30.0
#: how much of a subprocess's stderr an unexpected exit's reason quotes (its last lines: a
#: traceback's last lines say why, and a user at WARNING sees only the reason, not the
#: INFO lines the stderr thread logs)
STDERR_TAIL_LINES, STDERR_TAIL_CHARS = 5, 1000
#: a stderr line that names an error (``Error: Cannot find module 'x'`` from node,
#: ``KeyError: 'x'``, ``... (LoadError)``): the first one is quoted too when the tail lacks
#: it (node ends a crash with its stack and version, a chained traceback with the last error)
ERROR_LINE = re.compile(r"\b\w*(?:Error|Exception)\b")
#: how much of that first error line is quoted
STDERR_FIRST_ERROR_CHARS = 300
#: the longest stderr line logged whole: of a longer one (a dump without a newline, a progress
#: bar redrawn with '\r') its first STDERR_LINE_MAX bytes and its last STDERR_TAIL_CHARS are
#: logged, with how many bytes between were cut, so the stderr thread never holds more
STDERR_LINE_MAX = 1 << 16
#: how long an exit's reason waits for the rest of the stderr of a subprocess that exited
#: (the pipe ends when the last of its process group is gone, which SIGKILL sees to)
STDERR_WAIT = 1.0
#: a subprocess that lived this long resets the restart delay
STABLE_SECS = 10.0
#: how long a call or tuples wait for a subprocess being restarted before they give up (so
#: one that cannot start fails its bolt's tuples about once a second, not as fast as they come)
RESTART_WAIT = 1.0

_hosts_lock = threading.Lock()
_hosts: dict[tuple[str, Any], set[ShellHost]] = {}
#: the pids directory of the worker this process runs (None: no supervisor's worker)
_worker_pid_dir: str | None = None


def use_pid_dir(path: str | os.PathLike[str] | None) -> None:
    """Make ``path`` (a worker's ``workers/<id>/pids``, which its supervisor reads when it
    stops the worker) the handshake's ``pidDir`` of every shell subprocess this process
    starts from now on, each registered there as it starts; None: a directory of each
    task's own, removed when it stops (a LocalCluster's)."""
    global _worker_pid_dir
    _worker_pid_dir = None if path is None else str(path)


def stop_grace(conf: dict[str, Any]) -> float:
    """How long each step of a subprocess's stop may take under ``conf``: ``STOP_GRACE``, or
    a quarter of ``supervisor.worker.shutdown.sleep.secs`` when that is less (the two
    steps then take half of the time a worker has between SIGTERM and SIGKILL)."""
    try:
        sleep = float(conf.get(SHUTDOWN_SLEEP_KEY))    # type: ignore[arg-type]
    except (TypeError, ValueError):
        return STOP_GRACE
    return max(0.0, min(STOP_GRACE, sleep / 4))


class _Spawner:
    """Starts the subprocesses on one daemon thread, which lives as long as the process:
    ``PR_SET_PDEATHSIG`` fires when the thread that forked a child ends, and the threads
    that start subprocesses (a component's, a dead subprocess's reader) may end long before
    the process does. Linux only; elsewhere :meth:`popen` is ``Popen`` in the caller."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[tuple[dict[str, Any], Future[subprocess.Popen[bytes]]]] \
            = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._prctl: Any = None
        self._usable = sys.platform.startswith("linux")

    def popen(self, **kwargs: Any) -> subprocess.Popen[bytes]:
        if not self._usable:
            return subprocess.Popen(**kwargs)
        with self._lock:
            if self._thread is None or not self._thread.is_alive():     # a forked process
                try:
                    import ctypes
                    prctl = ctypes.CDLL(None, use_errno=True).prctl
                    prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
                    prctl.restype = ctypes.c_int
                except (OSError, AttributeError):
                    self._usable = False
                    return subprocess.Popen(**kwargs)
                self._prctl = prctl
                self._jobs = queue.SimpleQueue()
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="squall-shell-spawner")
                self._thread.start()
        done: Future[subprocess.Popen[bytes]] = Future()
        self._jobs.put((kwargs, done))
        return done.result()

    def _run(self) -> None:
        jobs, prctl, parent = self._jobs, self._prctl, os.getpid()

        def die_with_parent() -> None:      # in the child, between fork and exec
            prctl(1, int(signal.SIGKILL), 0, 0, 0)      # PR_SET_PDEATHSIG
            if os.getppid() != parent:                  # it died before that: go now
                os._exit(1)
        while True:
            kwargs, done = jobs.get()
            try:
                done.set_result(subprocess.Popen(**kwargs, preexec_fn=die_with_parent))
            except BaseException as exc:    # handed to the caller, as Popen would raise it
                done.set_exception(exc)


_spawner = _Spawner()


class StderrLines:
    """Splits a subprocess's stderr, fed as it is read, into lines at ``\\n`` (decoded, what
    is not UTF-8 as ``\\xNN``). A line longer than ``STDERR_LINE_MAX`` +
    ``STDERR_TAIL_CHARS`` bytes comes out as its first ``STDERR_LINE_MAX`` bytes, ``" ... (N
    bytes cut) ... "`` and its last ``STDERR_TAIL_CHARS`` bytes: however long a line runs
    without its end, no more than that is held. Used by one thread."""

    __slots__ = ("_head", "_end", "_cut")

    def __init__(self) -> None:
        self._head = bytearray()
        self._end = bytearray()
        self._cut = 0

    def feed(self, data: bytes) -> list[str]:
        """The lines ``data`` ends (the start of the first one may have come before)."""
        parts = data.split(b"\n")
        out = []
        for part in parts[:-1]:
            self._add(part)
            out.append(self._take())
        self._add(parts[-1])
        return out

    def end(self) -> list[str]:
        """At end of file: the last line, when it had no ``\\n``."""
        return [self._take()] if self._head or self._end else []

    def _add(self, part: bytes) -> None:
        head = self._head
        if not self._end and len(head) + len(part) <= STDERR_LINE_MAX:     # most lines
            head += part
            return
        room = STDERR_LINE_MAX - len(head)
        if room > 0:
            head += part[:room]
            part = part[room:]
        end = self._end
        end += part
        over = len(end) - STDERR_TAIL_CHARS
        if over > 0:
            self._cut += over
            del end[:over]

    def _take(self) -> str:
        head, end, cut = self._head, self._end, self._cut
        if cut:
            text = (f"{head.decode(errors='backslashreplace')} ... ({cut} bytes cut) ... "
                    f"{end.decode(errors='backslashreplace')}")
        else:
            text = (head + end).decode(errors="backslashreplace")
        self._head, self._end, self._cut = bytearray(), bytearray(), 0
        return text


class ShellProcess:
    """One run of a subprocess speaking the multi-lang protocol.

    ``on_messages(proc, messages)`` is called on the reader thread for every batch of decoded
    messages; ``on_exit(proc, reason)`` once, on the reader thread, when the subprocess's
    stdout ends (it exited, was killed, or sent bytes that are not messages). ``last_heard``
    is the monotonic time of the last whole message read (bytes without an end are no
    heartbeat). It runs in a process group of its own, which ``kill`` and ``close`` signal.
    With ``pid_dir``, it is registered there (a file named by its pid, holding its start
    time) from its start until it is reaped."""

    def __init__(self, argv: Sequence[str], cwd: str, codec: Codec, logger: logging.Logger,
                 on_messages: Callable[[ShellProcess, list[Any]], None],
                 on_exit: Callable[[ShellProcess, str], None],
                 pid_dir: str | None = None) -> None:
        self.argv = list(argv)
        self.codec = codec
        self.logger = logger
        self._on_messages = on_messages
        self._on_exit = on_exit
        self._handshake: list[Any] = []
        self._shook = threading.Event()
        self._out: deque[bytes] = deque()
        self._backlog = 0
        self._cond = threading.Condition()
        self._kill_reason: str | None = None
        self._stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._stderr_first_error: str | None = None
        self._stderr_ended = threading.Event()
        self.alive = True
        self.pid = 0
        self.last_heard = time.monotonic()
        try:
            # a process group of its own: a kill reaches what it started too (a wrapper
            # script's child, a pool of workers), which would else hold its stdout open,
            # outlive it and keep the task waiting for an end that never comes
            self.proc = _spawner.popen(args=self.argv, cwd=cwd, stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       bufsize=0, start_new_session=True)
        except OSError as exc:
            self.alive = False
            raise MultilangError(f"cannot start {self.argv} in {cwd}: {exc}") from exc
        self.pid = self.proc.pid
        self._pid_file: Path | None = None
        if pid_dir is not None:
            from squall.daemon.supervisor_local import register_pid   # the supervisor's format
            try:
                register_pid(Path(pid_dir), self.pid)
                self._pid_file = Path(pid_dir) / str(self.pid)
            except OSError as exc:      # it runs on; only a worker's death may leave it
                log.warning("cannot register subprocess %d in %s: %s", self.pid, pid_dir, exc)
        name = f"squall-shell-{self.proc.pid}"
        for target, suffix in ((self._read, "out"), (self._write, "in"),
                               (self._log_stderr, "err")):
            threading.Thread(target=target, name=f"{name}-{suffix}", daemon=True).start()

    # -- handshake -------------------------------------------------------------------------------
    def greet(self, conf: dict[str, Any], pid_dir: str, context: dict[str, Any]) -> None:
        """Send the handshake (conf, pid dir, context); :meth:`answered` waits for its
        answer."""
        message = {"conf": _jsonable(conf), "pidDir": pid_dir, "context": context}
        self.send(self.codec.encode(message))

    def answered(self, timeout: float, limit: float | None = None) -> None:
        """Wait up to ``timeout`` seconds for the answer to the handshake sent (``limit``:
        the whole time it had, for the reason); MultilangError (and the subprocess killed)
        if none comes or it is not the subprocess's pid."""
        if not self._shook.wait(timeout) or not self._handshake:
            reason = self._kill_reason or (f"did not answer the handshake within "
                                           f"{timeout if limit is None else limit:g} s"
                                           f"{self.unfinished()}")
            self.kill(reason)
            raise MultilangError(f"{self.argv}: {reason}")
        answer = self._handshake[0]
        if not isinstance(answer, dict) or not isinstance(answer.get("pid"), int):
            self.kill("answered the handshake without a pid")
            raise MultilangError(f"{self.argv}: answered the handshake with {answer!r}, "
                                 "not {\"pid\": N}")

    def unfinished(self) -> str:
        """For a timeout's reason: '' or, when the subprocess sent part of a message and
        not its end, what it sent."""
        held = self.codec.pending()
        if not held:
            return ""
        if self.codec.name == "json":
            return f"; it sent {held} bytes but no line 'end' after them"
        return f"; it sent {held} bytes that are no whole {self.codec.name} message"

    # -- writing -------------------------------------------------------------------------------
    def send(self, data: bytes) -> None:
        """Queue ``data`` for the subprocess's stdin; never blocks. Bytes sent to a dead
        subprocess are dropped (its ``on_exit`` is, or will be, called)."""
        with self._cond:
            if not self.alive:
                return
            self._out.append(data)
            self._backlog += len(data)
            self._cond.notify_all()

    def wait_room(self, limit: int = WRITE_BACKLOG) -> None:
        """Wait while more than ``limit`` bytes wait to be written (and it is alive)."""
        with self._cond:
            while self._backlog > limit and self.alive:
                self._cond.wait(0.5)

    def _write(self) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        fd = stdin.fileno()
        cond = self._cond
        while True:
            with cond:
                while not self._out and self.alive:
                    cond.wait()
                if not self.alive:
                    break
                data = b"".join(self._out)
                self._out.clear()
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            except OSError as exc:
                # a closed pipe: usually it exited (kill then says how, stderr included)
                exited = self._wait(STOP_GRACE) is not None
                self.kill(None if exited else
                          f"stopped reading its stdin ({exc.strerror or exc})")
                break
            with cond:
                self._backlog -= len(data)
                cond.notify_all()
        try:
            stdin.close()
        except OSError:
            pass

    # -- reading ---------------------------------------------------------------------------------
    def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        fd = stdout.fileno()
        feed = self.codec.feed
        reason = ""
        while True:
            try:
                data = os.read(fd, 1 << 16)
            except OSError as exc:
                reason = f"its stdout failed ({exc})"
                break
            if not data:
                break
            try:
                messages = feed(data)
            except MultilangError as exc:
                reason = f"broke the protocol: {exc}"
                break
            except Exception as exc:    # a decoder's error the codec let through: the same
                log.debug("decoding the output of %s (pid %d) failed", self.argv, self.pid,
                          exc_info=True)
                reason = f"broke the protocol: {exc.__class__.__name__}: {exc}"
                break
            if not messages:
                continue
            # heard from: a whole message (bytes without an end are no heartbeat)
            self.last_heard = time.monotonic()
            if not self._shook.is_set():
                self._handshake.append(messages.pop(0))
                self._shook.set()
                if not messages:
                    continue
            try:
                self._on_messages(self, messages)
            except Exception:
                log.exception("handling the messages of %s (pid %d) failed", self.argv,
                              self.pid)
        self.kill(reason or None)
        if self._pid_file is not None and self.proc.returncode is not None:
            self._pid_file.unlink(missing_ok=True)
        self._shook.set()
        self._on_exit(self, self._kill_reason or "exited")

    def _log_stderr(self) -> None:
        stderr = self.proc.stderr
        assert stderr is not None
        fd = stderr.fileno()
        lines = StderrLines()
        try:
            while True:
                try:
                    data = os.read(fd, 1 << 16)     # not a byte per call, as an unbuffered
                except OSError:                     # pipe's readline reads
                    break
                if not data:
                    break
                for text in lines.feed(data):
                    self._stderr_line(text)
            for text in lines.end():
                self._stderr_line(text)
        finally:
            stderr.close()
            self._stderr_ended.set()

    def _stderr_line(self, text: str) -> None:
        text = text.rstrip()
        if text:
            self.logger.info("%s", text)
            self._stderr_tail.append(text[-STDERR_TAIL_CHARS:])
            if self._stderr_first_error is None and ERROR_LINE.search(text):
                self._stderr_first_error = text.strip()[:STDERR_FIRST_ERROR_CHARS]

    def _exited(self, code: int | None) -> str:
        """The reason of an exit nobody asked for: its code and the last lines of its stderr
        (waiting up to ``STDERR_WAIT`` for the stderr thread to read them to the end)."""
        reason = f"exited with code {code}" if code is not None else "exited"
        self._stderr_ended.wait(STDERR_WAIT)
        text = " | ".join(list(self._stderr_tail))
        if not text:
            return reason
        if len(text) > STDERR_TAIL_CHARS:
            text = "..." + text[3 - STDERR_TAIL_CHARS:]
        first = self._stderr_first_error
        if first is not None and first not in text:
            return f"{reason}; its first error on stderr: {first}; its stderr ended with: {text}"
        return f"{reason}; its stderr ended with: {text}"

    # -- ending ----------------------------------------------------------------------------------
    def kill(self, reason: str | None = None) -> None:
        """Kill the subprocess now (SIGKILL) and stop writing to it; the first reason given
        is the one ``on_exit`` reports. Safe from any thread, any number of times."""
        with self._cond:
            if self._kill_reason is None and reason:
                self._kill_reason = reason
            self.alive = False
            self._cond.notify_all()
        self._signal(signal.SIGKILL)
        code = self._wait(STOP_GRACE)
        if self._kill_reason is None:
            exited = self._exited(code)     # waits for its stderr: not under the lock
            with self._cond:
                if self._kill_reason is None:
                    self._kill_reason = exited

    def close(self, grace: float | None = None) -> None:
        """Stop the subprocess politely: its stdin closes (pystorm and storm.py leave on end
        of file), then SIGTERM, then SIGKILL, each after ``grace`` seconds (default
        ``STOP_GRACE``)."""
        grace = STOP_GRACE if grace is None else grace
        with self._cond:
            if self._kill_reason is None:
                self._kill_reason = "stopped"
            self.alive = False
            self._cond.notify_all()
        if self._wait(grace) is None:
            self._signal(signal.SIGTERM)
            if self._wait(grace) is None:
                self.kill()
        else:
            self._signal(signal.SIGKILL)    # what it started and left behind

    def _signal(self, sig: int) -> None:
        """Send ``sig`` to the subprocess's process group (itself and what it started)."""
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):   # the group is gone already
            pass

    def _wait(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None


class ShellHost:
    """Keeps one subprocess of one shell task running: starts it (handshake included),
    restarts it after it dies (at once, or after a delay growing to BACKOFF_MAX while it
    keeps dying young), stops it for good on :meth:`stop`. The first start may be a
    :meth:`launch`: the subprocess starts and gets its handshake, and the first
    :meth:`ensure` waits for its answer, so the shell tasks of a worker, launched one after
    another as it builds them, start side by side (a component that loads for seconds
    would otherwise hold up the worker that many seconds per task).

    ``report(message)`` records an error of the component (called once per failed start);
    ``on_messages`` and ``on_exit`` are :class:`ShellProcess`'s; ``grace`` is each step of a
    subprocess's stop (:meth:`ShellProcess.close`). Thread-safe."""

    def __init__(self, *, argv: Sequence[str], cwd: str, codec: type[Any],
                 conf: dict[str, Any], context: dict[str, Any], timeout: float,
                 logger: logging.Logger, report: Callable[[str], None],
                 on_messages: Callable[[ShellProcess, list[Any]], None],
                 on_exit: Callable[[ShellProcess, str], None],
                 key: tuple[str, Any], grace: float | None = None) -> None:
        if not argv or not all(isinstance(a, str) for a in argv):
            raise MultilangError(f"command must be a non-empty list of strings, got {argv!r}")
        self.argv = list(argv)
        self.cwd = cwd
        self.codec = codec
        self.conf = conf
        self.context = context
        self.timeout = timeout
        self.logger = logger
        self.report = report
        self.on_messages = on_messages
        self.on_exit = on_exit
        self.key = key
        self.grace = grace
        self.current: ShellProcess | None = None
        self.stopped = False
        self._stopping = threading.Event()
        self.starts = 0
        self._lock = threading.RLock()
        self._retry_at = 0.0
        self._delay = 0.0
        self._started_at = 0.0
        #: a subprocess launched and greeted, and when its answer is due (None: none is);
        #: the one whose answer a start waits for now (stop kills it: no wait for a slow one)
        self._launched: tuple[ShellProcess, float] | None = None
        self._answering: ShellProcess | None = None
        #: the handshake's pidDir: the subprocess creates a file named by its pid here (the
        #: worker's own pids dir, or one of this task's, removed by stop)
        self._own_pid_dir = _worker_pid_dir is None
        self.pid_dir = _worker_pid_dir or tempfile.mkdtemp(prefix="squall-shell-pids-")
        with _hosts_lock:
            _hosts.setdefault(key, set()).add(self)

    def ensure(self, wait: float = 0.0) -> ShellProcess | None:
        """The running subprocess; starts one if none runs and no restart delay is pending
        (None then, when it cannot start, and while the current one is dead but its exit
        not yet handled: see :meth:`died`). With ``wait``, a caller that would get None
        first waits up to that many seconds for a pending restart (or its exit handled)."""
        proc = self.current
        if proc is not None and proc.alive:
            return proc
        proc = self._ensure()
        if proc is None and wait > 0 and not self.stopped:
            pause = min(wait, max(0.05, self._retry_at - time.monotonic()))
            self._stopping.wait(pause)
            proc = self._ensure()
        return proc

    def _ensure(self) -> ShellProcess | None:
        proc = self.current
        if proc is not None:
            return proc if proc.alive else None
        with self._lock:
            proc = self.current
            if proc is not None:
                return proc if proc.alive else None
            if self.stopped or time.monotonic() < self._retry_at:
                return None
            return self._start()

    def launch(self) -> None:
        """Start the subprocess and send it the handshake, without waiting for the answer
        (the next :meth:`ensure` does); a start that fails is reported, and retried by
        :meth:`ensure` as any other."""
        with self._lock:
            if self.current is not None or self._launched is not None or self.stopped:
                return
            try:
                self._launched = (self._spawn(), time.monotonic() + self.timeout)
            except MultilangError as exc:
                self._failed(exc)

    def _spawn(self) -> ShellProcess:
        """A new subprocess, greeted (a start counted for the backoff)."""
        now = time.monotonic()
        if self.starts and now - self._started_at < STABLE_SECS:
            self._delay = min(BACKOFF_MAX, self._delay * 2 if self._delay else BACKOFF_FIRST)
        else:
            self._delay = 0.0
        self.starts += 1
        self._started_at = now
        proc = ShellProcess(self.argv, self.cwd, self.codec(), self.logger,
                            self.on_messages, self.on_exit, pid_dir=self.pid_dir)
        proc.greet(self.conf, self.pid_dir, self.context)
        return proc

    def _failed(self, exc: MultilangError) -> None:
        self._retry_at = time.monotonic() + max(self._delay, BACKOFF_FIRST)
        if not self.stopped:
            self.report(f"{exc}; trying again in {max(self._delay, BACKOFF_FIRST):g} s")

    def _start(self) -> ShellProcess | None:
        launched, self._launched = self._launched, None
        try:
            if launched is None:
                proc = self._spawn()
                due = time.monotonic() + self.timeout
            else:
                proc, due = launched
            self._answering = proc
            if self.stopped:        # stop came in between: it may not have seen this one
                proc.kill("stopped")
            proc.answered(max(0.0, due - time.monotonic()), self.timeout)
        except MultilangError as exc:
            self._failed(exc)
            return None
        finally:
            self._answering = None
        self._retry_at = self._started_at + self._delay
        if self.stopped:
            proc.close(self.grace)
            return None
        self.current = proc
        return proc

    def died(self, proc: ShellProcess) -> bool:
        """Forget ``proc`` if it is the current subprocess; whether it was."""
        with self._lock:
            if self.current is proc:
                self.current = None
                return True
            return False

    def stop(self) -> None:
        """Stop the subprocess for good (no restart after this) and remove its pid dir."""
        self._stopping.set()
        self.stopped = True             # before reading _answering (a start sets it, then reads this)
        answering = self._answering
        if answering is not None:       # a start waiting for its answer: it ends now
            answering.kill("stopped")
        with self._lock:
            proc, self.current = self.current, None
            launched, self._launched = self._launched, None
        if proc is not None:
            proc.close(self.grace)
        if launched is not None:
            launched[0].close(self.grace)
        if self._own_pid_dir:
            shutil.rmtree(self.pid_dir, ignore_errors=True)
        with _hosts_lock:
            hosts = _hosts.get(self.key)
            if hosts is not None:
                hosts.discard(self)
                if not hosts:
                    del _hosts[self.key]


def stop_worker(topology_id: str, port: Any) -> None:
    """Stop every subprocess the worker ``(topology_id, port)`` still runs, side by side: a
    subprocess that ignores the end of its stdin takes its grace twice to stop, and a
    worker's N of them take that once, not N times."""
    with _hosts_lock:
        hosts = list(_hosts.get((topology_id, port), ()))
    threads = [threading.Thread(target=host.stop, daemon=True, name="squall-shell-stop")
               for host in hosts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def running_pids() -> list[int]:
    """Pids of every shell subprocess running in this process (for tests and diagnostics)."""
    with _hosts_lock:
        hosts = [h for hs in _hosts.values() for h in hs]
    return [h.current.pid for h in hosts if h.current is not None and h.current.alive]


def _jsonable(value: Any) -> Any:
    """``value`` with what JSON or msgpack cannot hold turned into its ``str``."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
