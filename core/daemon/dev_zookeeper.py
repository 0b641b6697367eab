"""A single-node ZooKeeper for development and tests (``squall dev-zookeeper``).

It runs an installed Apache ZooKeeper (Debian's ``zookeeper`` package, or a release unpacked
under ``$ZOOKEEPER_HOME``) as a child JVM with a generated ``zoo.cfg``: standalone, bound to
one loopback address, no admin HTTP server, the four-letter-word commands enabled, fsync off
(development only: durability is not the point). Its log is ``<data_dir>/zookeeper.log``.

>>> with DevZooKeeper("/tmp/zk") as zk:               # doctest: +SKIP
...     conf = zk.conf(root="/myapp")                 # storm.zookeeper.* keys for squall
"""
from __future__ import annotations

import argparse
import contextlib
import ctypes
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from squall.daemon.ports import free_port
from squall.daemon.stop_signals import on_stop_signals
from squall.errors import StateError

DEBIAN_JAR = "/usr/share/java/zookeeper.jar"
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
#: prctl(2)'s option: the signal a process gets when its parent ends
PR_SET_PDEATHSIG = 1
INSTALL_HINT = ("ZooKeeper is not installed: install it with `sudo apt-get install zookeeper` "
                "(Debian/Ubuntu), or unpack an Apache ZooKeeper release and set ZOOKEEPER_HOME")


def ensure_zookeeper_installed() -> str:
    """Return the Java classpath of the installed ZooKeeper server.

    Looks at ``$ZOOKEEPER_HOME`` (``lib/*.jar``) first, then Debian's package. Raises
    StateError naming ``apt-get install zookeeper`` when neither exists or Java is missing.
    """
    jars: list[str] = []
    home = os.environ.get("ZOOKEEPER_HOME")
    if home:
        jars = sorted(glob.glob(os.path.join(home, "lib", "*.jar")))
    if not jars and os.path.exists(DEBIAN_JAR):
        jars = [DEBIAN_JAR]  # its manifest's Class-Path names the dependencies
        simple = "/usr/share/java/slf4j-simple.jar"
        if os.path.exists(simple):
            jars.append(simple)  # send the server's log lines to its log file
    if not jars:
        raise StateError(INSTALL_HINT)
    if shutil.which("java") is None:
        raise StateError("Java is not installed (ZooKeeper needs it): "
                         "`sudo apt-get install zookeeper` pulls in a JRE")
    return os.pathsep.join(jars)


