"""Typed, read-only views of the JSON report (contract ``agentshark.report/1``, DESIGN.md).

Each view is a frozen dataclass built from the report's own dict of that object, after
redaction: what a view holds is exactly what ``agentshark analyze --format json`` prints,
so the Python API can show no more than the report does. ``data`` keeps that dict whole
(every field, including those a view does not name). Completeness is data here too: a
field the report has as ``null`` is None in the view, never a default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

Json = Any

__all__ = [
    "Call",
    "CallError",
    "Diagnostic",
    "Exchange",
    "Incident",
    "Message",
    "Part",
    "Source",
    "Span",
    "Timing",
    "ToolCall",
    "Trace",
    "Usage",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Diagnostic:
    """A problem found in the input: ``code`` (``tls.no_key``, ``http.truncated``...),
    ``severity`` (``error``, ``warning``, ``info``), where, and what."""

    code: str
    severity: str
    message: str
    location: str | None
    owner: str | None = None  # the exchange, call or source path it was reported on

    @classmethod
    def from_json(cls, d: Mapping[str, Json], owner: str | None = None) -> Diagnostic:
        return cls(
            code=str(d.get("code", "")),
            severity=str(d.get("severity", "")),
            message=str(d.get("message", "")),
            location=d.get("location"),
            owner=owner,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Part:
    """One message part: ``type`` is ``text``, ``reasoning``, ``tool_call``,
    ``tool_call_response``, ``blob``, ``uri``, ``file`` or a vendor's own type name."""

    type: str
    content: str | None  # text and reasoning parts (blob: the base64, when reported)
    data: Mapping[str, Json] = field(repr=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Json]) -> Part:
        content = d.get("content")
        return cls(
            type=str(d.get("type")),
            content=content if isinstance(content, str) else None,
            data=d,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """A tool call a model asked for (a ``tool_call`` part of a call's output).

    ``arguments`` is the parsed value or None when the string did not parse (then
    ``arguments_error`` says why and ``arguments_raw`` keeps the string)."""

    id: str | None
    name: str | None
    arguments: Json
    arguments_raw: str | None
    arguments_error: str | None
    call_id: str  # the model call whose output holds it

    @classmethod
    def from_part(cls, d: Mapping[str, Json], call_id: str) -> ToolCall:
        return cls(
            id=d.get("id"),
            name=d.get("name"),
            arguments=d.get("arguments"),
            arguments_raw=d.get("arguments_raw"),
            arguments_error=d.get("arguments_error"),
            call_id=call_id,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    role: str | None
    parts: tuple[Part, ...]
    name: str | None = None  # input messages: the participant's name, when sent
    finish_reason: str | None = None  # output messages

    @classmethod
    def from_json(cls, d: Mapping[str, Json]) -> Message:
        return cls(
            role=d.get("role"),
            parts=tuple(Part.from_json(p) for p in d.get("parts") or ()),
            name=d.get("name"),
            finish_reason=d.get("finish_reason"),
        )

    @property
    def text(self) -> str:
        """The text parts' content, joined (reasoning and tool parts left out)."""
        return "".join(p.content or "" for p in self.parts if p.type == "text")


@dataclass(frozen=True, slots=True, kw_only=True)
class CallError:
    """An error answer: HTTP status, the vendor's type and code, its message."""

    status: int | None
    type: str | None
    code: str | None
    message: str | None

    @classmethod
    def from_json(cls, d: Mapping[str, Json]) -> CallError:
        code = d.get("code")
        return cls(
            status=d.get("status"),
            type=d.get("type"),
            code=None if code is None else str(code),
            message=d.get("message"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    input_tokens: int | None
    output_tokens: int | None
    total_tokens: int | None
    data: Mapping[str, Json] = field(repr=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Json]) -> Usage:
        return cls(
            input_tokens=d.get("input_tokens"),
            output_tokens=d.get("output_tokens"),
            total_tokens=d.get("total_tokens"),
            data=d,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Timing:
    """Wire-clock times (epoch seconds); None when the source has none (cassettes)."""

    started: float | None
    first_byte: float | None
    first_token: float | None
    ended: float | None

    @classmethod
    def from_json(cls, d: Mapping[str, Json] | None) -> Timing:
        d = d or {}
        return cls(
            started=d.get("started"),
            first_byte=d.get("first_byte"),
            first_token=d.get("first_token"),
            ended=d.get("ended"),
        )

    @property
    def duration(self) -> float | None:
        if self.started is None or self.ended is None:
            return None
        return self.ended - self.started


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    """One API call (a model call, an MCP or A2A request...) as the report has it."""

    id: str
    exchange_id: str | None
    api: str
    operation: str | None
    provider: str | None
    request_model: str | None
    response_model: str | None
    stream: bool
    complete: bool
    finish_reasons: tuple[str, ...]
    system_instructions: tuple[Part, ...]
    input_messages: tuple[Message, ...]
    output_messages: tuple[Message, ...]
    usage: Usage | None
    error: CallError | None
    timing: Timing
    diagnostics: tuple[Diagnostic, ...]
    data: Mapping[str, Json] = field(repr=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Json]) -> Call:
        cid = str(d["id"])
        usage, error = d.get("usage"), d.get("error")
        return cls(
            id=cid,
            exchange_id=d.get("exchange_id"),
            api=str(d.get("api")),
            operation=d.get("operation"),
            provider=d.get("provider"),
            request_model=d.get("request_model"),
            response_model=d.get("response_model"),
            stream=bool(d.get("stream")),
            complete=bool(d.get("complete")),
            finish_reasons=tuple(d.get("finish_reasons") or ()),
            system_instructions=tuple(
                Part.from_json(p) for p in d.get("system_instructions") or ()
            ),
            input_messages=tuple(Message.from_json(m) for m in d.get("input_messages") or ()),
            output_messages=tuple(Message.from_json(m) for m in d.get("output_messages") or ()),
            usage=Usage.from_json(usage) if isinstance(usage, dict) else None,
            error=CallError.from_json(error) if isinstance(error, dict) else None,
            timing=Timing.from_json(d.get("timing")),
            diagnostics=tuple(Diagnostic.from_json(x, cid) for x in d.get("diagnostics") or ()),
            data=d,
        )

    @property
    def model(self) -> str | None:
        """The model that answered, else the one asked for."""
        return self.response_model or self.request_model

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls the model asked for in this call's output."""
        return tuple(
            ToolCall.from_part(p.data, self.id)
            for m in self.output_messages
            for p in m.parts
            if p.type == "tool_call"
        )

    @property
    def output_text(self) -> str:
        return "".join(m.text for m in self.output_messages)

    @property
    def tool_error(self) -> bool:
        """A tool result flagged as an error by its server (MCP ``isError``)."""
        return any(
            p.type == "tool_call_response"
            and (p.data.get("provider_details") or {}).get("is_error") is True
            for m in self.output_messages
            for p in m.parts
        )

    @property
    def status(self) -> str:
        """``error`` (an error answer, or a tool result flagged ``isError``), else
        ``incomplete`` (not all of it was seen), else ``ok``."""
        if self.error is not None or self.tool_error:
            return "error"
        return "ok" if self.complete else "incomplete"


@dataclass(frozen=True, slots=True, kw_only=True)
class Span:
    """A span of a trace: ``kind`` ``agent``, ``model`` (one per model call) or ``tool``
    (a tool call with its execution: ``execution`` names the observed MCP/A2A/HTTP call,
    ``inferred`` is True when none was seen on the wire)."""

    trace_id: str
    span_id: str
    parent_id: str | None
    kind: str
    name: str
    started: float | None
    ended: float | None
    call_id: str | None
    tool_call_id: str | None
    requested_by: str | None
    result_in: str | None
    execution: str | None
    inferred: bool
    attributes: Mapping[str, Json]
    data: Mapping[str, Json] = field(repr=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Json], trace_id: str) -> Span:
        return cls(
            trace_id=trace_id,
            span_id=str(d["span_id"]),
            parent_id=d.get("parent_id"),
            kind=str(d.get("kind")),
            name=str(d.get("name")),
            started=d.get("started"),
            ended=d.get("ended"),
            call_id=d.get("call_id"),
            tool_call_id=d.get("tool_call_id"),
            requested_by=d.get("requested_by"),
            result_in=d.get("result_in"),
            execution=d.get("execution"),
            inferred=bool(d.get("inferred")),
            attributes=d.get("attributes") or {},
            data=d,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Trace:
    """One agent run: its spans (the agent span first), the calls in it in time order,
    and the evidence that joined them (``origin``: the strongest)."""

    trace_id: str
    origin: str
    calls: tuple[str, ...]
    spans: tuple[Span, ...]
    evidence: tuple[Mapping[str, Json], ...]
    data: Mapping[str, Json] = field(repr=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Json]) -> Trace:
        tid = str(d["trace_id"])
        return cls(
            trace_id=tid,
            origin=str(d.get("origin")),
            calls=tuple(d.get("calls") or ()),
            spans=tuple(Span.from_json(s, tid) for s in d.get("spans") or ()),
            evidence=tuple(d.get("evidence") or ()),
            data=d,
        )

    @property
    def tool_executions(self) -> tuple[Span, ...]:
        return tuple(s for s in self.spans if s.kind == "tool")

    @property
    def model_spans(self) -> tuple[Span, ...]:
        return tuple(s for s in self.spans if s.kind == "model")


@dataclass(frozen=True, slots=True, kw_only=True)
class Incident:
    """A protocol mistake or agent failure found, with its evidence."""

    rule: str
    severity: str
    message: str
    call_id: str | None
    exchange_id: str | None
    trace_id: str | None
    evidence: Mapping[str, Json]
    data: Mapping[str, Json] = field(repr=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Json]) -> Incident:
        return cls(
            rule=str(d.get("rule")),
            severity=str(d.get("severity")),
            message=str(d.get("message")),
            call_id=d.get("call_id"),
            exchange_id=d.get("exchange_id"),
            trace_id=d.get("trace_id"),
            evidence=d.get("evidence") or {},
            data=d,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Exchange:
    """One HTTP (or WebSocket, gRPC, stdio) exchange: ``status`` None when no response was
    seen or the transport has none."""

    id: str
    transport: str | None
    connection: str | None
    method: str | None
    url: str | None
    status: int | None
    complete: bool
    diagnostics: tuple[Diagnostic, ...]
    data: Mapping[str, Json] = field(repr=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Json]) -> Exchange:
        req, resp = d.get("request") or {}, d.get("response") or {}
        xid = str(d["id"])
        return cls(
            id=xid,
            transport=d.get("transport"),
            connection=d.get("connection"),
            method=req.get("method"),
            url=req.get("url"),
            status=resp.get("status"),
            complete=bool(d.get("complete")),
            diagnostics=tuple(Diagnostic.from_json(x, xid) for x in d.get("diagnostics") or ()),
            data=d,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Source:
    """One input: its path, the format detected, and what went wrong reading it."""

    path: str
    format: str
    bytes: int | None
    diagnostics: tuple[Diagnostic, ...]
    data: Mapping[str, Json] = field(repr=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Json]) -> Source:
        path = str(d.get("path"))
        return cls(
            path=path,
            format=str(d.get("format")),
            bytes=d.get("bytes"),
            diagnostics=tuple(Diagnostic.from_json(x, path) for x in d.get("diagnostics") or ()),
            data=d,
        )

    @property
    def unreadable(self) -> bool:
        """The input could not be read (a ``source.*`` error: missing, not a capture...)."""
        return any(d.code.startswith("source.") for d in self.diagnostics)
