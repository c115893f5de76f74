"""Pipeline items -> the plain dicts of the JSON report (contract ``agentshark.report/1``).

Field names and meanings follow ``DESIGN.md``; fields are only ever added. Bodies are decoded
here, lazily, only to report their sizes and (with ``events``) their stream events. The dicts
of exchanges and calls come out through the options' :class:`~agentshark.output.redact.Redactor`
(the one redaction policy of every output); connections and sources are redacted by their
writer.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, replace
from typing import Any

from agentshark.apis.gemini.live import API as LIVE
from agentshark.apis.model import Call
from agentshark.apis.openai.realtime import API as REALTIME
from agentshark.apis.view import shared_decode
from agentshark.errors import Diagnostic
from agentshark.framing import decode_stream, detect_framing
from agentshark.framing.events import (
    EventStreamMessage,
    GrpcMessage,
    JsonDocument,
    SseComment,
    SseEvent,
)
from agentshark.framing.proto_schema import ProtoSchemas
from agentshark.framing.websocket import CLOSE, TEXT
from agentshark.http.content import DEFAULT_DECODE_LIMIT, DecodedBody
from agentshark.model import Body, Exchange, Headers, Request, Response, WsRecord, header
from agentshark.output.grpc import GrpcNamer, grpc_json, grpc_message_json, grpc_namer
from agentshark.output.redact import Redactor, redactor
from agentshark.pipeline import ConnectionReport, SourceReport
from agentshark.wire.events import Operation, QueueMessage

SCHEMA = "agentshark.report/1"
SNIFF_HEAD = 4096  # enough for a whole first NDJSON line in practice


@dataclass(frozen=True, slots=True, kw_only=True)
class RenderOptions:
    redact: bool = True
    events: bool = False
    max_body: int = DEFAULT_DECODE_LIMIT
    proto: ProtoSchemas | None = None  # --proto: gRPC messages with their field names

    @property
    def redactor(self) -> Redactor:
        """The redaction every writer built with these options goes through."""
        return redactor(self.redact)


def diagnostics_json(diags: list[Diagnostic]) -> list[dict[str, str]]:
    return [d.to_json() for d in diags]


@dataclass(frozen=True, slots=True)
class BodyView:
    """A message body decoded once for reporting."""

    decoded: DecodedBody
    content_type: str | None
    content_encoding: str | None
    framing: str | None
    grpc_encoding: str | None = None  # gRPC's per-message compression (grpc-encoding)


def view_body(
    body: Body, headers: Headers, *, max_body: int, streaming_hint: bool, location: str
) -> BodyView:
    ctype = header(headers, "content-type")
    cenc = header(headers, "content-encoding")
    decoded = shared_decode(body, cenc, limit=max_body, location=location)  # reused by calls
    framing = None
    if decoded.size and (decoded.decoded or not decoded.codings):
        head = _head(decoded.pieces, SNIFF_HEAD)
        framing = detect_framing(ctype, head, streaming_hint=streaming_hint)
    return BodyView(
        decoded=decoded,
        content_type=ctype,
        content_encoding=cenc,
        framing=framing,
        grpc_encoding=header(headers, "grpc-encoding") if framing == "grpc" else None,
    )


def _head(pieces: list[tuple[float, bytes]], n: int) -> bytes:
    """The first ``n`` bytes of a body, joining only as many pieces as that takes."""
    out = bytearray()
    for _, piece in pieces:
        out += piece[: n - len(out)]
        if len(out) >= n:
            break
    return bytes(out)


def exchange_json(ex: Exchange, opts: RenderOptions) -> dict[str, Any]:
    diags = list(ex.diagnostics)
    req = _request_json(ex.request, ex, opts, diags) if ex.request is not None else None
    resp = _response_json(ex, opts, diags) if ex.response is not None else None
    out: dict[str, Any] = {
        "id": ex.id,
        "source": ex.source,
        "connection": ex.connection,
        "transport": ex.transport,
        "tls": ex.tls,
        "stream": ex.stream,
        "request": req,
        "response": resp,
        "upgrade": ex.upgrade,
        "complete": ex.complete,
        "diagnostics": diagnostics_json(diags),
    }
    if ex.extras:
        out["extras"] = {k: _plain(v) for k, v in ex.extras.items()}
    rpc = grpc_json(ex)
    if rpc is not None:
        out["grpc"] = rpc
    if ex.operation is not None:
        out["operation"] = operation_json(ex.operation, opts)
    if ex.datagrams:  # HTTP/3 datagrams of the request stream (RFC 9297): sizes, times
        out["datagrams"] = [
            {"from": "server" if g.direction else "client", "size": g.size, "ts": g.ts}
            for g in ex.datagrams
        ]
    ready = {}  # gRPC messages come redacted already (grpc_message_json)
    for side in ("request", "response"):
        part = out[side]
        if part is not None and part["framing"] == "grpc" and "events" in part:
            ready[side] = part.pop("events")
    redacted: dict[str, Any] = opts.redactor.json(out)
    for side, events in ready.items():
        redacted[side]["events"] = events
    if ex.messages is not None:  # each message redacts what can hold text (its payload)
        redacted["messages"] = [ws_message_json(r, opts) for r in ex.messages]
    return redacted


def operation_json(op: Operation, opts: RenderOptions) -> dict[str, Any]:
    """A wire protocol's operation (DESIGN.md ``exchanges[].operation``); the result rows'
    values only with ``events``."""
    out: dict[str, Any] = {
        "protocol": op.protocol,
        "kind": op.kind,
        "index": op.index,
        "command": op.command,
        "statement": op.statement,
        "parameters": op.parameters,
        "started": op.started,
        "response_started": op.response_started,
        "ended": op.ended,
        "request_complete": op.request_complete,
        "response_complete": op.response_complete,
        "result": op.result,
        "rows": op.rows,
        "columns": op.columns,
        "error": op.error,
        "role": op.role,
        "details": op.details,
    }
    if op.messages:  # a queue protocol's messages (published, delivered, settled)
        out["messages"] = [queue_message_json(m) for m in op.messages]
    if opts.events:
        out["values"] = op.values
        out["values_cut"] = op.values_cut
    return out


def queue_message_json(message: QueueMessage) -> dict[str, Any]:
    """One queue message (README, Report): every field, so absent identities read as null."""
    return {
        "system": message.system,
        "action": message.action,
        "destination": message.destination,
        "routing_key": message.routing_key,
        "partition": message.partition,
        "offset": message.offset,
        "message_id": message.message_id,
        "correlation_id": message.correlation_id,
        "reply_to": message.reply_to,
        "channel": message.channel,
        "delivery_tag": message.delivery_tag,
        "multiple": message.multiple,
        "requeue": message.requeue,
        "redelivered": message.redelivered,
        "key": message.key,
        "headers": message.headers,
        "payload": message.payload,
        "size": message.size,
        "timestamp": message.timestamp,
        "details": message.details,
    }


def ws_message_json(record: WsRecord, opts: RenderOptions) -> dict[str, Any]:
    """One WebSocket message: what it is, its sizes and times; its payload (text, or base64
    for binary data) only with ``events``, at most ``max_body`` bytes of it. Written redacted:
    the text fields (payload, close reason, diagnostics) go through the options' redactor,
    the rest are numbers and names of our own (a session of many small messages would spend
    its time walking them)."""
    m = record.message
    out: dict[str, Any] = {
        "direction": "client" if m.direction == 0 else "server",
        "type": m.kind,
        "frames": m.frames,
        "size": m.size,
        "wire_size": m.wire_size,
        "compressed": m.compressed,
        "started": m.first_ts,
        "ended": m.last_ts,
        "offset": m.offset,
        "complete": m.complete,
        "truncated": m.truncated,
        "decoded": m.payload is not None,
    }
    redact = opts.redactor
    if m.opcode == CLOSE:
        out["close_code"] = m.close_code
        out["close_reason"] = redact.text(m.close_reason) if m.close_reason else m.close_reason
    if opts.events and m.payload is not None:
        payload = m.payload[: opts.max_body]
        cut = len(payload) < m.size
        if m.opcode == TEXT:
            out["text"] = redact.text(payload.decode("utf-8", "replace"))
        elif m.opcode != CLOSE:
            out["base64"] = redact.text(base64.b64encode(payload).decode())
        out["payload_cut"] = cut or m.truncated
    if record.diagnostics:
        out["diagnostics"] = redact.json(diagnostics_json(record.diagnostics))
    else:
        out["diagnostics"] = []  # most messages: no call, no walk
    return out


def _message_common(
    body: Body, headers: Headers, view: BodyView, opts: RenderOptions
) -> dict[str, Any]:
    return {
        "headers": [[k, v] for k, v in headers],
        "content_type": view.content_type,
        "content_encoding": view.content_encoding,
        "body_bytes": view.decoded.size,
        "wire_body_bytes": body.size,
        "transfer_bytes": body.transfer_bytes,
        "gap_bytes": body.gap_bytes,
        "framing": view.framing,
    }


def _request_json(
    req: Request, ex: Exchange, opts: RenderOptions, diags: list[Diagnostic]
) -> dict[str, Any]:
    view = view_body(
        req.body,
        req.headers,
        max_body=opts.max_body,
        streaming_hint=False,
        location=f"{ex.id} request body",
    )
    diags.extend(view.decoded.diagnostics)
    out: dict[str, Any] = {
        "method": req.method,
        "url": req.url,
        "target": req.target,
        "version": req.version,
        **_message_common(req.body, req.headers, view, opts),
        "started": req.started,
        "ended": req.ended,
        "complete": req.complete,
    }
    if req.trailers:
        out["trailers"] = [[k, v] for k, v in req.trailers]
    if opts.events:
        timed = req.started is not None
        out["body_pieces"] = [[ts if timed else None, len(p)] for ts, p in req.body.pieces]
        if view.framing == "grpc":  # a request body that is a stream of messages
            named = grpc_namer(ex, opts.proto, request=True)
            out["events"] = stream_events_json(
                view, diags, timed=timed, named=named, redactor=opts.redactor
            )
    return out


def _response_json(ex: Exchange, opts: RenderOptions, diags: list[Diagnostic]) -> dict[str, Any]:
    resp: Response | None = ex.response
    assert resp is not None
    streaming = bool(ex.request and _asks_for_stream(ex.request))
    view = view_body(
        resp.body,
        resp.headers,
        max_body=opts.max_body,
        streaming_hint=streaming,
        location=f"{ex.id} response body",
    )
    diags.extend(view.decoded.diagnostics)
    out: dict[str, Any] = {
        "status": resp.status or None,  # 0: no status on this transport
        "reason": resp.reason,
        "version": resp.version,
        **_message_common(resp.body, resp.headers, view, opts),
        "first_byte": resp.started,
        "ended": resp.ended,
        "complete": resp.complete,
    }
    if resp.interim:
        out["interim"] = [
            {
                "status": i.status,
                "reason": i.reason,
                "ts": i.ts,
                "headers": [[k, v] for k, v in i.headers],
            }
            for i in resp.interim
        ]
    if resp.trailers:
        out["trailers"] = [[k, v] for k, v in resp.trailers]
    if opts.events:
        # Sources without arrival times (cassettes) store 0.0: report them as unknown.
        timed = resp.started is not None
        out["body_pieces"] = [[ts if timed else None, len(p)] for ts, p in resp.body.pieces]
        if view.framing is not None:
            named = grpc_namer(ex, opts.proto, request=False)
            redactor = opts.redactor if view.framing == "grpc" else None
            events = stream_events_json(view, diags, timed=timed, named=named, redactor=redactor)
            out["events"] = opts.redactor.events(events)  # secrets split across events
    return out


def _asks_for_stream(req: Request) -> bool:
    """A request that asked for a streamed answer (Gemini streamGenerateContent...)."""
    return "stream" in req.target.lower()


def stream_events_json(
    view: BodyView,
    diags: list[Diagnostic],
    *,
    timed: bool = True,
    named: GrpcNamer | None = None,
    redactor: Redactor | None = None,
) -> list[dict[str, Any]]:
    """The stream events of a body, as captured (the exchange's redaction covers them, but
    for gRPC messages, redacted here by ``redactor``)."""
    assert view.framing is not None
    events: list[dict[str, Any]] = []
    for ev in decode_stream(view.decoded.pieces, view.framing, encoding=view.grpc_encoding):
        if not timed and not isinstance(ev, Diagnostic):
            ev = replace(ev, ts=None)  # type: ignore[arg-type]
        if isinstance(ev, Diagnostic):
            diags.append(ev)
        elif isinstance(ev, SseEvent):
            item: dict[str, Any] = {
                "ts": ev.ts,
                "offset": ev.offset,
                "type": "sse",
                "event": ev.event,
                "data": ev.data,
            }
            if ev.id is not None:
                item["id"] = ev.id
            if ev.retry is not None:
                item["retry"] = ev.retry
            if not ev.complete:
                item["complete"] = False
            events.append(item)
        elif isinstance(ev, SseComment):
            events.append(
                {"ts": ev.ts, "offset": ev.offset, "type": "sse-comment", "text": ev.text}
            )
        elif isinstance(ev, JsonDocument):
            text = ev.raw.decode("utf-8", "replace")
            item = {
                "ts": ev.ts,
                "offset": ev.offset,
                "type": "json",
                "data": text,
            }
            if not ev.complete:
                item["complete"] = False
            events.append(item)
        elif isinstance(ev, EventStreamMessage):
            events.append(
                {
                    "ts": ev.ts,
                    "offset": ev.offset,
                    "type": "aws-eventstream",
                    "headers": {k: _plain(v) for k, v in ev.headers.items()},
                    "payload": _payload_text(ev.payload),
                }
            )
        elif isinstance(ev, GrpcMessage):
            events.append(grpc_message_json(ev, named, redactor))
    return events


def _payload_text(payload: bytes) -> str:
    try:
        return payload.decode("utf-8")
    except UnicodeDecodeError:
        return "base64:" + base64.b64encode(payload).decode("ascii")


def _plain(value: object) -> Any:
    """A JSON-safe copy of a raw value kept from a source."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return "base64:" + base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return str(value)


