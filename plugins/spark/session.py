"""Getting a SparkSession for squall's Spark components.

Every component of the plugin (spout tasks, ``declare_outputs`` at build time, the metrics
report) asks :func:`get_session` for its session, so all tasks in one worker process share one
SparkSession (one driver JVM per process, as pyspark allows). pyspark is imported here, inside
the function, never when ``squall.plugins.spark`` is imported.

A driver JVM that dies (the kernel's OOM killer picks it, a crash) takes the session with it,
while pyspark keeps it as the process's session. :func:`driver_lost` tells such a session from
a working one, and :func:`get_session` then drops it and starts a new one, so the readers of
that session can plan their reads again (:class:`~squall.plugins.spark.fetch.PartitionReader`).
"""
from __future__ import annotations

import logging
import re
import threading
import weakref
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from squall.errors import ConfigError, PluginLoadError

__all__ = ["SESSION_DEFAULTS", "driver_lost", "first_line", "get_session",
           "quiet_spark_errors"]

log = logging.getLogger(__name__)

#: masters asked for while another session was running (warned about once each)
_ignored_masters: set[str] = set()
#: held while get_session looks at, drops or creates the process's session: the reading
#: threads of several spout tasks may find its driver lost at once, and only one starts another
_lock = threading.Lock()
#: SparkContexts dropped because their driver JVM was lost
_dropped: weakref.WeakSet[Any] = weakref.WeakSet()

#: settings squall applies to a session it creates (a ``spark.conf`` mapping overrides them)
SESSION_DEFAULTS = {
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.ui.showConsoleProgress": "false",
}
#: and to one on a ``local`` master, whose driver nothing outside this host needs to reach
#: (Spark binds it to the host's outside address otherwise)
LOCAL_DEFAULTS = {
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
}
#: ``spark.master`` left at its default: whatever session this process runs is taken without
#: a word (one the user made, say)
DEFAULT_MASTER = "local[*]"


def get_session(master: str | None = None, settings: Mapping[str, Any] | None = None,
                app_name: str = "squall") -> Any:
    """Return the active SparkSession, or create one on ``master`` (default ``local[*]``).

    ``settings`` are extra Spark settings (``{"spark.executor.memory": "2g", ...}``) used
    only when a session is created; on a ``local`` master the driver binds 127.0.0.1 unless
    they say otherwise. An existing session is returned as it is (its master wins, as with
    ``SparkSession.builder.getOrCreate``; a master other than the default asked for is logged
    as one warning line per master, naming the master in use). An existing session whose driver
    JVM is gone (:func:`driver_lost`) is dropped, with one warning line, and a new one created.
    Blocks while the driver JVM starts (seconds); callable from any thread.
    Raises PluginLoadError if pyspark is missing and ConfigError if the session cannot start.
    """
    try:
        from pyspark import SparkContext
    except ImportError as exc:
        raise PluginLoadError("the Spark plugin needs pyspark: pip install 'squall[spark]'"
                              ) from exc
    if settings is not None and not isinstance(settings, Mapping):
        raise ConfigError(f"spark.conf must be a mapping of Spark settings, got {settings!r}")
    with _lock:
        active = SparkContext._active_spark_context
        if active is not None and _jvm_gone(active):
            _drop(active)
        return _get_or_create(master, settings, app_name)


def _get_or_create(master: str | None, settings: Mapping[str, Any] | None,
                   app_name: str) -> Any:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if SparkContext._active_spark_context is not None:   # this process already runs a driver
        session = SparkSession.builder.getOrCreate()
        in_use = session.sparkContext.master
        if master and master != DEFAULT_MASTER and master != in_use and \
                master not in _ignored_masters:
            _ignored_masters.add(master)
            log.warning("spark.master %r is not used: this process already runs a Spark "
                        "session on %s, which squall's Spark components share", master, in_use)
        return session
    master = master or DEFAULT_MASTER
    builder = SparkSession.builder.master(master).appName(app_name)
    local = LOCAL_DEFAULTS if master.startswith("local") else {}
    for key, value in {**SESSION_DEFAULTS, **local, **dict(settings or {})}.items():
        builder = builder.config(str(key), str(value).lower() if isinstance(value, bool)
                                 else str(value))
    try:
        session = builder.getOrCreate()
    except Exception as exc:   # py4j / JVM start failures: one clear line for the user
        raise ConfigError(f"cannot start a Spark session on master {master!r}: "
                          f"{first_line(exc)}") from exc
    session.sparkContext.setLogLevel("ERROR")
    log.info("Spark session started on %s", session.sparkContext.master)
    return session


def driver_lost(session: Any) -> bool:
    """Whether ``session`` can run no more jobs because its driver JVM is gone (killed,
    crashed): its gateway refuses connections, or :func:`get_session` already dropped it for
    that. One round trip to the JVM (a millisecond); from any thread. False for a working
    session, a stopped one, and one that is not a classic pyspark session (Spark Connect)."""
    sc = getattr(session, "sparkContext", None)
    return sc is not None and _jvm_gone(sc)


