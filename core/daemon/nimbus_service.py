"""The gRPC face of nimbus (service ``squall.nimbus.Nimbus``).

Writes go to :class:`~squall.daemon.nimbus_topologies.TopologyLifecycle`, reads to
:class:`~squall.daemon.nimbus_info.NimbusReads`; this module only translates between protobuf
messages and them. Each handler runs on a gRPC worker thread, calls one of the two and maps
squall errors to status
codes with the error's message and class name in the trailing metadata (``squall-error``), which
:mod:`squall.daemon.nimbus_client` turns back into the same exception: NotAliveError ->
NOT_FOUND, AlreadyAliveError -> ALREADY_EXISTS, TopologyError / ConfigError -> INVALID_ARGUMENT,
a standby's refusal -> FAILED_PRECONDITION with ``squall-leader`` naming the leader,
AuthorizationError -> PERMISSION_DENIED, anything else -> INTERNAL (logged with its traceback;
nimbus keeps serving).

Authentication happens before a handler runs (:class:`squall.security.grpc_auth.AuthInterceptor`);
each handler asks :class:`~squall.daemon.nimbus_access.TopologyAccess` whether the caller
(:func:`~squall.security.grpc_auth.current_user`) may do what it asks.
"""
from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import grpc

from squall.daemon._proto import nimbus_pb2 as pb
from squall.daemon._proto import nimbus_pb2_grpc as pb_grpc
from squall.daemon.nimbus_access import TopologyAccess
from squall.daemon.nimbus_client import CHUNK_BYTES, ERROR_KEY, LEADER_KEY
from squall.daemon.nimbus_info import NimbusReads
from squall.daemon.nimbus_leader import NotLeaderError
from squall.daemon.nimbus_topologies import TopologyLifecycle
from squall.errors import (
    AlreadyAliveError,
    AuthenticationError,
    AuthorizationError,
    ConfigError,
    NotAliveError,
    SquallError,
    TopologyError,
)
from squall.security.grpc_auth import current_user

log = logging.getLogger(__name__)
MAX_UPLOAD_BYTES = 1 << 30


def _code_for(exc: SquallError) -> grpc.StatusCode:
    if isinstance(exc, NotLeaderError):
        return grpc.StatusCode.FAILED_PRECONDITION
    if isinstance(exc, NotAliveError):
        return grpc.StatusCode.NOT_FOUND
    if isinstance(exc, AlreadyAliveError):
        return grpc.StatusCode.ALREADY_EXISTS
    if isinstance(exc, AuthorizationError):
        return grpc.StatusCode.PERMISSION_DENIED
    if isinstance(exc, AuthenticationError):
        return grpc.StatusCode.UNAUTHENTICATED
    if isinstance(exc, (TopologyError, ConfigError)):
        return grpc.StatusCode.INVALID_ARGUMENT
    return grpc.StatusCode.INTERNAL


