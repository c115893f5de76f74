"""The report's view of a gRPC call: its method and status (on every exchange whose request
is ``application/grpc*``), and each length-prefixed message as a stream event (with
``--events``), its protobuf fields decoded without a schema (:mod:`agentshark.framing.protobuf`),
or by name with ``--proto`` or the bundled schema of its service (A2A, xAI).

The status is ``grpc-status`` from the response trailers, or from the headers of a
trailers-only response (https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md);
``grpc-message`` is percent-decoded; a response that ended without either has status None
("not seen"), never OK.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from agentshark.apis.protos import schemas_for
from agentshark.framing import media_type
from agentshark.framing.events import GrpcMessage
from agentshark.framing.proto_schema import ProtoSchemas
from agentshark.framing.protobuf import decode_raw
from agentshark.model import Exchange, header

__all__ = ["STATUS_NAMES", "GrpcNamer", "grpc_json", "grpc_message_json", "grpc_namer"]

GrpcNamer = Callable[[bytes], dict[str, Any]]  # a message's payload -> its named reading

# https://grpc.github.io/grpc/core/md_doc_statuscodes.html
STATUS_NAMES = (
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
)


def grpc_json(ex: Exchange) -> dict[str, Any] | None:
    """``{method, status, status_name, message, encoding, timeout, status_details}`` of a gRPC
    exchange, or None when the request is not gRPC."""
    req = ex.request
    if req is None or not (media_type(header(req.headers, "content-type")) or "").startswith(
        "application/grpc"
    ):
        return None
    resp = ex.response
    status: int | None = None
    message: str | None = None
    details: list[dict[str, Any]] | None = None
    if resp is not None:
        for source in (resp.trailers, resp.headers):
            raw = header(source, "grpc-status")
            if raw is not None:
                status = int(raw) if raw.strip().isdigit() else None
                text = header(source, "grpc-message")
                message = unquote(text) if text is not None else None
                details = _status_details(header(source, "grpc-status-details-bin"))
                break
    name = STATUS_NAMES[status] if status is not None and status < len(STATUS_NAMES) else None
    return {
        "method": req.target.partition("?")[0],
        "status": status,
        "status_name": name,
        "message": message,
        "encoding": {
            "request": header(req.headers, "grpc-encoding"),
            "response": header(resp.headers, "grpc-encoding") if resp else None,
        },
        "timeout": header(req.headers, "grpc-timeout"),
        "status_details": details,
    }


def _status_details(value: str | None) -> list[dict[str, Any]] | None:
    """``grpc-status-details-bin``: a ``google.rpc.Status`` (code 1, message 2, details 3 as
    ``Any``), base64 without padding as binary metadata is sent; its fields as read without
    a schema."""
    if not value:
        return None
    try:
        data = base64.b64decode(value + "=" * (-len(value) % 4), validate=False)
    except ValueError:
        return [{"error": "not base64", "offset": 0}]
    return decode_raw(data)


def grpc_namer(ex: Exchange, schemas: ProtoSchemas | None, *, request: bool) -> GrpcNamer | None:
    """How the messages of one side of ``ex`` read with the schema: its method's request or
    response type, from ``--proto`` or else the bundled schemas
    (:mod:`agentshark.apis.protos`: A2A, xAI); None when no schema has the method."""
    if ex.request is None:
        return None
    path = ex.request.target.partition("?")[0]
    types = schemas.method(path) if schemas is not None else None
    if types is None:  # the schemas bundled for agent protocols (A2A, xAI)
        schemas = schemas_for(path)
        types = schemas.method(path) if schemas is not None else None
    if schemas is None or types is None:
        return None
    type_name = types[0] if request else types[1]

    def named(payload: bytes) -> dict[str, Any]:
        value, error = schemas.to_json(type_name, payload)
        out: dict[str, Any] = {"type_name": type_name}
        if error is not None:
            out["schema_error"] = error
        else:
            out["message"] = value
        return out

    return named


def grpc_message_json(ev: GrpcMessage, named: GrpcNamer | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "ts": ev.ts,
        "offset": ev.offset,
        "type": "grpc",
        "compressed": ev.compressed,
        "size": ev.size,
        "wire_size": ev.wire_size,
    }
    if not ev.complete:
        out["complete"] = False
    if ev.truncated:
        out["truncated"] = True
    if ev.trailers is not None:
        out["trailers"] = [[k, v] for k, v in ev.trailers]
    elif ev.payload is not None:
        whole = ev.complete and not ev.truncated
        if whole and named is not None:
            out.update(named(ev.payload))
        if "message" not in out:  # no schema, or it did not parse: the wire as it is
            out["fields"] = decode_raw(ev.payload) if whole else None
        out["base64"] = base64.b64encode(ev.payload).decode()
    return out
