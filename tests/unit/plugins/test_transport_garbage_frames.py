"""Network transports drop frames that are not squall frames, log once, and keep serving."""
from __future__ import annotations

import logging

import grpc
import pynng
import pytest
import zmq

from squall.plugins.transport_grpc import GrpcTransport
from squall.plugins.transport_grpc._proto import transport_pb2 as pb
from squall.plugins.transport_grpc._proto import transport_pb2_grpc as pb_grpc
from squall.plugins.transport_nng import NngTransport
from squall.plugins.transport_zmq import ZmqTransport
from squall.transports.framing import encode
from squall.testing.contracts.transport import collect

GOOD = [(9, b"good")]
JUNK = [b"", b"junk frame", encode(GOOD)[:-1]]


def _raw_zmq(port: int) -> None:
    ctx = zmq.Context()
    sock = ctx.socket(zmq.PUSH)
    sock.connect(f"tcp://127.0.0.1:{port}")
    for frame in [*JUNK, encode(GOOD)]:
        sock.send(frame)
    sock.close(linger=2000)
    ctx.term()


def _raw_nng(port: int) -> None:
    # the receiver is a Pair1 listener; a bare frame (no sequence header) is taken as it is
    with pynng.Pair1(dial=f"tcp://127.0.0.1:{port}", send_timeout=10000) as sock:
        for frame in [*JUNK, encode(GOOD)]:
            sock.send(frame)


def _raw_grpc(port: int) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = pb_grpc.TransferStub(channel)
        acks = list(stub.Stream(iter([pb.Batch(frame=f) for f in [*JUNK, encode(GOOD)]])))
        # unnumbered batches (seq 0) are taken; there is nothing to acknowledge, and the
        # stream ends cleanly once the client is done
        assert acks == []


@pytest.mark.parametrize("cls, raw", [(ZmqTransport, _raw_zmq), (NngTransport, _raw_nng),
                                      (GrpcTransport, _raw_grpc)])
def test_invalid_frames_dropped_logged_once(cls, raw, caplog: pytest.LogCaptureFixture) -> None:
    with cls({}) as transport, caplog.at_level(logging.WARNING):
        receiver = transport.bind("garbage-topo", 0)
        raw(receiver.port)
        assert collect(receiver, 1) == GOOD
        assert receiver.garbage.count == len(JUNK)
        warnings = [r for r in caplog.records if "invalid frame" in r.getMessage()]
        assert len(warnings) == 1 and str(receiver.port) in warnings[0].getMessage()
