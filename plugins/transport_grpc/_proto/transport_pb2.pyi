from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class Batch(_message.Message):
    __slots__ = ("frame", "session", "seq", "count", "member_cert", "member_proof")
    FRAME_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    MEMBER_CERT_FIELD_NUMBER: _ClassVar[int]
    MEMBER_PROOF_FIELD_NUMBER: _ClassVar[int]
    frame: bytes
    session: bytes
    seq: int
    count: int
    member_cert: bytes
    member_proof: bytes
    def __init__(self, frame: _Optional[bytes] = ..., session: _Optional[bytes] = ..., seq: _Optional[int] = ..., count: _Optional[int] = ..., member_cert: _Optional[bytes] = ..., member_proof: _Optional[bytes] = ...) -> None: ...

class Ack(_message.Message):
    __slots__ = ("seq",)
    SEQ_FIELD_NUMBER: _ClassVar[int]
    seq: int
    def __init__(self, seq: _Optional[int] = ...) -> None: ...