def _mapped(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def handler(self: NimbusService, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return method(self, request, context)
        except SquallError as exc:
            meta = [(ERROR_KEY, type(exc).__name__)]
            if isinstance(exc, NotLeaderError):
                meta.append((LEADER_KEY, exc.leader))
            context.set_trailing_metadata(tuple(meta))
            context.abort(_code_for(exc), str(exc))
        except Exception as exc:  # report, keep serving
            log.exception("nimbus %s failed", method.__name__)
            context.abort(grpc.StatusCode.INTERNAL, f"{type(exc).__name__}: {exc}")
    return handler


class NimbusService(pb_grpc.NimbusServicer):
    """The servicer: ``topologies`` takes the writes, ``reads`` answers the rest, ``access``
    says who may do what."""

    def __init__(self, topologies: TopologyLifecycle, reads: NimbusReads,
                 access: TopologyAccess) -> None:
        self._topologies = topologies
        self._reads = reads
        self._access = access

    @_mapped
    def SubmitTopology(self, request_iterator: Iterator[pb.SubmitChunk],
                       context: grpc.ServicerContext) -> pb.SubmitReply:
        owner = self._access.owner_for_submit(current_user())
        header = None
        parts: list[bytes] = []
        size = 0
        for chunk in request_iterator:
            if chunk.HasField("header"):
                header = chunk.header
            else:
                size += len(chunk.data)
                if size > MAX_UPLOAD_BYTES:
                    raise TopologyError("the code package is larger than 1 GiB")
                parts.append(chunk.data)
        if header is None:
            raise TopologyError("submit carried no header (name, conf, topology)")
        try:
            conf = json.loads(header.conf_json or "{}")
            topology = json.loads(header.topology_json)
        except ValueError as exc:
            raise TopologyError(f"submit carried malformed JSON: {exc}") from exc
        if not isinstance(conf, dict) or not isinstance(topology, dict):
            raise TopologyError("submit conf and topology must be JSON objects")
        tid = self._topologies.submit(header.name, conf, topology, b"".join(parts), owner=owner)
        return pb.SubmitReply(topology_id=tid)

    @_mapped
    def KillTopology(self, request: pb.KillRequest, context: grpc.ServicerContext) -> pb.Empty:
        self._access.check(current_user(), request.name, "kill")
        self._topologies.kill(request.name, request.wait_secs if request.has_wait else None)
        return pb.Empty()

    @_mapped
    def Activate(self, request: pb.NameRequest, context: grpc.ServicerContext) -> pb.Empty:
        self._access.check(current_user(), request.name, "activate")
        self._topologies.set_active(request.name, True)
        return pb.Empty()

    @_mapped
    def Deactivate(self, request: pb.NameRequest, context: grpc.ServicerContext) -> pb.Empty:
        self._access.check(current_user(), request.name, "deactivate")
        self._topologies.set_active(request.name, False)
        return pb.Empty()

    @_mapped
    def Rebalance(self, request: pb.RebalanceRequest, context: grpc.ServicerContext) -> pb.Empty:
        self._access.check(current_user(), request.name, "rebalance")
        self._topologies.rebalance(request.name,
                                   request.wait_secs if request.has_wait else None,
                                   request.num_workers or None, dict(request.executors))
        return pb.Empty()

    @_mapped
    def SetLogLevels(self, request: pb.LogLevelsRequest, context: grpc.ServicerContext
                     ) -> pb.Empty:
        self._access.check(current_user(), request.name, "set the log levels of")
        self._topologies.set_log_levels(request.name, dict(request.levels),
                                        float(request.timeout_secs))
        return pb.Empty()

    @_mapped
    def Debug(self, request: pb.DebugRequest, context: grpc.ServicerContext) -> pb.Empty:
        self._access.check(current_user(), request.name, "debug")
        self._topologies.set_debug(request.name, request.component, request.enable,
                                   float(request.sampling_pct))
        return pb.Empty()

    @_mapped
    def GetClusterInfo(self, request: pb.Empty, context: grpc.ServicerContext) -> pb.ClusterInfo:
        user = current_user()
        summary = self._reads.cluster_summary(lambda storm: self._access.may_see(user, storm))
        return pb.ClusterInfo(topologies=[pb.TopologySummary(**t) for t in summary["topologies"]],
                              supervisors=[pb.SupervisorSummary(**s)
                                           for s in summary["supervisors"]],
                              nimbuses=summary["nimbuses"], leader=summary["leader"])

    @_mapped
    def GetTopologyInfo(self, request: pb.NameRequest,
                        context: grpc.ServicerContext) -> pb.TopologyInfoReply:
        self._access.check(current_user(), request.name, "see")
        return pb.TopologyInfoReply(info_json=json.dumps(self._reads.topology_info(request.name)))

    @_mapped
    def Download(self, request: pb.DownloadRequest,
                 context: grpc.ServicerContext) -> Iterator[pb.Chunk]:
        self._access.check_topology_id(current_user(), request.topology_id, "download")
        path = self._reads.package_file(request.topology_id, request.file)
        data = path.read_bytes()
        return iter([pb.Chunk(data=data[i:i + CHUNK_BYTES])
                     for i in range(0, max(len(data), 1), CHUNK_BYTES)])
