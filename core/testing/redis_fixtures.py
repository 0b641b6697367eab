"""pytest fixtures for tests that need a real Redis (import them into a conftest).

- ``redis_server`` (session): one ``redis-server`` (Debian's package) on a free 127.0.0.1 port,
  no persistence, data under pytest's temporary directory; stopped after the session.
  ``.host``, ``.port``, ``.stop()``, ``.start()`` (same port), ``.is_running()``.
- ``redis_conf`` (per test): ``{"host", "port", "db", "key_prefix"}`` with a key prefix unique
  to the test; the keys under it are deleted after the test. Tests are isolated.

Needs the ``redis`` extra (the ``redis`` client) and ``apt-get install redis-server``.
"""
from __future__ import annotations

import re
import shutil
import socket
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from squall.daemon.ports import free_port
from squall.testing.waiting import wait_until


class RedisServer:
    """A ``redis-server`` process on 127.0.0.1 that keeps its port across restarts."""

    host = "127.0.0.1"

    def __init__(self, workdir: Path, port: int | None = None, *, durable: bool = False) -> None:
        """``durable``: keep the data across :meth:`stop`/:meth:`start` (an append-only file
        fsync'd on every write, as a Redis holding state would run); off by default."""
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
        self.binary = binary
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self._proc: subprocess.Popen[bytes] | None = None
        self.durable = durable

    def start(self, timeout: float = 15.0) -> None:
        if self.is_running():
            return
        self._proc = subprocess.Popen(
            [self.binary, "--bind", self.host, "--port", str(self.port), "--save", "",
             *(["--appendonly", "yes", "--appendfsync", "always"] if self.durable
               else ["--appendonly", "no"]),
             "--dir", str(self.workdir), "--protected-mode", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(self._answers, timeout=timeout, message=f"redis-server on port {self.port}")

    def _answers(self) -> bool:
        if self._proc is not None and self._proc.poll() is not None:
            raise RuntimeError(f"redis-server exited with {self._proc.returncode}")
        try:
            with socket.create_connection((self.host, self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stop(self) -> None:
        if self._proc is None:
            return
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._proc = None

    def conf(self, key_prefix: str = "") -> dict[str, Any]:
        return {"host": self.host, "port": self.port, "db": 0, "key_prefix": key_prefix}


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """The session's Redis server (restarted by ``redis_conf`` if a test stopped it)."""
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_conf(redis_server: RedisServer, request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """Connection options for ``redis_server`` with a key prefix unique to this test."""
    if not redis_server.is_running():
        redis_server.start()
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)[:40]
    prefix = f"t-{name}-{uuid.uuid4().hex[:8]}:"
    yield redis_server.conf(prefix)
    if redis_server.is_running():
        import redis

        client = redis.Redis(host=redis_server.host, port=redis_server.port)
        try:
            keys = list(client.scan_iter(match=prefix + "*", count=1000))
            if keys:
                client.delete(*keys)
        finally:
            client.close()
