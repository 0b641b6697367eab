"""A subprocess forked (``preexec_fn``, as pyspark starts its JVM) while gRPC is busy in the
parent starts and exits cleanly: squall turns gRPC's fork handlers off, which killed some
such children before their exec."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.integration

CHILD = textwrap.dedent("""
    import signal, subprocess, threading
    from concurrent import futures
    import squall          # noqa: F401  (before grpc, as any program using squall's gRPC)
    import grpc

    server = grpc.server(futures.ThreadPoolExecutor(4))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    grpc.channel_ready_future(channel).result(timeout=30)
    call = channel.unary_unary("/squall.Test/Nothing")
    stop = threading.Event()

    def busy():                 # RPCs in flight all along (each answered UNIMPLEMENTED)
        while not stop.is_set():
            try:
                call(b"", timeout=1)
            except grpc.RpcError:
                pass

    thread = threading.Thread(target=busy)
    thread.start()
    died = 0
    for _ in range(400):
        child = subprocess.Popen(
            ["/bin/true"], stdin=subprocess.PIPE,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
        child.stdin.close()
        died += child.wait() != 0
    stop.set()
    thread.join()
    channel.close()
    server.stop(None)
    print(died)
""")


def test_children_forked_beside_busy_grpc_all_run() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "0", f"forked children died: {done.stdout.strip()} of 400"
