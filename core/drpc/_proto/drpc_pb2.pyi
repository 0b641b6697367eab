from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ExecuteRequest(_message.Message):
    __slots__ = ("function", "args")
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    function: str
    args: str
    def __init__(self, function: _Optional[str] = ..., args: _Optional[str] = ...) -> None: ...

class ExecuteReply(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: str
    def __init__(self, result: _Optional[str] = ...) -> None: ...

class FetchRequest(_message.Message):
    __slots__ = ("function", "max", "wait_secs", "holder")
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    WAIT_SECS_FIELD_NUMBER: _ClassVar[int]
    HOLDER_FIELD_NUMBER: _ClassVar[int]
    function: str
    max: int
    wait_secs: float
    holder: str
    def __init__(self, function: _Optional[str] = ..., max: _Optional[int] = ..., wait_secs: _Optional[float] = ..., holder: _Optional[str] = ...) -> None: ...

class Invocation(_message.Message):
    __slots__ = ("id", "args")
    ID_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    id: str
    args: str
    def __init__(self, id: _Optional[str] = ..., args: _Optional[str] = ...) -> None: ...

class Invocations(_message.Message):
    __slots__ = ("requests", "lease_secs")
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    LEASE_SECS_FIELD_NUMBER: _ClassVar[int]
    requests: _containers.RepeatedCompositeFieldContainer[Invocation]
    lease_secs: float
    def __init__(self, requests: _Optional[_Iterable[_Union[Invocation, _Mapping]]] = ..., lease_secs: _Optional[float] = ...) -> None: ...

class ResultRequest(_message.Message):
    __slots__ = ("id", "result")
    ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    id: str
    result: str
    def __init__(self, id: _Optional[str] = ..., result: _Optional[str] = ...) -> None: ...

class FailRequest(_message.Message):
    __slots__ = ("id", "reason")
    ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    id: str
    reason: str
    def __init__(self, id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class RenewRequest(_message.Message):
    __slots__ = ("holder", "ids", "started")
    HOLDER_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    STARTED_FIELD_NUMBER: _ClassVar[int]
    holder: str
    ids: _containers.RepeatedScalarFieldContainer[str]
    started: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, holder: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ..., started: _Optional[_Iterable[str]] = ...) -> None: ...

class RequeueRequest(_message.Message):
    __slots__ = ("holder", "ids")
    HOLDER_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    holder: str
    ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, holder: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ...) -> None: ...

class Empty(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class FunctionInfo(_message.Message):
    __slots__ = ("function", "waiting", "in_flight", "last_fetch_secs_ago")
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    LAST_FETCH_SECS_AGO_FIELD_NUMBER: _ClassVar[int]
    function: str
    waiting: int
    in_flight: int
    last_fetch_secs_ago: float
    def __init__(self, function: _Optional[str] = ..., waiting: _Optional[int] = ..., in_flight: _Optional[int] = ..., last_fetch_secs_ago: _Optional[float] = ...) -> None: ...

class FunctionList(_message.Message):
    __slots__ = ("functions",)
    FUNCTIONS_FIELD_NUMBER: _ClassVar[int]
    functions: _containers.RepeatedCompositeFieldContainer[FunctionInfo]
    def __init__(self, functions: _Optional[_Iterable[_Union[FunctionInfo, _Mapping]]] = ...) -> None: ...
