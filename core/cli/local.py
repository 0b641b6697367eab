"""``squall local TARGET``: run a topology in a LocalCluster in this process."""
from __future__ import annotations

import logging
import signal
import sys
import threading
import time
import traceback
from typing import Any

from squall.api.target import load_target, split_target
from squall.daemon.stop_signals import on_stop_signals
from squall.errors import SquallError, TopologyError

log = logging.getLogger(__name__)


def _submit(cluster: Any, name: str, topology: Any, ctrl_c: threading.Event | None) -> None:
    """Submit, turning an exception from the user's components (an ``initialize`` that raises,
    say) into one TopologyError naming where it was raised; ``-v`` logs the traceback. A
    KeyboardInterrupt is the user's Ctrl-C, and stops, when ``ctrl_c`` is set (a SIGINT came)
    or None (this process cannot tell); else a component raised it."""
    try:
        cluster.submit_topology(name, {}, topology)
    except SquallError:
        raise
    except KeyboardInterrupt as exc:
        if ctrl_c is None or ctrl_c.is_set():
            raise
        raise _failed(name, exc) from exc
    except Exception as exc:
        raise _failed(name, exc) from exc


def _failed(name: str, exc: BaseException) -> TopologyError:
    log.debug("starting topology %r failed", name, exc_info=exc)
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return TopologyError(f"topology {name!r} failed to start: {what} ({frame.filename}, "
                         f"line {frame.lineno})")


def _watch_ctrl_c() -> tuple[threading.Event | None, Any]:
    """Note the user's Ctrl-C before it raises KeyboardInterrupt, as Python's own handler
    does, so a KeyboardInterrupt a component raises is told from it: ``(set on SIGINT, the
    handler to restore)``. Over a handler of someone else's, None: a KeyboardInterrupt is
    taken as a Ctrl-C; where SIGINT is ignored, a KeyboardInterrupt is never one."""
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN:
        return threading.Event(), previous
    if previous is not signal.default_int_handler:
        return None, previous
    pressed = threading.Event()

    def interrupted(signum: int, frame: Any) -> None:
        pressed.set()
        raise KeyboardInterrupt
    signal.signal(signal.SIGINT, interrupted)
    return pressed, previous


def run_local(target: str, conf: dict[str, Any], duration: float | None = None,
              name: str | None = None) -> int:
    from squall.runtime.local_cluster import LocalCluster
    topology = load_target(target, conf)
    name = name or split_target(target)[1]
    stop = threading.Event()
    restore = on_stop_signals(lambda *a: stop.set())       # SIGTERM, SIGHUP
    ctrl_c, previous_int = _watch_ctrl_c()
    try:
        with LocalCluster(conf) as cluster:
            _submit(cluster, name, topology, ctrl_c)
            print(f"running {name!r} locally" + (f" for {duration:g} s" if duration else
                                                  " (Ctrl-C to stop)"), file=sys.stderr)
            deadline = None if duration is None else time.monotonic() + duration
            try:
                while not stop.is_set():
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        break
                    stop.wait(min(left, 1.0) if left is not None else 1.0)
            except KeyboardInterrupt:
                pass
            info = cluster.get_topology_info(name)
        print(f"{'component':<16}{'emitted':>12}{'executed':>12}{'acked':>12}{'failed':>10}")
        for comp, st in sorted(info["components"].items()):
            print(f"{comp:<16}{st['emitted']:>12,}{st['executed']:>12,}{st['acked']:>12,}"
                  f"{st['failed']:>10,}")
        for comp, errors in sorted(info["errors"].items()):
            for e in errors[-3:]:
                print(f"error in {comp} task {e['task']}: {e['error'].strip().splitlines()[-1]}",
                      file=sys.stderr)
        return 0
    finally:
        restore()
        if previous_int is not None:    # None: not set from Python, left alone
            signal.signal(signal.SIGINT, previous_int)