def call_json(call: Call, opts: RenderOptions) -> dict[str, Any]:
    """A call as the report contract has it, through the options' redactor. The base64 of a
    Realtime or Live session's audio is written only with ``events`` (as stream events are)."""
    data = call.to_json()
    if call.api in (REALTIME, LIVE) and not opts.events:
        _omit_audio(data)
    redacted: dict[str, Any] = opts.redactor.json(data)
    return redacted


def _omit_audio(data: dict[str, Any]) -> None:
    for key in ("input_messages", "output_messages"):
        for message in data[key]:
            for part in message["parts"]:
                if part.get("type") == "blob" and part.get("modality") == "audio":
                    part["content"] = None  # a copy: the dicts inside are the call's own
                    part["provider_details"] = {
                        **part.get("provider_details", {}),
                        "content_omitted": "the base64 is written with --events",
                    }


def connection_json(rep: ConnectionReport) -> dict[str, Any]:
    c = rep.connection
    return {
        "id": c.id,
        "source": rep.source,
        "client": {"address": c.client[0], "port": c.client[1]},
        "server": {"address": c.server[0], "port": c.server[1]},
        "protocol": rep.protocol,
        "handshake_seen": c.handshake_seen,
        "first_ts": c.first_ts,
        "last_ts": c.last_ts,
        "bytes": {"client": c.bytes[0], "server": c.bytes[1]},
        "packets": {"client": c.packets[0], "server": c.packets[1]},
        "gap_bytes": {"client": c.gaps[0], "server": c.gaps[1]},
        "end": {"client": c.end[0], "server": c.end[1]},
        "switched_bytes": {"client": rep.switched_bytes[0], "server": rep.switched_bytes[1]},
        "exchanges": rep.exchanges,
        "tls": rep.tls,
        "diagnostics": diagnostics_json(rep.diagnostics),
    }


def source_json(rep: SourceReport) -> dict[str, Any]:
    out: dict[str, Any] = {
        "path": rep.path,
        "format": rep.format,
        "bytes": rep.bytes,
        "exchanges": rep.exchanges,
        "diagnostics": diagnostics_json(rep.diagnostics),
    }
    if rep.format == "keylog":
        out["secrets"] = rep.key_secrets
    if rep.format in ("pcap", "pcapng"):
        out["packets"] = rep.packets
        out["connections"] = rep.connections
        out["not_analyzed"] = rep.not_analyzed
        out["interfaces"] = [
            {"index": i.index, "linktype": i.linktype, "snaplen": i.snaplen, "name": i.name}
            for i in rep.interfaces
        ]
        out["decryption_secrets_blocks"] = rep.secrets_blocks
        out["tcp"] = rep.stats
    return out