def _jvm_gone(sc: Any) -> bool:
    try:
        if sc in _dropped:
            return True
    except TypeError:          # not weak-referenceable: not a pyspark SparkContext
        return False
    jsc = getattr(sc, "_jsc", None)
    if jsc is None:            # stopped (or not classic pyspark): not lost
        return False
    try:
        from py4j.protocol import Py4JNetworkError
    except ImportError:
        return False
    try:
        jsc.sc().isStopped()   # through this context's own gateway connection
    except (Py4JNetworkError, ConnectionError):
        return True
    except Exception:          # the JVM answered, with an error: it is there
        return False
    return False


def _drop(sc: Any) -> None:
    """Forget ``sc``, whose driver JVM is gone, as the process's SparkContext and session, so
    that pyspark starts a new driver (with ``_lock`` held). pyspark has no public way to do
    this: ``SparkSession.stop`` needs the JVM that is gone."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession, SQLContext

    _dropped.add(sc)
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    code = proc.poll() if proc is not None else None       # reaps the dead JVM too
    log.warning("the Spark driver JVM of this process is gone (%s); starting a new Spark "
                "session for squall's Spark components",
                f"exit status {code}" if code is not None else "its gateway refuses connections")
    server = getattr(sc, "_accumulatorServer", None)
    for close in (getattr(server, "shutdown", None), getattr(gateway, "shutdown", None)):
        if close is not None:
            try:
                close()
            except Exception:    # best effort: its other end is gone
                log.debug("closing the lost Spark session's %s failed", close, exc_info=True)
    with SparkContext._lock:
        SparkContext._active_spark_context = None
        SparkContext._gateway = None
        SparkContext._jvm = None
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None
    SQLContext._instantiatedContext = None


#: Py4J's own first line ("An error occurred while calling o31.load."): says nothing
_PY4J_CALL = "An error occurred while calling"
#: a JVM stack frame ("at org.apache.spark.sql...(File.scala:12)")
_FRAME = re.compile(r"^at [\w$.<>/]+\(")
#: a Java exception class before the message (": org.apache.spark.SparkException: ...")
_JAVA_CLASS = re.compile(r"^(?::\s*)?(?:Caused by:\s*)?(?:[a-zA-Z_$][\w$]*\.)+"
                         r"([A-Z][\w$]*(?:Exception|Error))(?::\s*|$)")
#: Spark's error class at the start of a message ("[DATA_SOURCE_NOT_FOUND] Failed to ...")
_ERROR_CLASS = re.compile(r"^\[[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*\]")


def first_line(exc: BaseException) -> str:
    """The meaningful line of a (often very long) Spark / Py4J error message.

    Spark's own message with its error class (``[DATA_SOURCE_NOT_FOUND] Failed to find the
    data source: delta. ...``) if any line has one, else the first line that is neither Py4J's
    ``An error occurred while calling ...`` nor a JVM stack frame. A leading Java exception
    class is dropped before an error class and shortened to its simple name otherwise
    (``FileNotFoundException: ...``). At most 300 characters."""
    text = str(exc)
    get_message = getattr(exc, "getMessage", None)
    if callable(get_message):
        try:
            text = str(get_message()) or text
        except Exception:   # a py4j error whose JVM side is gone: keep str(exc)
            pass
    lines = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(_PY4J_CALL) or _FRAME.match(line):
            continue
        java = _JAVA_CLASS.match(line)
        if java:
            rest = line[java.end():].strip()
            line = rest if _ERROR_CLASS.match(rest) else (
                f"{java.group(1)}: {rest}" if rest else java.group(1))
        lines.append(line)
    if not lines:
        return type(exc).__name__
    best = next((line for line in lines if _ERROR_CLASS.match(line)), lines[0])
    return best[:300]


#: pyspark (4.x) loggers that write a captured Spark error, its JVM stack trace included, at
#: ERROR as the exception is raised: squall reports the same error as one line of its own
_ERROR_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")
_quiet = threading.local()


class _NotOnQuietThreads(logging.Filter):
    """Drops the records of a thread inside :func:`quiet_spark_errors`."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(_quiet, "depth", 0)


_filter = _NotOnQuietThreads()


@contextmanager
def quiet_spark_errors() -> Iterator[None]:
    """Within this block, on this thread only, pyspark does not log the Spark errors it
    raises (each with its whole JVM stack trace): the caller turns them into one line
    (:func:`first_line`). Other threads' Spark errors are logged as pyspark does."""
    try:   # the loggers must be pyspark's own class: its calls pass it extra keywords
        from pyspark.logger import PySparkLogger
    except ImportError:       # an older pyspark logs no such records
        pass
    else:
        for name in _ERROR_LOGGERS:
            logger = PySparkLogger.getLogger(name)
            if _filter not in logger.filters:
                logger.addFilter(_filter)
    _quiet.depth = getattr(_quiet, "depth", 0) + 1
    try:
        yield
    finally:
        _quiet.depth -= 1
