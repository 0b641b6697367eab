"""The ``squall ui`` daemon: uvicorn serving :func:`squall.ui.app.make_app` in a thread, and
the sampler thread that feeds the charts' history and ``/metrics``.

``start()`` binds ``ui.host``:``ui.port`` itself (a port in use is one ConfigError line) and
returns once uvicorn accepts connections; ``wait()`` blocks until ``request_stop()``;
``stop()`` stops the sampler and uvicorn and closes the nimbus clients.
"""
from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Mapping
from typing import Any

from squall.config import AT_LEAST, check_range, defaults, period_secs
from squall.daemon.addresses import listen_error
from squall.errors import ConfigError, SquallError
from squall.ui.access import Access, Clients
from squall.ui.cluster_view import ClusterView
from squall.ui.history import History

__all__ = ["UiServer"]

log = logging.getLogger(__name__)


def _nimbus_client(conf: Mapping[str, Any]) -> Any:
    from squall.daemon.nimbus_client import NimbusClient
    return NimbusClient(conf, timeout=10.0, election_wait=0)


class UiServer:
    """The UI daemon (see the module docstring). ``make_client(conf)`` builds a nimbus client
    (tests pass a fake one); ``host`` / ``port`` override ``ui.host`` / ``ui.port``. A port,
    ``ui.sample.secs`` or ``ui.history.size`` it cannot use is a ConfigError here."""

    def __init__(self, conf: Mapping[str, Any], host: str | None = None,
                 port: int | None = None,
                 make_client: Callable[[Mapping[str, Any]], Any] | None = None) -> None:
        self.conf = dict(conf)
        self.host = str(host if host is not None else conf.get("ui.host") or "127.0.0.1")
        chosen = port if port is not None else conf.get("ui.port")
        self.port = 8080 if chosen is None else int(chosen)
        #: where host and port came from, for the error when they cannot be bound
        self._keys = (f"{'--host' if host is not None else 'ui.host'} / "
                      f"{'--port' if port is not None else 'ui.port'}")
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"ui.port must be a port number from 0 (any free one) to 65535, "
                              f"got {self.port}")
        self._sample_secs = period_secs(conf, "ui.sample.secs")
        self._clients = Clients(self.conf, make_client or _nimbus_client)
        size = conf.get("ui.history.size")
        check_range(conf, "ui.history.size", AT_LEAST["ui.history.size"])
        history = History(defaults()["ui.history.size"] if size is None else size,
                          idle_secs=3 * self._sample_secs)
        self.view = ClusterView(self._clients, history)
        self._access = Access(self.conf)
        self._stop = threading.Event()
        self._server: Any = None
        self._threads: list[threading.Thread] = []

    def start(self) -> int:
        """Bind and serve; returns the port (useful with ``ui.port: 0``). ConfigError when the
        address cannot be bound."""
        import uvicorn

        from squall.ui.app import make_app
        sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self.port))
            sock.listen(128)
        except OSError as exc:
            sock.close()
            raise ConfigError(listen_error("squall ui", self.host, self.port, self._keys,
                                           exc)) from exc
        self.port = int(sock.getsockname()[1])
        config = uvicorn.Config(make_app(self._access, self.view), log_config=None,
                                access_log=False, lifespan="off", timeout_graceful_shutdown=5,
                                server_header=False)
        self._server = uvicorn.Server(config)
        serve = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]},
                                 daemon=True, name="squall-ui")
        sampler = threading.Thread(target=self._sample_loop, daemon=True,
                                   name="squall-ui-sampler")
        self._threads = [serve, sampler]
        serve.start()
        while not self._server.started and serve.is_alive():
            self._stop.wait(0.02)       # uvicorn sets `started` once it accepts connections
        if not serve.is_alive():
            raise ConfigError(f"squall ui on {self.host}:{self.port} stopped while starting")
        sampler.start()
        log.info("squall ui on http://%s:%d/ (authentication %s)", self.host, self.port,
                 "on" if self._access.enabled else "off")
        return self.port

    def _sample_loop(self) -> None:
        failing = False
        while not self._stop.is_set():
            try:
                self.view.sample()
                if failing:
                    log.info("squall ui: nimbus answers again")
                failing = False
            except SquallError as exc:
                if not failing:
                    log.warning("squall ui: cannot sample the cluster: %s", exc)
                failing = True
            except Exception as exc:   # a bug: one line, the sampler goes on
                log.error("squall ui: sampling failed: %s: %s", type(exc).__name__, exc)
            self._stop.wait(self._sample_secs)

    def wait(self) -> None:
        """Block until :meth:`request_stop` or :meth:`stop`."""
        self._stop.wait()

    def request_stop(self) -> None:
        """Make :meth:`wait` return (safe from a signal handler); :meth:`stop` shuts down."""
        self._stop.set()

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.should_exit = True
        for thread in self._threads:
            thread.join(timeout=15)
        self._threads = []
        self._server = None
        self._clients.close()
