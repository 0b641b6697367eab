from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SubmitHeader(_message.Message):
    __slots__ = ("name", "conf_json", "topology_json")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CONF_JSON_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_JSON_FIELD_NUMBER: _ClassVar[int]
    name: str
    conf_json: str
    topology_json: str
    def __init__(self, name: _Optional[str] = ..., conf_json: _Optional[str] = ..., topology_json: _Optional[str] = ...) -> None: ...

class SubmitChunk(_message.Message):
    __slots__ = ("header", "data")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    header: SubmitHeader
    data: bytes
    def __init__(self, header: _Optional[_Union[SubmitHeader, _Mapping]] = ..., data: _Optional[bytes] = ...) -> None: ...

class SubmitReply(_message.Message):
    __slots__ = ("topology_id",)
    TOPOLOGY_ID_FIELD_NUMBER: _ClassVar[int]
    topology_id: str
    def __init__(self, topology_id: _Optional[str] = ...) -> None: ...

class NameRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class KillRequest(_message.Message):
    __slots__ = ("name", "has_wait", "wait_secs")
    NAME_FIELD_NUMBER: _ClassVar[int]
    HAS_WAIT_FIELD_NUMBER: _ClassVar[int]
    WAIT_SECS_FIELD_NUMBER: _ClassVar[int]
    name: str
    has_wait: bool
    wait_secs: float
    def __init__(self, name: _Optional[str] = ..., has_wait: _Optional[bool] = ..., wait_secs: _Optional[float] = ...) -> None: ...

class RebalanceRequest(_message.Message):
    __slots__ = ("name", "has_wait", "wait_secs", "num_workers", "executors")
    class ExecutorsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    HAS_WAIT_FIELD_NUMBER: _ClassVar[int]
    WAIT_SECS_FIELD_NUMBER: _ClassVar[int]
    NUM_WORKERS_FIELD_NUMBER: _ClassVar[int]
    EXECUTORS_FIELD_NUMBER: _ClassVar[int]
    name: str
    has_wait: bool
    wait_secs: float
    num_workers: int
    executors: _containers.ScalarMap[str, int]
    def __init__(self, name: _Optional[str] = ..., has_wait: _Optional[bool] = ..., wait_secs: _Optional[float] = ..., num_workers: _Optional[int] = ..., executors: _Optional[_Mapping[str, int]] = ...) -> None: ...

class Empty(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TopologySummary(_message.Message):
    __slots__ = ("name", "id", "status", "status_reason", "num_workers", "num_executors", "num_tasks", "uptime_secs")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STATUS_REASON_FIELD_NUMBER: _ClassVar[int]
    NUM_WORKERS_FIELD_NUMBER: _ClassVar[int]
    NUM_EXECUTORS_FIELD_NUMBER: _ClassVar[int]
    NUM_TASKS_FIELD_NUMBER: _ClassVar[int]
    UPTIME_SECS_FIELD_NUMBER: _ClassVar[int]
    name: str
    id: str
    status: str
    status_reason: str
    num_workers: int
    num_executors: int
    num_tasks: int
    uptime_secs: int
    def __init__(self, name: _Optional[str] = ..., id: _Optional[str] = ..., status: _Optional[str] = ..., status_reason: _Optional[str] = ..., num_workers: _Optional[int] = ..., num_executors: _Optional[int] = ..., num_tasks: _Optional[int] = ..., uptime_secs: _Optional[int] = ...) -> None: ...

class SupervisorSummary(_message.Message):
    __slots__ = ("id", "hostname", "ports", "used_ports", "uptime_secs")
    ID_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    PORTS_FIELD_NUMBER: _ClassVar[int]
    USED_PORTS_FIELD_NUMBER: _ClassVar[int]
    UPTIME_SECS_FIELD_NUMBER: _ClassVar[int]
    id: str
    hostname: str
    ports: _containers.RepeatedScalarFieldContainer[int]
    used_ports: _containers.RepeatedScalarFieldContainer[int]
    uptime_secs: int
    def __init__(self, id: _Optional[str] = ..., hostname: _Optional[str] = ..., ports: _Optional[_Iterable[int]] = ..., used_ports: _Optional[_Iterable[int]] = ..., uptime_secs: _Optional[int] = ...) -> None: ...

class ClusterInfo(_message.Message):
    __slots__ = ("topologies", "supervisors", "nimbuses", "leader")
    TOPOLOGIES_FIELD_NUMBER: _ClassVar[int]
    SUPERVISORS_FIELD_NUMBER: _ClassVar[int]
    NIMBUSES_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    topologies: _containers.RepeatedCompositeFieldContainer[TopologySummary]
    supervisors: _containers.RepeatedCompositeFieldContainer[SupervisorSummary]
    nimbuses: _containers.RepeatedScalarFieldContainer[str]
    leader: str
    def __init__(self, topologies: _Optional[_Iterable[_Union[TopologySummary, _Mapping]]] = ..., supervisors: _Optional[_Iterable[_Union[SupervisorSummary, _Mapping]]] = ..., nimbuses: _Optional[_Iterable[str]] = ..., leader: _Optional[str] = ...) -> None: ...

class TopologyInfoReply(_message.Message):
    __slots__ = ("info_json",)
    INFO_JSON_FIELD_NUMBER: _ClassVar[int]
    info_json: str
    def __init__(self, info_json: _Optional[str] = ...) -> None: ...

class DownloadRequest(_message.Message):
    __slots__ = ("topology_id", "file")
    TOPOLOGY_ID_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    topology_id: str
    file: str
    def __init__(self, topology_id: _Optional[str] = ..., file: _Optional[str] = ...) -> None: ...

class Chunk(_message.Message):
    __slots__ = ("data",)
    DATA_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    def __init__(self, data: _Optional[bytes] = ...) -> None: ...
