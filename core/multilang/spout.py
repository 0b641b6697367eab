"""ShellSpout: a spout whose ``next_tuple``, ``ack`` and ``fail`` run in a subprocess speaking
Storm's multi-lang protocol.

Each call is one command (``next``, ``ack``, ``fail``, ``activate``, ``deactivate``) written
to the subprocess, then the spout's own thread (``dedicated_thread``) handles what the
subprocess sends (its emits, logs, errors, metrics) until it answers ``sync``. A subprocess
that sends nothing for ``topology.subprocess.timeout.secs`` before its ``sync`` (each message
starts the wait again: a ``next`` may emit for longer than that) is killed; one that dies is
reported once and restarted (the tuples it emitted and had not seen acked are the acker's:
they fail at their message timeout, and a spout that replays from a source replays them).
"""
from __future__ import annotations

import queue
import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from squall.api.component import Spout
from squall.api.context import TopologyContext
from squall.errors import MultilangError
from squall.multilang.link import ShellLink, code_root
from squall.multilang.process import RESTART_WAIT, ShellProcess

_EXIT = object()
#: how long a call waits for the exit of a subprocess it killed (its kill, the grace of the
#: process group's end, and the reader seeing its stdout close)
EXIT_WAIT = 5.0


class ShellSpout(Spout):
    """A spout run by a multi-lang subprocess, one subprocess per task.

    >>> class Sentences(ShellSpout):
    ...     command = ["node", "sentences.js"]
    ...     outputs = ["sentence"]

    ``command`` is an argv list run with the code package's folder as its working directory
    (the first word may be ``env``); ``shell_metrics`` names the metrics it may update."""

    command: ClassVar[Sequence[str]] = ()
    shell_metrics: ClassVar[Sequence[str]] = ()
    dedicated_thread: ClassVar[bool] = True

    _link: ShellLink | None = None

    def shell_command(self, conf: Mapping[str, Any]) -> Sequence[str]:
        """The argv to run (``command`` unless a subclass works it out from ``conf``)."""
        return self.command

    def shell_cwd(self, conf: Mapping[str, Any]) -> str:
        """Where the command runs: the code package's folder (the folder above the module
        defining this class)."""
        return code_root(type(self))

    def initialize(self, conf: dict[str, Any], context: TopologyContext) -> None:
        """Launch the subprocess (its first call waits for its handshake's answer; a start
        that fails is reported and retried)."""
        self._inbox: queue.SimpleQueue[tuple[ShellProcess, Any]] = queue.SimpleQueue()
        self._link = ShellLink(conf, context, command=self.shell_command(conf),
                               cwd=self.shell_cwd(conf), metric_names=self.shell_metrics,
                               emit=lambda *a, **k: self.emit(*a, **k),
                               report=lambda e: self.report_error(e),
                               on_messages=self._on_messages, on_exit=self._on_exit)
        self._link.host.launch()
        self._proc: ShellProcess | None = None
        self._active = False

    def next_tuple(self) -> None:
        self._call({"command": "next"})

    def ack(self, tup_id: Any) -> None:
        self._call({"command": "ack", "id": tup_id})

    def fail(self, tup_id: Any) -> None:
        self._call({"command": "fail", "id": tup_id})

    def activate(self) -> None:
        self._active = True
        self._call({"command": "activate"})

    def deactivate(self) -> None:
        self._active = False
        self._call({"command": "deactivate"})

    def close(self) -> None:
        if self._link is not None:
            self._link.host.stop()

    # -- the spout's thread ----------------------------------------------------------------------
    def _call(self, command: dict[str, Any]) -> None:
        """Send ``command`` and handle the subprocess's messages until its ``sync``."""
        link = self._link
        if link is None:
            return
        proc = link.host.ensure(wait=RESTART_WAIT)
        if proc is None:
            return                  # none runs (a restart pending): this call is lost
        if proc is not self._proc:
            # a restarted subprocess: an active spout's is activated first, as a restarted
            # spout is (a subprocess waiting for it never emitted)
            self._proc = proc
            if self._active and command["command"] not in ("activate", "deactivate"):
                self._exchange(link, proc, {"command": "activate"})
        self._exchange(link, proc, command)

    def _exchange(self, link: ShellLink, proc: ShellProcess, command: dict[str, Any]) -> None:
        proc.send(proc.codec.encode(command))
        deadline = time.monotonic() + link.timeout
        inbox = self._inbox
        killed = False
        while True:
            try:
                sender, message = inbox.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                if killed:
                    return          # its exit never came: the next call sees to it
                # a limit on silence, not on the call: each message it sent (the reader
                # notes when) moves the deadline, with nothing done per message here
                heard = proc.last_heard + link.timeout
                if heard > deadline and heard > time.monotonic():
                    deadline = heard
                    continue
                proc.kill(f"did not answer {command['command']!r}: it sent nothing for "
                          f"{link.timeout:g} s (topology.subprocess.timeout.secs)"
                          f"{proc.unfinished()}")
                killed = True       # its exit comes next: wait for it, not spin
                deadline = time.monotonic() + EXIT_WAIT
                continue
            if sender is not proc:
                continue            # left over from a subprocess that is gone
            if message is _EXIT:
                return              # reported by _on_exit; the next call starts another
            if not isinstance(message, dict):
                link.logger.error("the subprocess sent %.200r, not a command", message)
                continue
            name = message.get("command")
            if name == "sync":
                return
            try:
                if name == "emit":
                    link.answer_emit(proc, message, None, message.get("id"))
                else:
                    link.common(message, name)
            except Exception as exc:    # a field of the wrong type: one error, go on
                link.malformed(proc, message, exc)

    # -- the reader thread -----------------------------------------------------------------------
    def _on_messages(self, proc: ShellProcess, messages: list[Any]) -> None:
        put = self._inbox.put
        for message in messages:
            put((proc, message))

    def _on_exit(self, proc: ShellProcess, reason: str) -> None:
        link = self._link
        assert link is not None
        if link.host.died(proc) and not link.host.stopped:
            self.report_error(MultilangError(
                f"subprocess {link.host.argv} (pid {proc.pid}) {reason}; restarting it"))
        self._inbox.put((proc, _EXIT))