def four_letter_word(host: str, port: int, word: str, timeout: float = 1.0) -> str:
    """Send a ZooKeeper four-letter command (``ruok``, ``srvr``...) and return the answer."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(word.encode("ascii"))
        chunks = []
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def _ending_with_us() -> Callable[[], None] | None:
    """On Linux, a ``preexec_fn`` after which the server gets SIGTERM when this process dies,
    even killed by SIGKILL (``PR_SET_PDEATHSIG``: its own session keeps it from the
    terminal's signals, and nothing else would stop it). None elsewhere, and off the main
    thread: the signal comes when the *thread* that started the child ends."""
    if not sys.platform.startswith("linux") \
            or threading.current_thread() is not threading.main_thread():
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
    prctl.restype = ctypes.c_int
    parent = os.getpid()

    def ending_with_us() -> None:          # in the child, between fork and exec
        prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:         # this process died before that: go now
            os._exit(1)
    return ending_with_us


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


class DevZooKeeper:
    """One standalone ZooKeeper server process.

    ``port=0`` picks a free port at the first :meth:`start` and keeps it across restarts.
    Methods are meant for one controlling thread. The process is killed at interpreter exit if
    still running.
    """

    def __init__(self, data_dir: str | os.PathLike[str], port: int = 0,
                 host: str = "127.0.0.1", *, startup_timeout: float = 60.0) -> None:
        # absolute: Java runs in it (cwd), and is handed paths in it (zoo.cfg, dataDir); a
        # relative one (storm.local.dir's default, squall-local) named nothing from there
        self.data_dir = Path(data_dir).resolve()
        self.host = host
        self.port = int(port)
        if not 0 <= self.port <= 65535:
            raise StateError(f"ZooKeeper's port must be 0 (a free one) to 65535, got {port}")
        self.startup_timeout = startup_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._finalizer: Any = None

    @property
    def hosts(self) -> str:
        """``host:port``, what a ZooKeeper client connects to."""
        return f"{self.host}:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.data_dir / "zookeeper.log"

    def conf(self, root: str = "/squall") -> dict[str, Any]:
        """The squall configuration keys that point at this server, under chroot ``root``."""
        return {"storm.zookeeper.servers": [self.host], "storm.zookeeper.port": self.port,
                "storm.zookeeper.root": root}

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> DevZooKeeper:
        """Start the server and block until it serves requests (StateError after
        ``startup_timeout`` seconds or when it exits, with the tail of its log)."""
        if self.is_running():
            return self
        classpath = ensure_zookeeper_installed()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        pick = self.port == 0  # only the first start picks; a restart keeps the port clients know
        for _attempt in range(3 if pick else 1):
            if pick:
                self.port = free_port(self.host)
            elif _in_use(self.host, self.port):
                # else the server there would answer for this one, which exits
                raise StateError(f"{self.hosts} is already in use (another ZooKeeper?); "
                                 f"choose another --port")
            self._spawn(classpath)
            if self._wait_ready():
                return self
            bind_failed = "Address already in use" in self._log_tail()
            self.stop()
            if not (pick and bind_failed):
                break
        raise StateError(f"ZooKeeper did not start on {self.hosts} (it exited, or did not serve "
                         f"within {self.startup_timeout:g}s): {self._log_reason()}; see "
                         f"{self.log_file}")

    def _spawn(self, classpath: str) -> None:
        cfg = self.data_dir / "zoo.cfg"
        cfg.write_text("\n".join([
            "tickTime=500", "initLimit=10", "syncLimit=5",
            "minSessionTimeout=1000", "maxSessionTimeout=60000",
            f"dataDir={self.data_dir / 'data'}",
            f"clientPort={self.port}", f"clientPortAddress={self.host}",
            "maxClientCnxns=0", "admin.enableServer=false",
            "4lw.commands.whitelist=ruok,srvr,stat,mntr,cons,conf",
            "autopurge.purgeInterval=0", "",
        ]))
        cmd = ["java", "-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               "-Djava.net.preferIPv4Stack=true", "-Dzookeeper.admin.enableServer=false",
               "-Dzookeeper.forceSync=no", "-Dzookeeper.jmx.log4j.disable=true",
               "-Dorg.slf4j.simpleLogger.showDateTime=true",
               "-cp", classpath, MAIN_CLASS, str(cfg)]
        with open(self.log_file, "ab") as log:
            self._proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                          stderr=subprocess.STDOUT, start_new_session=True,
                                          cwd=self.data_dir, preexec_fn=_ending_with_us())
        self._finalizer = weakref.finalize(self, _kill_group, self._proc.pid)

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if not self.is_running():
                return False
            with contextlib.suppress(OSError):
                if "Mode:" in four_letter_word(self.host, self.port, "srvr"):
                    return True
            time.sleep(0.1)  # polling the server's readiness, bounded by the deadline
        return False

    def _log_reason(self) -> str:
        """The last line of the log that names an exception or error (else its last line)."""
        lines = [line.strip() for line in self._log_tail(200).splitlines() if line.strip()]
        for line in reversed(lines):
            if "Exception" in line or "Error" in line:
                return line[:300]
        return lines[-1][:300] if lines else "no log"

    def _log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server (SIGTERM to its process group, SIGKILL after ``timeout``).
        Idempotent; the data directory is kept, so :meth:`start` resumes the same state."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                _kill_group(proc.pid)
                proc.wait(timeout)
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None

    def kill(self) -> None:
        """Stop abruptly (SIGKILL), as a crash would."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            _kill_group(proc.pid)
            proc.wait(10)
        self.stop()

    def wait(self) -> int:
        """Block until the server process exits; return its exit code."""
        proc = self._proc
        return 0 if proc is None else proc.wait()

    def __enter__(self) -> DevZooKeeper:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<DevZooKeeper {self.hosts} {'running' if self.is_running() else 'stopped'}>"


def _in_use(host: str, port: int) -> bool:
    """Whether something listens on ``host:port`` (a socket left in TIME_WAIT does not
    count: ZooKeeper binds over those too)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


def main(argv: list[str] | None = None) -> int:
    """``squall dev-zookeeper [--port N] [--dir D] [--host H]``: run in the foreground."""
    parser = argparse.ArgumentParser(prog="squall dev-zookeeper",
                                     description="Run a single-node ZooKeeper for development.")
    parser.add_argument("--port", type=int, default=2181, help="client port (0: a free one)")
    parser.add_argument("--dir", default=os.path.join("squall-local", "dev-zookeeper"),
                        help="data directory (kept between runs)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind")
    args = parser.parse_args(argv)
    try:
        server = DevZooKeeper(args.dir, port=args.port, host=args.host)
    except StateError as exc:
        print(f"squall dev-zookeeper: {exc}", file=sys.stderr)
        return 1

    def terminate(*_: Any) -> None:     # SIGTERM and SIGHUP stop the server as Ctrl-C does
        raise KeyboardInterrupt
    restore = on_stop_signals(terminate)
    try:
        try:
            server.start()
        except StateError as exc:
            print(f"squall dev-zookeeper: {exc}", file=sys.stderr)
            return 1
        print(f"ZooKeeper serving on {server.hosts} (data and log in {server.data_dir}); "
              "Ctrl-C, SIGTERM or SIGHUP stops it.\nsquall configuration:\n"
              f"  storm.zookeeper.servers: [\"{server.host}\"]\n"
              f"  storm.zookeeper.port: {server.port}", flush=True)
        code = server.wait()
        print(f"squall dev-zookeeper: the server exited with code {code}; "
              f"see {server.log_file}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("stopping ZooKeeper", file=sys.stderr)
        return 0
    finally:
        server.stop()
        restore()


if __name__ == "__main__":
    sys.exit(main())
