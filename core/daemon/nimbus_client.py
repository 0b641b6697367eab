"""The nimbus gRPC client used by the ``squall`` CLI and by supervisors.

It tries every address of ``nimbus.seeds`` (``host`` entries get ``nimbus.port``; ``host:port``
entries keep theirs), starting with the last one that answered. A seed whose connection is not
set up within the client's ``connect_timeout`` (a process that accepts connections but does not
answer: stopped with SIGSTOP, or frozen) is passed over for the next one: nothing was sent to
it. A standby nimbus refuses writes with ``FAILED_PRECONDITION`` naming the leader, and the
client goes there next. Errors nimbus raised come back as the same squall exception class
with nimbus's message; when no nimbus answers at all the client raises
:class:`NimbusUnavailableError` naming the addresses tried; when a change (a submit, a
kill, ...) got no answer in time, or a submit's connection dropped after it was all sent, it
says the change may have gone through and asks no other seed. While the nimbuses it reaches
say none of them leads (an election under way), a call asks them again for up to the
client's ``election_wait``.

Credentials come from the conf (:func:`squall.security.grpc_auth.client_channel`): the
``squall.auth.token`` is sent with every call, TLS is used when ``squall.tls.ca`` is set (with
the client certificate of ``squall.tls.cert`` / ``.key``). A refused caller gets
:class:`~squall.errors.AuthenticationError` (no or unknown credentials) or
:class:`~squall.errors.AuthorizationError` (another user's topology).

Thread-safe for concurrent calls (gRPC channels are). Calls block for at most ``timeout`` seconds
per address tried.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import grpc

from squall import errors
from squall.daemon._proto import nimbus_pb2 as pb
from squall.daemon._proto import nimbus_pb2_grpc as pb_grpc
from squall.errors import ConfigError, SquallError

log = logging.getLogger(__name__)

ERROR_KEY = "squall-error"
LEADER_KEY = "squall-leader"
CHUNK_BYTES = 1 << 20
#: the first pause before the seeds are asked again while no leader is elected (it doubles,
#: up to a second)
ELECTION_PAUSE_SECS = 0.1
#: how long a seed may take to set up its connection (up to nimbus's first HTTP/2 frame)
#: before the next seed is tried: milliseconds on a network (gRPC's own limit is 20 s)
CONNECT_SECS = 3.0
_BY_CODE: dict[Any, type[SquallError]] = {grpc.StatusCode.NOT_FOUND: errors.NotAliveError,
            grpc.StatusCode.ALREADY_EXISTS: errors.AlreadyAliveError,
            grpc.StatusCode.UNAUTHENTICATED: errors.AuthenticationError,
            grpc.StatusCode.PERMISSION_DENIED: errors.AuthorizationError,
            grpc.StatusCode.INVALID_ARGUMENT: errors.TopologyError}


class NimbusUnavailableError(SquallError):
    """No nimbus answered (none running, wrong ``nimbus.seeds`` / ``nimbus.port``)."""


def seed_addresses(conf: Mapping[str, Any]) -> list[str]:
    """``host:port`` of every nimbus in ``nimbus.seeds``."""
    seeds = conf.get("nimbus.seeds") or ["localhost"]
    if isinstance(seeds, str):
        seeds = [s for s in seeds.split(",") if s.strip()]
    port = int(conf.get("nimbus.port") or 6627)
    out = []
    for seed in seeds:
        seed = str(seed).strip()
        out.append(seed if ":" in seed else f"{seed}:{port}")
    return out


#: the most workers or executors a rebalance may ask for (nimbus's API carries them as int32)
MAX_REBALANCE_COUNT = 2**31 - 1


def parse_executors(items: list[str]) -> dict[str, int]:
    """The ``executors`` of a rebalance request from ``COMPONENT=N`` items (the CLI's
    ``--executors``, the UI's ``executors=`` query): ``["split=4", "count=2"]`` ->
    ``{"split": 4, "count": 2}``; the component is what comes before the last ``=``, so an id
    with ``=`` is named too (``a=b=2``). Raises ConfigError naming a malformed item or an N
    below 1 or above :data:`MAX_REBALANCE_COUNT`."""
    out: dict[str, int] = {}
    for item in items:
        comp, sep, value = item.rpartition("=")
        try:
            n = int(value)
        except ValueError:
            n = 0
        if not sep or not comp or not 1 <= n <= MAX_REBALANCE_COUNT:
            raise ConfigError(f"bad --executors entry {item!r}: expected COMPONENT=N with N "
                              f"from 1 to {MAX_REBALANCE_COUNT}")
        if comp in out:
            raise ConfigError(f"--executors names {comp!r} twice ({comp}={out[comp]}, {item})")
        out[comp] = n
    return out


def error_from_rpc(exc: grpc.RpcError, address: str) -> SquallError:
    """The squall exception nimbus raised, rebuilt from a failed call."""
    meta = dict(exc.trailing_metadata() or ())  # type: ignore[attr-defined]
    message = exc.details() or str(exc.code())  # type: ignore[attr-defined]
    found: Any = getattr(errors, str(meta.get(ERROR_KEY, "")), None)
    code: Any = exc.code()  # type: ignore[attr-defined]
    cls: type[SquallError] | None = _BY_CODE.get(code)
    if isinstance(found, type) and issubclass(found, SquallError):
        cls = found
    if cls is None:
        return SquallError(f"nimbus at {address}: {message}")
    err: SquallError = SquallError.__new__(cls)   # skip subclass __init__ signatures
    Exception.__init__(err, message)
    return err


def _tls_hint(exc: grpc.RpcError, tls: bool) -> str:
    """`` (TLS handshake failed ...)`` when a call failed on TLS, else ``""``. A server that
    refuses the client's certificate closes the connection after the handshake."""
    lowered = str(exc.details() or "").lower()  # type: ignore[attr-defined]
    if any(w in lowered for w in ("handshake", "ssl", "certificate")) or (
            tls and "socket closed" in lowered):
        return (" (TLS handshake failed or the certificate was refused: check squall.tls.ca, "
                "squall.tls.cert, squall.tls.key)")
    return ""


#: what gRPC says of a connection whose server never answered its handshake
_SILENT = "timed out before receiving SETTINGS frame"


class _Default:
    """The type of ``_DEFAULT``: "the client's timeout" where None means no limit."""


_DEFAULT = _Default()


class NimbusClient:
    """Calls nimbus, finding the leader among ``nimbus.seeds`` (see the module docstring)."""

    def __init__(self, conf: Mapping[str, Any], *, timeout: float = 30.0,
                 addresses: list[str] | None = None,
                 election_wait: float | None = None,
                 connect_timeout: float = CONNECT_SECS) -> None:
        self.addresses = addresses or seed_addresses(conf)
        self.timeout = timeout
        #: how long a seed may take to set up a connection before the next one is tried
        self.connect_timeout = connect_timeout
        #: how long a call asks again while the nimbuses it reaches say none leads (an
        #: election under way); None: the call's ``timeout``. Daemons that retry on their
        #: own schedule pass 0
        self.election_wait = timeout if election_wait is None else election_wait
        self._conf = dict(conf)
        from squall.security.settings import authentication_mode
        self._tls = bool(conf.get("squall.tls.ca")) or authentication_mode(conf) == "mtls"
        self._channels: dict[str, grpc.Channel] = {}
        self._preferred: str | None = None

    def _stub(self, address: str) -> pb_grpc.NimbusStub:
        channel = self._channels.get(address)
        if channel is None:
            from squall.security.grpc_auth import client_channel
            # a connection not set up within the connect timeout fails the call as
            # UNAVAILABLE, so the next seed is asked (gRPC's own limit is 20 s)
            channel = self._channels[address] = client_channel(self._conf, address, options=[
                ("grpc.max_receive_message_length", 64 << 20),
                ("grpc.min_reconnect_backoff_ms", max(1, int(self.connect_timeout * 1000)))])
        return pb_grpc.NimbusStub(channel)

    def _call(self, invoke: Callable[[pb_grpc.NimbusStub, float | None], Any],
              timeout: float | None | _Default = _DEFAULT, change: str = "",
              sent: Callable[[], bool] | None = None) -> Any:
        """Call the leader (``timeout`` s; the client's by default, None: no limit).
        ``change`` names what a call that changes state does ("the submit"): when the leader
        does not answer in time, or its connection drops once ``sent()`` says the whole
        request went out, it may have done it, so no other seed is tried and the error
        says so. While nimbuses answer that they are not the leader and none can name one
        that answers (an election under way: a nimbus just started, or a leader was just
        lost), the seeds are asked again, for up to ``election_wait`` seconds; a refusal
        changed nothing, so this is safe for changes too."""
        wait = self.timeout if isinstance(timeout, _Default) else timeout
        deadline = time.monotonic() + self.election_wait
        pause = ELECTION_PAUSE_SECS
        while True:
            answered, result, problems, electing = self._round(invoke, wait, change, sent)
            if answered:
                return result
            if not electing or time.monotonic() + pause > deadline:
                break
            time.sleep(pause)       # the election takes a moment: ask again
            pause = min(pause * 2, 1.0)
        if electing:    # nimbus runs, but none leads: their ZooKeeper, most likely
            hint = (f"a nimbus answered, but none was elected leader within "
                    f"{self.election_wait:g} s; nimbuses elect their leader through ZooKeeper "
                    "(storm.zookeeper.servers): can they reach it?")
        else:
            hint = "is `squall nimbus` running and nimbus.seeds right?"
        raise NimbusUnavailableError("no nimbus leader answered (tried " + "; ".join(problems)
                                     + "); " + hint)

    def _round(self, invoke: Callable[[pb_grpc.NimbusStub, float | None], Any],
               wait: float | None, change: str, sent: Callable[[], bool] | None
               ) -> tuple[bool, Any, list[str], bool]:
        """Ask the seeds in turn (the last one that answered first, then any leader a
        standby names) until one answers: (True, its result, [], False), or (False, None,
        what each said, whether any said it is not the leader)."""
        order = list(self.addresses)
        if self._preferred in order:
            order.remove(self._preferred)  # type: ignore[arg-type]
            order.insert(0, self._preferred)  # type: ignore[arg-type]
        tried: list[str] = []
        problems: list[str] = []
        electing = False
        while order:
            address = order.pop(0)
            if address in tried:
                continue
            tried.append(address)
            try:
                result = invoke(self._stub(address), wait)
            except grpc.RpcError as exc:
                code = exc.code()  # type: ignore[attr-defined]
                if code == grpc.StatusCode.DEADLINE_EXCEEDED and change:
                    raise NimbusUnavailableError(
                        f"nimbus at {address} did not answer within {wait:g} s; {change} may "
                        f"have gone through: see `squall list`") from None
                if code == grpc.StatusCode.UNAVAILABLE and change and sent is not None and sent():
                    raise NimbusUnavailableError(
                        f"the connection to nimbus at {address} dropped after the request was "
                        f"sent; {change} may have gone through: see `squall list`") from None
                if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                    problems.append(f"{address}: {code.name.lower()}"
                                    f"{self._hint(exc)}")
                    continue
                meta = dict(exc.trailing_metadata() or ())  # type: ignore[attr-defined]
                leader = meta.get(LEADER_KEY)
                if code == grpc.StatusCode.FAILED_PRECONDITION and leader is not None:
                    problems.append(f"{address}: not the leader")
                    electing = True
                    if leader and leader not in tried:
                        order.insert(0, str(leader))
                    continue
                raise error_from_rpc(exc, address) from None
            self._preferred = address
            return True, result, [], False
        return False, None, problems, electing

    def _hint(self, exc: grpc.RpcError) -> str:
        """Why a seed was unavailable, when its error says: it accepted the connection and
        never answered (stopped, frozen), or a TLS handshake failed (:func:`_tls_hint`)."""
        if _SILENT in str(exc.details() or ""):  # type: ignore[attr-defined]
            return (f" (it accepted the connection but did not answer within "
                    f"{self.connect_timeout:g} s: a nimbus stopped or frozen?)")
        return _tls_hint(exc, self._tls)

    # -- the API ------------------------------------------------------------------------------
    def submit_topology(self, name: str, conf: Mapping[str, Any], topology_json: Mapping[str, Any],
                        code_zip: bytes) -> str:
        """Upload a topology; returns its id. Raises AlreadyAliveError / TopologyError."""
        header = pb.SubmitHeader(name=name, conf_json=json.dumps(dict(conf)),
                                 topology_json=json.dumps(dict(topology_json)))

        sent = threading.Event()        # the current attempt's last chunk went out

        def chunks() -> Iterator[pb.SubmitChunk]:
            yield pb.SubmitChunk(header=header)
            for i in range(0, len(code_zip), CHUNK_BYTES):
                yield pb.SubmitChunk(data=code_zip[i:i + CHUNK_BYTES])
            sent.set()

        def upload(stub: pb_grpc.NimbusStub, timeout: float | None) -> Any:
            sent.clear()
            return stub.SubmitTopology(chunks(), timeout=timeout)

        reply = self._call(upload, self._submit_timeout(conf), "the submit", sent.is_set)
        return str(reply.topology_id)

    def _submit_timeout(self, conf: Mapping[str, Any]) -> float | None:
        """How long a submit may take: nimbus loads the package in a subprocess (up to
        ``validate.TIMEOUT_SECS``) and then, with ``topology.min.replication.count`` above
        1, waits for other nimbuses to hold it (``topology.max.replication.wait.time.sec``;
        -1: no limit, so neither has the submit)."""
        from squall.daemon.validate import TIMEOUT_SECS
        merged = {**self._conf, **conf}
        wait = 0.0
        if int(merged.get("topology.min.replication.count") or 1) > 1:
            wait = float(merged.get("topology.max.replication.wait.time.sec") or 0)
            if wait < 0:
                return None
        return self.timeout + TIMEOUT_SECS + wait

    def kill_topology(self, name: str, wait_secs: float | None = None) -> None:
        req = pb.KillRequest(name=name, has_wait=wait_secs is not None,
                             wait_secs=float(wait_secs or 0))
        self._call(lambda s, t: s.KillTopology(req, timeout=t), change="the kill")

    def activate(self, name: str) -> None:
        self._call(lambda s, t: s.Activate(pb.NameRequest(name=name), timeout=t),
                   change="the activation")

    def deactivate(self, name: str) -> None:
        self._call(lambda s, t: s.Deactivate(pb.NameRequest(name=name), timeout=t),
                   change="the deactivation")

    def rebalance(self, name: str, wait_secs: float | None = None, num_workers: int | None = None,
                  executors: Mapping[str, int] | None = None) -> None:
        """Rebalance ``name``; ConfigError for a count nimbus's API cannot carry (above
        :data:`MAX_REBALANCE_COUNT`), before anything is sent."""
        try:
            req = pb.RebalanceRequest(name=name, has_wait=wait_secs is not None,
                                      wait_secs=float(wait_secs or 0),
                                      num_workers=num_workers or 0,
                                      executors=dict(executors or {}))
        except (ValueError, TypeError) as exc:      # protobuf: "Value out of range: N"
            raise ConfigError(f"rebalance of {name!r}: workers and executor counts must be "
                              f"whole numbers from 1 to {MAX_REBALANCE_COUNT} ({exc})") from None
        self._call(lambda s, t: s.Rebalance(req, timeout=t), change="the rebalance")

    def set_log_levels(self, name: str, levels: Mapping[str, str], timeout_secs: float = 0
                       ) -> None:
        """Set run-time log levels (logger -> level or RESET) in every worker of ``name``,
        reverted after ``timeout_secs`` (0: never). ConfigError for a bad level."""
        req = pb.LogLevelsRequest(name=name, levels=dict(levels),
                                  timeout_secs=float(timeout_secs))
        self._call(lambda s, t: s.SetLogLevels(req, timeout=t), change="the change")

    def debug(self, name: str, component: str | None, enable: bool,
              sampling_pct: float = 100.0) -> None:
        """Start (or stop) sampling a component's emits (every component when None) into
        the events logs of the topology's workers."""
        req = pb.DebugRequest(name=name, component=component or "", enable=enable,
                              sampling_pct=float(sampling_pct))
        self._call(lambda s, t: s.Debug(req, timeout=t), change="the change")

    def cluster_info(self) -> pb.ClusterInfo:
        return self._call(lambda s, t: s.GetClusterInfo(pb.Empty(), timeout=t))

    def topology_info(self, name: str) -> dict[str, Any]:
        reply = self._call(lambda s, t: s.GetTopologyInfo(pb.NameRequest(name=name), timeout=t))
        return dict(json.loads(reply.info_json))

    def download(self, topology_id: str, file: str) -> bytes:
        """One file of a topology's package (NotAliveError if nimbus does not have it)."""
        req = pb.DownloadRequest(topology_id=topology_id, file=file)
        return self._call(lambda s, t: b"".join(c.data for c in s.Download(req, timeout=t)))

    def close(self) -> None:
        for channel in self._channels.values():
            channel.close()
        self._channels.clear()
