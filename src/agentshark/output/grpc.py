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

from agentshark.apis.grpc_view import STATUS_NAMES
from agentshark.apis.protos import schemas_for
from agentshark.framing import media_type
from agentshark.framing.events import GrpcMessage
from agentshark.framing.grpc import binary_metadata
from agentshark.framing.proto_schema import ProtoSchemas
from agentshark.framing.protobuf import decode_raw
from agentshark.model import Exchange, header
from agentshark.output.redact import Redactor

__all__ = ["STATUS_NAMES", "GrpcNamer", "grpc_json", "grpc_message_json", "grpc_namer"]

GrpcNamer = Callable[[bytes], dict[str, Any]]  # a message's payload -> its named reading


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
    ``Any``), as binary metadata is sent (base64, or true binary after a NUL:
    :func:`~agentshark.framing.grpc.binary_metadata`); its fields as read without a schema."""
    if not value:
        return None
    data = binary_metadata(value)
    if data is None:
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


def grpc_message_json(
    ev: GrpcMessage, named: GrpcNamer | None = None, redactor: Redactor | None = None
) -> dict[str, Any]:
    """One message as a stream event; with ``redactor``, already redacted (the exchange's
    walk skips gRPC events: a raw reading is many small dicts whose keys are ours, so only
    its strings are redacted, at a fraction of a generic walk's cost)."""
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
    if redactor is not None and redactor.enabled:
        _redact(out, redactor)
    return out


def _redact(out: dict[str, Any], redactor: Redactor) -> None:
    """Redact one message's event in place. The payload's base64 goes with its reading: when
    a credential was found in a string of the message (raw or named), the base64 is dropped
    (``base64: null``, ``redacted: true``), since base64 text hides the credential from any
    shape search; when the whole reading held none, the base64 is kept as it is."""
    found = False
    if out.get("fields"):
        fields = out["fields"]
        out["fields"] = _redact_fields(fields, redactor.text)
        found = out["fields"] is not fields
    if "message" in out:  # named JSON: any key, so the generic walk
        named = out["message"]
        out["message"] = redactor.json(named)
        found = out["message"] != named
    if "trailers" in out:
        out["trailers"] = redactor.json(out["trailers"])
    if "schema_error" in out:
        out["schema_error"] = redactor.text(out["schema_error"])
    if "base64" in out:
        if found:
            out["base64"], out["redacted"] = None, True
        elif out.get("fields", True) is None:  # no reading vouches for it: the text rules
            out["base64"] = redactor.text(out["base64"])


def _redact_fields(fields: list[dict[str, Any]], text: Callable[[str], str]) -> list[Any]:
    """A raw reading (:func:`decode_raw`) with its string values and errors redacted; the
    same list when nothing changed."""
    out: list[Any] = fields
    for i, field in enumerate(fields):
        value: Any = field.get("value")
        new: Any = value
        if isinstance(value, str):
            new = text(value)
        elif isinstance(value, list):
            new = _redact_fields(value, text)
        elif "error" in field:
            new = text(field["error"])
            if new != field["error"]:
                out = list(out) if out is fields else out
                out[i] = {**field, "error": new}
            continue
        if new is not value and new != value:
            out = list(out) if out is fields else out
            out[i] = {**field, "value": new}
    return out
