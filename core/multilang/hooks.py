"""Multi-lang's hook: a worker that shuts down stops the subprocesses its shell components
still run (their cleanup stops them first when it can run)."""
from __future__ import annotations

from squall.hookspecs import hookimpl
from squall.multilang.process import stop_worker


@hookimpl
def squall_worker_stop(topology_id: str, port: int) -> None:
    stop_worker(topology_id, port)
