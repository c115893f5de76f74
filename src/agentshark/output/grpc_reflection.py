"""gRPC server reflection seen in the input: the descriptors it carries, so the other RPCs of
the same input read with field names.

A reflection client (grpcurl, grpcui, Postman, grpcio-reflection's
``ProtoReflectionDescriptorDatabase``) calls ``ServerReflectionInfo``, a bidi stream, of
``grpc.reflection.v1.ServerReflection`` or its older twin ``grpc.reflection.v1alpha`` (the
same messages: https://github.com/grpc/grpc/blob/master/src/proto/grpc/reflection/v1/reflection.proto).
Each ``ServerReflectionResponse`` answering ``file_by_filename``, ``file_containing_symbol``
or ``file_containing_extension`` holds a ``FileDescriptorResponse`` (field 4) whose
``file_descriptor_proto`` (field 1, repeated) are serialized ``FileDescriptorProto`` s: the
file asked for and (as servers send them) the files it imports. They are read here without
a schema of the reflection service itself (its field numbers are fixed by that .proto) and
added to the run's :class:`~agentshark.framing.proto_schema.ProtoSchemas`.

Order: the JSON report writer (:mod:`agentshark.output.jsonreport`) learns from a reflection
exchange the moment it arrives, and holds back the gRPC exchanges whose method no schema
names yet, per connection, until that connection ends (or a reflection exchange on it
arrives), so calls that finished before the reflection stream (grpcurl keeps its stream
open until it exits) still read with names. Calls on another connection that were written
before any reflection are not rewritten.
"""

from __future__ import annotations

from agentshark.errors import Diagnostic
from agentshark.framing import decode_stream
from agentshark.framing.events import GrpcMessage
from agentshark.framing.proto_schema import ProtoSchemas
from agentshark.framing.protobuf import wire_fields
from agentshark.http.content import decode_body
from agentshark.model import Exchange, header

__all__ = ["REFLECTION_SERVICES", "is_reflection", "learn_reflection", "reflected_files"]

REFLECTION_SERVICES = (
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
)
_METHODS = frozenset(f"/{s}/ServerReflectionInfo" for s in REFLECTION_SERVICES)
_FILE_DESCRIPTOR_RESPONSE = 4  # ServerReflectionResponse.file_descriptor_response
_FILE_DESCRIPTOR_PROTO = 1  # FileDescriptorResponse.file_descriptor_proto (repeated bytes)
_LIMIT = 64 << 20  # decoded bytes of a reflection response body read at most


def is_reflection(ex: Exchange) -> bool:
    """Whether ``ex`` is a call of a server reflection service."""
    req = ex.request
    return req is not None and req.target.partition("?")[0] in _METHODS


def reflected_files(payload: bytes) -> list[bytes]:
    """The serialized ``FileDescriptorProto`` s of one ``ServerReflectionResponse`` (none
    when it answers something else, or is not a message)."""
    out: list[bytes] = []
    for number, value in wire_fields(payload) or ():
        if number == _FILE_DESCRIPTOR_RESPONSE and isinstance(value, bytes):
            for inner, proto in wire_fields(value) or ():
                if inner == _FILE_DESCRIPTOR_PROTO and isinstance(proto, bytes):
                    out.append(proto)
    return out


def learn_reflection(ex: Exchange, schemas: ProtoSchemas) -> list[Diagnostic]:
    """Add the files the responses of reflection exchange ``ex`` carry to ``schemas``;
    Diagnostics for what could not be added."""
    resp = ex.response
    if resp is None or not resp.body.size:
        return []
    where = f"{ex.id} response body"
    decoded = decode_body(resp.body, header(resp.headers, "content-encoding"), limit=_LIMIT)
    files: list[bytes] = []
    for ev in decode_stream(decoded.pieces, "grpc", encoding=header(resp.headers, "grpc-encoding")):
        if isinstance(ev, GrpcMessage) and ev.payload is not None and ev.complete:
            files += reflected_files(ev.payload)
    return [
        Diagnostic(code="grpc.reflection", message=problem, location=where)
        for problem in schemas.add_files(files)
    ]
