"""The grpc and nng receivers' admission of peers under squall.transport.tls, piece by piece
(the conformance suite sends real strangers: tests/conformance/test_transport_encryption.py)."""
from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from squall.plugins.transport_grpc import membership
from squall.plugins.transport_grpc._proto import transport_pb2 as pb
from squall.plugins.transport_grpc.membership import CHALLENGE_KEY, MembershipCheck, StreamProof
from squall.plugins.transport_nng.gate import MembershipGate
from squall.security import certs
from squall.security.peer_proof import Prover, Verifier


class _Context:
    """What MembershipCheck asks of a grpc ServicerContext."""

    def __init__(self) -> None:
        self.cancelled = threading.Event()

    def peer(self) -> str:
        return "ipv4:192.0.2.7:40000"

    def cancel(self) -> None:
        self.cancelled.set()


def _silent(context: _Context) -> Iterator[pb.Batch]:
    context.cancelled.wait(5)       # a stream that says nothing until it is cancelled
    return
    yield


@pytest.fixture(scope="module")
def cluster() -> tuple[certs.Issued, certs.Issued]:
    ca = certs.make_ca("cluster")
    return ca, certs.issue(ca, "squall-worker")


def test_grpc_stream_proof_answers_the_challenge_and_is_admitted(
        cluster: tuple[certs.Issued, certs.Issued]) -> None:
    ca, member = cluster
    check = MembershipCheck(Verifier(ca.cert), "grpc receiver on port 1")
    challenge = check.challenge()
    proof = StreamProof(Prover(member.cert, member.key))
    proof.headers({CHALLENGE_KEY: challenge.hex()})
    first = proof.message()
    assert first is not None and first.member_cert == member.cert and not first.frame
    assert check.admit(iter([first]), _Context(), challenge)   # type: ignore[arg-type]
    # a receiver that asks for nothing gets nothing; a stream that ended, neither
    for headers in ({}, None, {CHALLENGE_KEY: "not hex"}):
        quiet = StreamProof(Prover(member.cert, member.key))
        quiet.headers(headers)
        assert quiet.message() is None


def test_grpc_batches_without_a_proof_are_refused(
        cluster: tuple[certs.Issued, certs.Issued], caplog: pytest.LogCaptureFixture) -> None:
    ca, _ = cluster
    check = MembershipCheck(Verifier(ca.cert), "grpc receiver on port 1")
    batch = pb.Batch(frame=b"\xa7intruder", session=b"s" * 8, seq=1)
    assert not check.admit(iter([batch]), _Context(), check.challenge())  # type: ignore[arg-type]
    assert ("grpc receiver on port 1 refused a peer at 192.0.2.7: it presented no certificate"
            in caplog.text)


def test_grpc_a_stream_that_sends_nothing_is_refused_in_time(
        cluster: tuple[certs.Issued, certs.Issued], caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    ca, _ = cluster
    monkeypatch.setattr(membership, "_PROOF_WAIT", 0.1)
    check = MembershipCheck(Verifier(ca.cert), "grpc receiver on port 1")
    context = _Context()
    assert not check.admit(_silent(context), context, check.challenge())  # type: ignore[arg-type]
    assert context.cancelled.is_set()
    assert "refused a peer at 192.0.2.7: it sent no proof of membership in 0.1 s" in caplog.text


class _Pipe:
    """A pynng Pipe whose TLS options cannot be read."""

    pipe = None               # not an nng_pipe: every option read fails
    remote_address = "198.51.100.4:5555"

    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_nng_gate_fails_closed(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    pipe: Any = _Pipe()
    MembershipGate("nng receiver on port 2").admit(pipe)
    assert pipe.closed
    assert ("nng receiver on port 2 refused a peer at 198.51.100.4: its certificate could not "
            "be checked" in caplog.text)
