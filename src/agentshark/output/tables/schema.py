"""The tables of ``agentshark export parquet|duckdb``: the one list of their columns.

Both writers (:mod:`.parquet`, :mod:`.duckdb`), the row projection (:mod:`.rows`) and
``docs/sql.md`` (its column tables are generated from :data:`TABLES` by
:func:`markdown`, and a test checks the two agree) read this list; nothing else names a
column.

Names follow the OpenTelemetry GenAI semantic conventions v1.41.1 where one exists, dots as
underscores (``gen_ai.usage.input_tokens`` -> ``gen_ai_usage_input_tokens``); other names are
the report's own (``DESIGN.md``, contract ``agentshark.report/1``). Types:

* ``TIMESTAMPTZ``: a wire time (epoch seconds on the capture's clock in the report), in UTC,
  to the microsecond (the report's times are floats: a microsecond is what they hold);
* ``BIGINT``: counts, sizes, ports, status codes; ``DOUBLE``: other numbers;
* ``BOOLEAN``: completeness and other flags, NULL where the report has no value;
* ``VARCHAR``, ``VARCHAR[]`` (a list of strings);
* ``JSON``: any report value as JSON text (objects, lists, tool arguments), NULL where the
  report has null or nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ColumnType = Literal["VARCHAR", "VARCHAR[]", "BIGINT", "DOUBLE", "BOOLEAN", "TIMESTAMPTZ", "JSON"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Column:
    name: str
    type: ColumnType
    doc: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Table:
    name: str
    doc: str
    key: tuple[str, ...]  # the columns that name one row
    columns: tuple[Column, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


def _c(name: str, type_: ColumnType, doc: str) -> Column:
    return Column(name=name, type=type_, doc=doc)


_CAPTURE = _c("capture_file", "VARCHAR", "the input file (path as given on the command line)")
_SOURCE = _c("source_index", "BIGINT", "the input's place on the command line, from 0")
_DIAGS = _c("diagnostics", "JSON", "problems found, `[{code, severity, location, message}]`")


def _message_columns(side: str, time_names: tuple[str, str]) -> tuple[Column, ...]:
    """The columns one HTTP message (request or response) has in ``exchanges``."""
    first, last = time_names
    return (
        _c(f"{side}_version", "VARCHAR", "HTTP version as seen (`HTTP/1.1`, `HTTP/2`)"),
        _c(f"{side}_headers", "JSON", "headers in wire order, `[[name, value]]`, redacted"),
        _c(f"{side}_trailers", "JSON", "trailers, `[[name, value]]`; NULL when none"),
        _c(f"{side}_content_type", "VARCHAR", "`content-type` header"),
        _c(f"{side}_content_encoding", "VARCHAR", "`content-encoding` header"),
        _c(f"{side}_body_bytes", "BIGINT", "body size after content decoding"),
        _c(f"{side}_wire_body_bytes", "BIGINT", "body size as sent (before content decoding)"),
        _c(f"{side}_transfer_bytes", "BIGINT", "bytes with transfer framing (chunked), if any"),
        _c(f"{side}_gap_bytes", "BIGINT", "body bytes lost in capture gaps"),
        _c(f"{side}_framing", "VARCHAR", "stream framing detected (`sse`, `ndjson`...)"),
        _c(f"{side}_{first}", "TIMESTAMPTZ", f"{side}'s first byte on the wire"),
        _c(f"{side}_{last}", "TIMESTAMPTZ", f"{side}'s last byte on the wire"),
        _c(f"{side}_complete", "BOOLEAN", f"the whole {side} was seen"),
    )


EXCHANGES = Table(
    name="exchanges",
    doc="One row per exchange: an HTTP request and its response (or a JSON-RPC message pair "
    "over stdio), as the report's `exchanges`.",
    key=("exchange_id",),
    columns=(
        _c("exchange_id", "VARCHAR", "the exchange (`e1`...); `calls.exchange_id` joins here"),
        _SOURCE,
        _CAPTURE,
        _c("connection_id", "VARCHAR", "the TCP connection; joins `connections`"),
        _c("transport", "VARCHAR", "`http/1.1`, `h2`, `stdio`..."),
        _c("tls", "JSON", "TLS facts of the connection (version, cipher, SNI, ALPN)"),
        _c(
            "stream_id", "BIGINT", "HTTP/2 stream id; HTTP/1: the request's place on the connection"
        ),
        _c("http_request_method", "VARCHAR", "request method"),
        _c("url_full", "VARCHAR", "request URL, secret query parameters redacted"),
        _c("url_target", "VARCHAR", "request target as sent (path and query)"),
        *_message_columns("request", ("started", "ended")),
        _c("http_response_status_code", "BIGINT", "response status; NULL when none"),
        _c("response_reason", "VARCHAR", "HTTP/1 reason phrase"),
        _c("response_interim", "JSON", "1xx responses before the final one"),
        *_message_columns("response", ("first_byte", "ended")),
        _c(
            "stream_event_count",
            "BIGINT",
            "rows of `stream_events` for this exchange; NULL "
            "when its response has no stream framing",
        ),
        _c("upgrade", "VARCHAR", "protocol switched to by a 101 (`websocket`, `h2c`)"),
        _c("complete", "BOOLEAN", "both messages were seen whole"),
        _DIAGS,
        _c("extras", "JSON", "source-specific fields kept raw (HAR, cassette)"),
    ),
)

CALLS = Table(
    name="calls",
    doc="One row per recognized API call (model call, MCP or A2A message, tool HTTP call), "
    "as the report's `calls`.",
    key=("call_id",),
    columns=(
        _c("call_id", "VARCHAR", "the call (`call3`...)"),
        _c("exchange_id", "VARCHAR", "the exchange that carried it"),
        _SOURCE,
        _CAPTURE,
        _c("api", "VARCHAR", "API family (`openai.chat`, `anthropic.messages`, `mcp`...)"),
        _c("gen_ai_provider_name", "VARCHAR", "provider (`openai`, `anthropic`, a host...)"),
        _c(
            "gen_ai_operation_name",
            "VARCHAR",
            "operation (`chat`...; MCP/A2A: the JSON-RPC method)",
        ),
        _c("gen_ai_request_model", "VARCHAR", "model asked for"),
        _c("gen_ai_response_model", "VARCHAR", "model that answered"),
        _c("gen_ai_response_id", "VARCHAR", "the provider's response id"),
        _c("stream", "BOOLEAN", "the answer was streamed"),
        _c(
            "complete",
            "BOOLEAN",
            "the whole call was seen (its stream ended), not whether it succeeded",
        ),
        _c("gen_ai_response_finish_reasons", "VARCHAR[]", "finish reasons, raw as sent"),
        _c("gen_ai_usage_input_tokens", "BIGINT", "input tokens (cached ones included)"),
        _c("gen_ai_usage_output_tokens", "BIGINT", "output tokens"),
        _c("gen_ai_usage_cache_read_input_tokens", "BIGINT", "input tokens read from cache"),
        _c("gen_ai_usage_cache_creation_input_tokens", "BIGINT", "input tokens written to cache"),
        _c("gen_ai_usage_reasoning_output_tokens", "BIGINT", "reasoning tokens"),
        _c("usage_total_tokens", "BIGINT", "total tokens as the provider said"),
        _c("usage_raw", "JSON", "the usage object as the provider sent it"),
        _c("error_status", "BIGINT", "HTTP status of an error answer"),
        _c("error_type", "VARCHAR", "error type as sent (semconv `error.type`)"),
        _c("error_code", "VARCHAR", "error code as sent"),
        _c("error_message", "VARCHAR", "error message, redacted"),
        _c("error_source", "VARCHAR", "where the error was (`http`, `body`, `stream event N`)"),
        _c("started", "TIMESTAMPTZ", "request's first byte"),
        _c("first_byte", "TIMESTAMPTZ", "response's first byte"),
        _c("first_token", "TIMESTAMPTZ", "first content or tool-call delta of a stream"),
        _c("ended", "TIMESTAMPTZ", "response's last byte (or the answer's arrival)"),
        _c("stream_chunks", "BIGINT", "stream events with an arrival time"),
        _c("inter_chunk", "JSON", "gaps between stream events, `{median, p95, max}` seconds"),
        _c("input_message_count", "BIGINT", "rows of `messages` with direction `input`"),
        _c("output_message_count", "BIGINT", "rows of `messages` with direction `output`"),
        _c("system_instructions", "JSON", "system instruction parts (also in `parts`)"),
        _c("tool_definitions", "JSON", "tools offered to the model"),
        _c("request_params", "JSON", "request parameters (temperature, max_tokens...)"),
        _c("provider_request_id", "VARCHAR", "the provider's request id (`x-request-id`...)"),
        _c("traceparent", "VARCHAR", "W3C `traceparent` the request carried"),
        _c("jsonrpc_request_id", "VARCHAR", "JSON-RPC id (MCP, A2A)"),
        _c("mcp_session_id", "VARCHAR", "`Mcp-Session-Id`"),
        _c("a2a_task_id", "VARCHAR", "A2A task id"),
        _c("a2a_context_id", "VARCHAR", "A2A context id"),
        _c("ids", "JSON", "every id found, `{name: value}` (app ids under their own names)"),
        _c("id_sources", "JSON", "where each id was found, `{name: header or JSON path}`"),
        _DIAGS,
        _c("extras", "JSON", "request and response fields no column holds, kept raw"),
    ),
)

MESSAGES = Table(
    name="messages",
    doc="One row per input or output message of a call.",
    key=("call_id", "direction", "message_index"),
    columns=(
        _c("call_id", "VARCHAR", "the call; joins `calls`"),
        _c("direction", "VARCHAR", "`input` (sent to the model) or `output` (its answer)"),
        _c("message_index", "BIGINT", "place among the call's messages of this direction, from 0"),
        _c("role", "VARCHAR", "`system`, `user`, `assistant`, `tool`... as sent"),
        _c("name", "VARCHAR", "participant name (input messages)"),
        _c(
            "finish_reason",
            "VARCHAR",
            "finish reason, raw (output messages); NULL when none was sent",
        ),
        _c("part_count", "BIGINT", "rows of `parts` in this message"),
    ),
)

PARTS = Table(
    name="parts",
    doc="One row per message part (OpenTelemetry GenAI part schema), and per system "
    "instruction part.",
    key=("call_id", "direction", "message_index", "part_index"),
    columns=(
        _c("call_id", "VARCHAR", "the call; joins `calls`"),
        _c("direction", "VARCHAR", "`system`, `input` or `output`"),
        _c("message_index", "BIGINT", "the message (joins `messages`); NULL for `system`"),
        _c("part_index", "BIGINT", "place in the message (or among system parts), from 0"),
        _c(
            "type",
            "VARCHAR",
            "`text`, `reasoning`, `tool_call`, `tool_call_response`, "
            "`blob`, `uri`, `file`, or the vendor's own type",
        ),
        _c("content", "VARCHAR", "text of `text` and `reasoning` parts; base64 of `blob`"),
        _c(
            "gen_ai_tool_call_id",
            "VARCHAR",
            "tool call id (`tool_call`, `tool_call_response`); joins `tool_calls`",
        ),
        _c("gen_ai_tool_name", "VARCHAR", "tool name (`tool_call`)"),
        _c("arguments", "JSON", "tool call arguments, parsed; NULL when they did not parse"),
        _c("arguments_raw", "VARCHAR", "tool call arguments as sent (a string)"),
        _c("arguments_error", "VARCHAR", "why the arguments did not parse, with the position"),
        _c("response", "JSON", "tool result (`tool_call_response`)"),
        _c("mime_type", "VARCHAR", "media type (`blob`, `uri`, `file`)"),
        _c("modality", "VARCHAR", "`image`, `audio`, `video` (`blob`, `uri`, `file`)"),
        _c("uri", "VARCHAR", "`uri` parts"),
        _c("file_id", "VARCHAR", "`file` parts"),
        _c(
            "extra",
            "JSON",
            "every other field: `provider_details`, or all the fields of a vendor type",
        ),
    ),
)

TRACES = Table(
    name="traces",
    doc="One row per trace (agent run), as the report's `traces`.",
    key=("trace_id",),
    columns=(
        _c("trace_id", "VARCHAR", "W3C trace id (captured or derived)"),
        _c(
            "origin",
            "VARCHAR",
            "strongest evidence that joined its calls (`traceparent`, `history`, `single`...)",
        ),
        _c("trace_id_source", "VARCHAR", "`traceparent` or `generated`"),
        _c("call_ids", "VARCHAR[]", "every call (or exchange) in the trace, in time order"),
        _c("span_count", "BIGINT", "rows of `spans`"),
        _c("evidence", "JSON", "every join with what supports it"),
        _c("hints", "JSON", "other traces sharing a connection, close in time (no join)"),
    ),
)

SPANS = Table(
    name="spans",
    doc="One row per span: the agent span of each trace, a model span per model call, a "
    "tool span per tool call.",
    key=("trace_id", "span_id"),
    columns=(
        _c("trace_id", "VARCHAR", "the trace; joins `traces`"),
        _c("span_id", "VARCHAR", "span id (captured `traceparent` parent-id or derived)"),
        _c("parent_span_id", "VARCHAR", "parent span; NULL for the agent span"),
        _c("kind", "VARCHAR", "`agent`, `model` or `tool`"),
        _c("name", "VARCHAR", "`invoke_agent`, `chat {model}`, `execute_tool {name}`"),
        _c("started", "TIMESTAMPTZ", "span start on the wire's clock"),
        _c("ended", "TIMESTAMPTZ", "span end"),
        _c(
            "call_id",
            "VARCHAR",
            "the call this span stands for (model span; observed tool execution); joins `calls`",
        ),
        _c("gen_ai_tool_call_id", "VARCHAR", "tool spans: the model's tool call id"),
        _c("requested_by_call_id", "VARCHAR", "tool spans: the model call that asked"),
        _c(
            "result_in_call_id",
            "VARCHAR",
            "tool spans: the model call whose input carries the result",
        ),
        _c(
            "execution_id",
            "VARCHAR",
            "tool spans: the observed execution (a call id, or an "
            "exchange id for a plain HTTP request)",
        ),
        _c(
            "inferred",
            "BOOLEAN",
            "tool spans: no execution was seen on the wire; NULL for other kinds",
        ),
        _c("synthesized", "BOOLEAN", "nothing on the wire is this span (the agent span)"),
        _c("span_id_source", "VARCHAR", "`generated` or which `traceparent` gave the id"),
        _c("links", "JSON", "links to other calls (history...), `[{call_id, origin}]`"),
        _c(
            "attributes",
            "JSON",
            "span attributes (model, tokens, timings, tool arguments and result, long strings cut)",
        ),
    ),
)

TOOL_CALLS = Table(
    name="tool_calls",
    doc="One row per tool call a model asked for (and per MCP/A2A execution no model call "
    "asked for): the tool spans, with their attributes as columns. Long strings of "
    "`arguments` and `result` are cut (first 128 characters, length, digest) as in the "
    "report's spans; the whole arguments are in `parts`.",
    key=("trace_id", "span_id"),
    columns=(
        _c("trace_id", "VARCHAR", "the trace; joins `traces`"),
        _c("span_id", "VARCHAR", "the tool span; joins `spans`"),
        _c(
            "gen_ai_tool_call_id",
            "VARCHAR",
            "the model's tool call id; NULL for an execution no model call asked for",
        ),
        _c("gen_ai_tool_name", "VARCHAR", "tool name (the span name's `{name}`)"),
        _c("requested_by_call_id", "VARCHAR", "model call whose output holds the tool call"),
        _c(
            "result_in_call_id",
            "VARCHAR",
            "model call whose input carries its result; NULL when no later call sent one",
        ),
        _c(
            "execution_id",
            "VARCHAR",
            "observed execution: a call id (MCP, A2A) or an "
            "exchange id (HTTP); NULL when none was seen",
        ),
        _c("execution_call_id", "VARCHAR", "the executing call when it is one; joins `calls`"),
        _c("inferred", "BOOLEAN", "no execution was seen on the wire"),
        _c("started", "TIMESTAMPTZ", "execution start (or the model's answer when inferred)"),
        _c("ended", "TIMESTAMPTZ", "execution end (or the next request when inferred)"),
        _c("arguments", "JSON", "arguments as the model sent them"),
        _c("arguments_raw", "VARCHAR", "arguments as sent, when they did not parse"),
        _c("arguments_error", "VARCHAR", "why they did not parse"),
        _c("result", "JSON", "the result (from the next model call, or the execution)"),
        _c("result_from", "VARCHAR", "call the result was read from"),
        _c("execution_evidence", "VARCHAR", "why the execution was matched to the tool call"),
        _c("confidence", "DOUBLE", "strength of that match (1.0 equal name and arguments)"),
    ),
)

INCIDENTS = Table(
    name="incidents",
    doc="One row per protocol incident found (`docs/incidents.md` lists the rules).",
    key=("incident_index",),
    columns=(
        _c("incident_index", "BIGINT", "place in the report's `incidents`, from 0"),
        _c("rule", "VARCHAR", "rule id"),
        _c("severity", "VARCHAR", "`error`, `warning` or `info`"),
        _c("message", "VARCHAR", "what was wrong, redacted"),
        _c("call_id", "VARCHAR", "the call concerned; joins `calls`"),
        _c("exchange_id", "VARCHAR", "the exchange concerned; joins `exchanges`"),
        _c("trace_id", "VARCHAR", "the trace concerned; joins `traces`"),
        _c("evidence", "JSON", "what shows it: call, part, JSON path, values"),
    ),
)

STREAM_EVENTS = Table(
    name="stream_events",
    doc="One row per event of a streamed response body (SSE event or comment, NDJSON or "
    "JSON-array document, AWS event-stream message), in arrival order.",
    key=("exchange_id", "event_index"),
    columns=(
        _c("exchange_id", "VARCHAR", "the exchange; joins `exchanges` (and `calls`)"),
        _c("event_index", "BIGINT", "place in the body's events, from 0"),
        _c(
            "ts",
            "TIMESTAMPTZ",
            "arrival of the event's last byte; NULL when the source has no times (cassettes)",
        ),
        _c("body_offset", "BIGINT", "offset of the event in the decoded body"),
        _c("type", "VARCHAR", "`sse`, `sse-comment`, `json`, `aws-eventstream`"),
        _c("sse_event", "VARCHAR", "SSE `event:` name"),
        _c("sse_id", "VARCHAR", "SSE `id:`"),
        _c("sse_retry", "BIGINT", "SSE `retry:`"),
        _c(
            "data",
            "VARCHAR",
            "SSE data, JSON document text, or event-stream payload (`base64:` when not UTF-8)",
        ),
        _c("comment", "VARCHAR", "SSE comment text"),
        _c("aws_headers", "JSON", "event-stream message headers"),
        _c("complete", "BOOLEAN", "false: the event was cut off by the body's end"),
    ),
)

WS_MESSAGES = Table(
    name="ws_messages",
    doc="One row per message of a WebSocket session (text, binary, close, ping, pong), both "
    "directions in the order of their first frame, as the exchange's `messages` in "
    "`exchanges --events`: payloads under the same redaction and `--max-body` as bodies.",
    key=("exchange_id", "message_index"),
    columns=(
        _c("exchange_id", "VARCHAR", "the session's handshake exchange; joins `exchanges`"),
        _c("message_index", "BIGINT", "place in the session's messages, from 0"),
        _c("direction", "VARCHAR", "`client` or `server`"),
        _c("type", "VARCHAR", "`text`, `binary`, `close`, `ping`, `pong`"),
        _c("frames", "BIGINT", "frames the message came in"),
        _c("size", "BIGINT", "payload bytes as decoded (inflated); as sent when not decoded"),
        _c("wire_size", "BIGINT", "payload bytes on the wire, all frames"),
        _c("compressed", "BOOLEAN", "permessage-deflate (RSV1) was set"),
        _c("started", "TIMESTAMPTZ", "arrival of its first frame; NULL in message logs"),
        _c("ended", "TIMESTAMPTZ", "arrival of its last frame; NULL in message logs"),
        _c(
            "stream_offset",
            "BIGINT",
            "the direction's byte offset of its first frame (a message log: its place in it)",
        ),
        _c("complete", "BOOLEAN", "false: cut by a capture gap or by the capture's end"),
        _c("truncated", "BOOLEAN", "the reader kept only the first part of its payload"),
        _c("decoded", "BOOLEAN", "the payload could be read (false: undecodable DEFLATE)"),
        _c("close_code", "BIGINT", "a close message's status code (RFC 6455 §7.4)"),
        _c("close_reason", "VARCHAR", "a close message's reason, redacted"),
        _c("text", "VARCHAR", "a text message's payload, redacted, at most `--max-body` bytes"),
        _c("base64", "VARCHAR", "a binary or ping/pong payload as base64, at most `--max-body`"),
        _c("payload_cut", "BOOLEAN", "`text`/`base64` hold only the first part of the payload"),
        _DIAGS,
    ),
)

CONNECTIONS = Table(
    name="connections",
    doc="One row per TCP connection of the captures (or stdio session), as the report's "
    "`connections`.",
    key=("connection_id",),
    columns=(
        _c("connection_id", "VARCHAR", "the connection (`c1`, `s0.c1` with several inputs)"),
        _SOURCE,
        _CAPTURE,
        _c("client_address", "VARCHAR", "client IP address"),
        _c("client_port", "BIGINT", "client port"),
        _c("server_address", "VARCHAR", "server IP address"),
        _c("server_port", "BIGINT", "server port"),
        _c("protocol", "VARCHAR", "what it carried (`http/1.1`, `h2`, `tls`...)"),
        _c("handshake_seen", "BOOLEAN", "the TCP handshake was captured"),
        _c("first_seen", "TIMESTAMPTZ", "first packet"),
        _c("last_seen", "TIMESTAMPTZ", "last packet"),
        _c("client_bytes", "BIGINT", "payload bytes client to server"),
        _c("server_bytes", "BIGINT", "payload bytes server to client"),
        _c("client_packets", "BIGINT", "packets client to server"),
        _c("server_packets", "BIGINT", "packets server to client"),
        _c("client_gap_bytes", "BIGINT", "bytes missing client to server"),
        _c("server_gap_bytes", "BIGINT", "bytes missing server to client"),
        _c("client_end", "VARCHAR", "how the client direction ended (`fin`, `rst`...)"),
        _c("server_end", "VARCHAR", "how the server direction ended"),
        _c("client_switched_bytes", "BIGINT", "client bytes after a protocol switch"),
        _c("server_switched_bytes", "BIGINT", "server bytes after a protocol switch"),
        _c("exchange_count", "BIGINT", "exchanges it carried"),
        _c("tls", "JSON", "TLS facts (version, cipher, SNI, ALPN, decrypted or why not)"),
        _DIAGS,
    ),
)

SOURCES = Table(
    name="sources",
    doc="One row per input file (and key log), as the report's `sources`.",
    key=("source_index",),
    columns=(
        _SOURCE,
        _CAPTURE,
        _c("format", "VARCHAR", "`pcap`, `pcapng`, `har`, `vcr`, `stdio`, `keylog`..."),
        _c("bytes", "BIGINT", "bytes read"),
        _c("exchange_count", "BIGINT", "exchanges found"),
        _c("packet_count", "BIGINT", "packets (captures)"),
        _c("connection_count", "BIGINT", "TCP connections (captures)"),
        _DIAGS,
        _c("details", "JSON", "every other field (interfaces, TCP counters, key log secrets...)"),
    ),
)

TABLES: tuple[Table, ...] = (
    EXCHANGES,
    CALLS,
    MESSAGES,
    PARTS,
    TOOL_CALLS,
    SPANS,
    TRACES,
    INCIDENTS,
    STREAM_EVENTS,
    WS_MESSAGES,
    CONNECTIONS,
    SOURCES,
)
BY_NAME: dict[str, Table] = {t.name: t for t in TABLES}


def markdown() -> str:
    """The column tables of ``docs/sql.md`` (between its generated-section markers)."""
    out: list[str] = []
    for table in TABLES:
        out += [f"### `{table.name}`", "", table.doc, "", f"Key: {_key(table)}.", ""]
        out += ["| column | type | meaning |", "|---|---|---|"]
        out += [f"| `{c.name}` | {c.type} | {c.doc} |" for c in table.columns]
        out.append("")
    return "\n".join(out)


def _key(table: Table) -> str:
    return ", ".join(f"`{k}`" for k in table.key)
