"""What API families read of a gRPC exchange: its method, its messages read with a bundled
schema (:mod:`agentshark.apis.protos`), and its status.

gRPC over HTTP/2 (https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md): the
request is a ``POST`` to ``/package.Service/Method`` with ``content-type: application/grpc``
(``+proto``), each body a sequence of length-prefixed messages (:mod:`agentshark.framing.grpc`,
compressed ones by the side's ``grpc-encoding``); the status is ``grpc-status`` in the
response trailers, or in the headers of a trailers-only response, with ``grpc-message``
percent-encoded. A response that ended without either has no status (None), never OK.

:func:`read_side` gives each message as proto3 JSON (``json_format``, lowerCamelCase names)
with its arrival time, or the reason it could not be read; nothing is dropped: a message cut
by the end of the body, one the schema does not parse, or a body without the protobuf
package are all said by Diagnostics.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from urllib.parse import unquote

from agentshark.apis.model import Json
from agentshark.apis.protos import schemas_for
from agentshark.apis.view import ExchangeView
from agentshark.errors import Diagnostic
from agentshark.framing import media_type
from agentshark.framing.events import FramingOutput, GrpcMessage
from agentshark.framing.grpc import GrpcDecoder, binary_metadata
from agentshark.model import header

__all__ = [
    "STATUS_NAMES",
    "GrpcStatus",
    "ReadMessage",
    "grpc_method",
    "grpc_status",
    "read_side",
    "status_details",
]

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


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadMessage:
    """One message of one side: its JSON (None when it could not be read) and where."""

    n: int  # its index on its side
    doc: dict[str, Json] | None
    ts: float
    offset: int
    complete: bool


def _message_setters() -> tuple[Callable[[ReadMessage, object], None], ...]:
    names = tuple(f.name for f in fields(ReadMessage))
    assert names == ("n", "doc", "ts", "offset", "complete"), names
    return tuple(getattr(ReadMessage, name).__set__ for name in names)


_set_n, _set_doc, _set_ts, _set_offset, _set_complete = _message_setters()
_object_new = object.__new__


def _read_message(
    n: int, doc: dict[str, Json] | None, ts: float, offset: int, complete: bool
) -> ReadMessage:
    """``ReadMessage(...)`` at half the cost, one per message of a stream: the slot
    descriptors, not the frozen dataclass's ``object.__setattr__`` (as ``framing.sse`` does)."""
    m: ReadMessage = _object_new(ReadMessage)
    _set_n(m, n)
    _set_doc(m, doc)
    _set_ts(m, ts)
    _set_offset(m, offset)
    _set_complete(m, complete)
    return m


@dataclass(frozen=True, slots=True, kw_only=True)
class GrpcStatus:
    code: int | None  # None: not seen
    name: str | None
    message: str | None


def grpc_method(view: ExchangeView) -> str | None:
    """``/package.Service/Method`` of a gRPC request (POST, ``application/grpc*``), or None."""
    req = view.exchange.request
    if req is None or view.method.upper() != "POST":
        return None
    ctype = media_type(header(req.headers, "content-type")) or ""
    if not ctype.startswith("application/grpc"):
        return None
    return view.path


def read_side(
    view: ExchangeView, *, request: bool, family: str
) -> tuple[list[ReadMessage], list[Diagnostic]]:
    """The messages of one side of the gRPC exchange ``view``, read with the bundled schema
    of its method; ``family`` prefixes the diagnostic codes (``a2a``, ``xai``)."""
    ex = view.exchange
    msg = ex.request if request else ex.response
    side = "request" if request else "response"
    where = f"{ex.id} {side}"
    diags: list[Diagnostic] = []
    if msg is None:
        return [], diags
    path = view.path
    schemas = schemas_for(path)
    types = schemas.method(path) if schemas is not None else None
    if schemas is None or types is None:
        why = "the protobuf package is not installed (pip install 'agentshark[grpc]')"
        if schemas is not None:
            why = f"the bundled schema has no method {path}"
        diags.append(
            Diagnostic(
                code=f"{family}.grpc_unread",
                message=f"the gRPC messages are not read: {why}",
                location=where,
            )
        )
        return [], diags
    type_name = types[0] if request else types[1]
    # the view's decoded bodies (content-encoding undone, shared with the report)
    encoding = header(msg.headers, "grpc-encoding")
    events: Sequence[FramingOutput]
    if not request and view.framing == "grpc" and (encoding or "identity") == "identity":
        events = view.events  # the same decoder on the same pieces, already run
    else:
        pieces = view.response_pieces if not request else [(msg.started or 0.0, view.request_body)]
        decoder = GrpcDecoder(location=f"{where} body", encoding=encoding)
        out_events: list[GrpcMessage | Diagnostic] = []
        ts = 0.0
        for ts, piece in pieces:
            out_events.extend(decoder.feed(piece, ts))
        out_events.extend(decoder.close(ts))
        events = out_events
    out: list[ReadMessage] = []
    for ev in events:
        if isinstance(ev, Diagnostic):
            diags.append(ev)
            continue
        if not isinstance(ev, GrpcMessage) or ev.trailers is not None:
            continue  # a gRPC-Web trailers frame: not a message
        doc = None
        if ev.complete and not ev.truncated and ev.payload is not None:
            doc, error = schemas.to_json(type_name, ev.payload)
            if error is not None:
                diags.append(
                    Diagnostic(
                        code=f"{family}.grpc_bad_message",
                        message=f"{side} message {len(out)} does not parse: {error}",
                        location=f"{where} body byte {ev.offset}",
                    )
                )
        out.append(_read_message(len(out), doc, ev.ts, ev.offset, ev.complete))
    return out, diags


def status_details(view: ExchangeView) -> bytes | None:
    """The bytes of ``grpc-status-details-bin`` (trailers, else headers), or None
    (:func:`~agentshark.framing.grpc.binary_metadata` reads base64 and true binary values)."""
    resp = view.exchange.response
    if resp is None:
        return None
    value = header(resp.trailers, "grpc-status-details-bin") or header(
        resp.headers, "grpc-status-details-bin"
    )
    return binary_metadata(value) if value else None


def grpc_status(view: ExchangeView) -> GrpcStatus:
    """The call's status from the trailers or a trailers-only response's headers."""
    resp = view.exchange.response
    if resp is None:
        return GrpcStatus(code=None, name=None, message=None)
    for source in (resp.trailers, resp.headers):
        raw = header(source, "grpc-status")
        if raw is not None:
            code = int(raw) if raw.strip().isdigit() else None
            text = header(source, "grpc-message")
            name = STATUS_NAMES[code] if code is not None and code < len(STATUS_NAMES) else None
            return GrpcStatus(
                code=code, name=name, message=unquote(text) if text is not None else None
            )
    return GrpcStatus(code=None, name=None, message=None)
