"""What shell bolts and shell spouts share (:class:`ShellLink`): the command, where it runs,
the handshake, the subprocess's ``log``, ``error`` and ``metrics`` messages, and answering
emits.

Each task of a shell component runs its own subprocess (as in Storm). The component runs on
a thread of its own (``dedicated_thread``): its ``emit``, ``ack``, ``fail`` and
``report_error`` may then be called from any thread (the subprocess's reader among them) and
are applied on the worker's loop in call order.
"""
from __future__ import annotations

import importlib.util
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from squall.api.context import TopologyContext
from squall.api.tuple import Tuple
from squall.errors import MultilangError, SquallError, TopologyError
from squall.multilang.process import ShellHost, ShellProcess, stop_grace
from squall.multilang.protocol import LOG_LEVELS, codec_class, handshake_context

SERIALIZER_KEY = "topology.multilang.serializer"
TIMEOUT_KEY = "topology.subprocess.timeout.secs"
#: how many undeclared metric names a link remembers having logged (the rest are not logged)
UNDECLARED_NAMES = 100
#: what an emit the runtime refuses raises: reported by :meth:`ShellLink.emit_failed`
EMIT_ERRORS = (SquallError, TypeError, ValueError, RuntimeError)


def check_command(where: str, command: Any) -> None:
    """MultilangError unless ``command`` is an argv: a non-empty list (or tuple) of strings
    (a string is refused: it would be run as one program named by all of it)."""
    if not isinstance(command, (list, tuple)) or not command or \
            not all(isinstance(a, str) for a in command):
        raise MultilangError(f"{where}: command must be a non-empty list of strings (an "
                             f"argv, as [\"python3\", \"split.py\"]), got {command!r}")


def check_commands(specs: Iterable[Any]) -> None:
    """TopologyError naming the first shell component (a ShellBolt or ShellSpout class that
    runs its ``command``, not a ``shell_command`` of its own) whose ``command`` is not an
    argv. Called by ``create_topology()`` and at submit (``specs``: component specs, with
    ``id`` and ``cls``)."""
    from squall.multilang.bolt import ShellBolt
    from squall.multilang.spout import ShellSpout
    for spec in specs:
        cls = spec.cls
        if not isinstance(cls, type) or not issubclass(cls, (ShellBolt, ShellSpout)):
            continue
        shell: type[ShellBolt] | type[ShellSpout] = cls
        base = ShellBolt if issubclass(shell, ShellBolt) else ShellSpout
        if shell.shell_command is base.shell_command:
            try:
                check_command(f"component {spec.id!r}", shell.command)
            except MultilangError as exc:
                raise TopologyError(str(exc)) from None


def code_root(cls: type) -> str:
    """The folder the module defining ``cls`` was imported from (the top of its package):
    the code package's folder in a worker, the folder on ``sys.path`` in local mode."""
    return module_root(cls.__module__)


def module_root(name: str) -> str:
    """:func:`code_root` of module ``name`` (found without running it); for ``__main__``,
    that of the script (``python topo.py`` from anywhere runs its shell components where
    ``squall local topo.py:...`` would); the working directory for a module without a file
    (``python -c``, an interactive session)."""
    module = sys.modules.get(name)
    file = getattr(module, "__file__", None)
    if file is None and name != "__main__":
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        file = spec.origin if spec is not None else None
    if not file or not os.path.isfile(file):
        return os.getcwd()
    if name == "__main__":      # ``python -m pkg.topo`` names its module in its spec
        name = getattr(getattr(module, "__spec__", None), "name", None) or name
    root = Path(file).resolve().parent
    for _ in range(name.count(".") + (Path(file).name == "__init__.py")):
        root = root.parent
    return str(root)


def wants_task_ids(message: dict[str, Any]) -> bool:
    """Whether the subprocess waits for the task ids of its ``emit``: unless it says
    ``"need_task_ids": false``, or names a ``task`` (a direct emit is never answered, as in
    Storm: pystorm's ``emit(direct_task=...)`` reads no answer, and one sent would be the
    answer its next emit reads)."""
    return message.get("task") is None and message.get("need_task_ids", True) is not False


class ShellMetric:
    """A metric a subprocess updates with ``{"command": "metrics", "name", "params"}``:
    numeric params add up over the bucket (Storm's shell count metric). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._value: float = 0

    def update(self, params: Any) -> None:
        if isinstance(params, bool) or not isinstance(params, (int, float)):
            raise TypeError(f"params must be a number, got {params!r}")
        with self._lock:
            self._value += params

    def get_value_and_reset(self) -> float:
        with self._lock:
            value, self._value = self._value, 0
        return value


class ShellLink:
    """One shell task's link to its subprocess: the :class:`ShellHost` that keeps it running,
    the component's logger (``squall.component.<component id>``) and the handling of the
    messages bolts and spouts share. ``emit`` and ``report`` are the component's own (its
    thread-safe proxies); ``on_messages``/``on_exit`` are the component's handlers."""

    def __init__(self, conf: dict[str, Any], context: TopologyContext, *,
                 command: Sequence[str], cwd: str, metric_names: Sequence[str],
                 emit: Callable[..., list[int] | None], report: Callable[[Any], None],
                 on_messages: Callable[[ShellProcess, list[Any]], None],
                 on_exit: Callable[[ShellProcess, str], None]) -> None:
        self.emit = emit
        self.report = report
        self.logger = logging.getLogger(f"squall.component.{context.component_id}")
        self.metric_names = list(metric_names)
        self.metrics: dict[str, ShellMetric] = {
            name: context.register_metric(name, ShellMetric()) for name in self.metric_names}
        #: the undeclared metric names the subprocess updated (each logged once), as repr
        self.undeclared: set[str] = set()
        #: the declared metric names the subprocess updated with params that are no number
        #: (each reported once)
        self.bad_params: set[str] = set()
        where = f"component {context.component_id!r}"
        try:
            codec = codec_class(conf.get(SERIALIZER_KEY, "json"))
            timeout = float(conf.get(TIMEOUT_KEY) or 30)
        except (SquallError, TypeError, ValueError) as exc:
            raise MultilangError(f"{where}: {exc}") from exc
        if timeout <= 0:
            raise MultilangError(f"{where}: {TIMEOUT_KEY} must be positive, got {timeout}")
        self.timeout = timeout
        check_command(where, command)
        self.host = ShellHost(
            argv=command, cwd=cwd, codec=codec, conf=dict(conf),
            context=handshake_context(context), timeout=timeout, logger=self.logger,
            report=report, on_messages=on_messages, on_exit=on_exit,
            key=(context.topology_id, context.this_worker_port), grace=stop_grace(conf))

    # -- messages both kinds handle ---------------------------------------------------------
    def common(self, message: dict[str, Any], command: Any) -> None:
        """Handle ``log``, ``error``, ``metrics`` and anything unknown."""
        if command == "log":
            level = message.get("level", 2)
            self.logger.log(LOG_LEVELS.get(level, logging.INFO) if level.__class__ is int
                            else logging.INFO, "%s", message.get("msg", ""))
        elif command == "error":
            self.report(str(message.get("msg", "")))
        elif command == "metrics":
            name = message.get("name")
            metric = self.metrics.get(name) if isinstance(name, str) else None
            if metric is None:
                key = repr(name)
                # one line a name, not one a message (of at most UNDECLARED_NAMES names)
                if key not in self.undeclared and len(self.undeclared) < UNDECLARED_NAMES:
                    self.undeclared.add(key)
                    self.logger.error("the subprocess updated metric %s, which the component "
                                      "does not declare in shell_metrics (%s); its updates "
                                      "are dropped", key[:200],
                                      ", ".join(self.metric_names) or "none")
                return
            try:
                metric.update(message.get("params"))
            except TypeError as exc:
                # reported once a metric (its own error line), not once a message
                if name not in self.bad_params:
                    self.bad_params.add(str(name))
                    self.report(f"metric {name!r}: {str(exc)[:200]}; such updates are dropped "
                                f"(reported once for this metric)")
        else:
            self.logger.error("the subprocess sent an unknown command: %.200r", message)

    def malformed(self, proc: ShellProcess, message: Any, exc: Exception) -> None:
        """A message whose fields could not be used (a wrong type, say): reported once as
        the component's error; an emit that waits for task ids is answered with none, so
        the subprocess goes on."""
        self.report(MultilangError(f"the subprocess sent a message squall cannot use "
                                   f"({type(exc).__name__}: {exc}): {message!r:.200}"))
        if isinstance(message, dict) and message.get("command") == "emit" \
                and wants_task_ids(message):
            proc.send(proc.codec.encode([]))

    def answer_emit(self, proc: ShellProcess, message: dict[str, Any],
                    anchors: Sequence[Tuple] | None, tup_id: Any) -> bool:
        """Emit what ``message`` asks and, when :func:`wants_task_ids`, answer the task ids
        (an empty list for an emit that failed). Returns whether it emitted; a failed emit
        is reported as the component's error."""
        need = wants_task_ids(message)
        values = message.get("tuple")
        ok = True
        ids: list[int] | None = None
        try:
            if not isinstance(values, list):
                raise MultilangError(f"emit without a 'tuple' list: {message!r:.200}")
            task = message.get("task")
            if task is not None:
                task = int(task)
            kwargs: dict[str, Any] = {"direct_task": task, "need_task_ids": need}
            if anchors is not None:
                kwargs["anchors"] = anchors
            if tup_id is not None:
                kwargs["tup_id"] = tup_id
            ids = self.emit(values, message.get("stream"), **kwargs)
        except EMIT_ERRORS as exc:
            self.emit_failed(message, exc)
            ok = False
        if need:
            proc.send(proc.codec.encode(list(ids or [])))
        return ok

    def emit_failed(self, message: dict[str, Any], exc: Exception) -> None:
        """Report an emit the runtime refused (an undeclared stream, values of the wrong
        arity, ...) as the component's error, one line: the runtime's traceback through this
        link would bury what the subprocess did wrong, once per tuple it emits so."""
        self.report(f"{type(exc).__name__}: {exc}" if isinstance(exc, SquallError) else
                    f"MultilangError: emit {message!r:.200} failed: {exc}")
