"""Report dicts -> table rows: a pure projection, one function per report section.

Each function takes one entry of the JSON report (contract ``agentshark.report/1``, already
through the redactor) and yields ``(table name, row)`` pairs, a row being a dict with exactly
the columns :mod:`.schema` lists for its table. Nothing is computed that the report does not
say, except counts of the rows a list became (``part_count``, ``span_count``...) and the
columns a list or object of the report is spread into; values are kept as the report has
them (times as epoch seconds, JSON values as Python values): the writers convert them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

Row = dict[str, Any]
Rows = Iterator[tuple[str, Row]]

_MESSAGE_FIELDS = (
    *("version", "headers", "trailers", "content_type", "content_encoding", "body_bytes"),
    *("wire_body_bytes", "transfer_bytes", "gap_bytes", "framing", "complete"),
)
_REQUEST = {
    "http_request_method": "method",
    "url_full": "url",
    "url_target": "target",
    "request_started": "started",
    "request_ended": "ended",
}
_RESPONSE = {
    "http_response_status_code": "status",
    "response_reason": "reason",
    "response_interim": "interim",
    "response_first_byte": "first_byte",
    "response_ended": "ended",
}


def exchange_rows(ex: dict[str, Any], capture_file: str | None) -> Rows:
    """``exchanges``, ``stream_events`` and ``ws_messages`` rows of one exchange (rendered
    with events)."""
    req = ex["request"]
    resp = ex["response"]
    events = resp.get("events") if resp is not None else None
    row: Row = {
        "exchange_id": ex["id"],
        "source_index": ex["source"],
        "capture_file": capture_file,
        "connection_id": ex["connection"],
        "transport": ex["transport"],
        "tls": ex["tls"],
        "stream_id": ex["stream"],
    }
    row.update({column: (req or {}).get(name) for column, name in _REQUEST.items()})
    row.update(_message(req, "request"))
    row.update({column: (resp or {}).get(name) for column, name in _RESPONSE.items()})
    row.update(_message(resp, "response"))
    row.update(
        stream_event_count=len(events) if events is not None else None,
        upgrade=ex["upgrade"],
        complete=ex["complete"],
        diagnostics=ex["diagnostics"],
        extras=ex.get("extras"),
    )
    yield "exchanges", row
    for index, event in enumerate(events or ()):
        yield "stream_events", _event(ex["id"], index, event)
    for index, message in enumerate(ex.get("messages") or ()):
        yield "ws_messages", _ws_message(ex["id"], index, message)


def _ws_message(exchange_id: str, index: int, m: dict[str, Any]) -> Row:
    return {
        "exchange_id": exchange_id,
        "message_index": index,
        **{k: m[k] for k in _WS_FIELDS},
        "started": m["started"] or None,  # a message log has no times: 0.0 in the report
        "ended": m["ended"] or None,
        "stream_offset": m["offset"],
        **{k: m.get(k) for k in _WS_OPTIONAL},
        "diagnostics": m["diagnostics"],
    }


_WS_FIELDS = (
    *("direction", "type", "frames", "size", "wire_size", "compressed", "complete"),
    *("truncated", "decoded"),
)
_WS_OPTIONAL = ("close_code", "close_reason", "text", "base64", "payload_cut")


def _message(msg: dict[str, Any] | None, side: str) -> Row:
    return {f"{side}_{name}": (msg or {}).get(name) for name in _MESSAGE_FIELDS}


def _event(exchange_id: str, index: int, ev: dict[str, Any]) -> Row:
    kind = ev["type"]
    data = ev.get("payload") if kind == "aws-eventstream" else ev.get("data")
    return {
        "exchange_id": exchange_id,
        "event_index": index,
        "ts": ev["ts"],
        "body_offset": ev["offset"],
        "type": kind,
        "sse_event": ev.get("event"),
        "sse_id": ev.get("id"),
        "sse_retry": ev.get("retry"),
        "data": data,
        "comment": ev.get("text"),
        "aws_headers": ev.get("headers"),
        "complete": ev.get("complete", True),  # the report says only "complete": false
    }


_ID_COLUMNS = {
    "provider_request_id": "provider_request_id",
    "traceparent": "traceparent",
    "jsonrpc_id": "jsonrpc_request_id",
    "mcp_session_id": "mcp_session_id",
    "a2a_task_id": "a2a_task_id",
    "a2a_context_id": "a2a_context_id",
}
_USAGE_COLUMNS = {
    "input_tokens": "gen_ai_usage_input_tokens",
    "output_tokens": "gen_ai_usage_output_tokens",
    "cached_input_tokens": "gen_ai_usage_cache_read_input_tokens",
    "cache_creation_input_tokens": "gen_ai_usage_cache_creation_input_tokens",
    "reasoning_tokens": "gen_ai_usage_reasoning_output_tokens",
    "total_tokens": "usage_total_tokens",
    "raw": "usage_raw",
}
_ERROR_FIELDS = ("status", "type", "code", "message", "source")


def call_rows(call: dict[str, Any], source_index: int | None, capture_file: str | None) -> Rows:
    """``calls``, ``messages`` and ``parts`` rows of one call."""
    usage = call["usage"] or {}
    error = call["error"] or {}
    timing = call["timing"]
    ids = call["ids"]
    row: Row = {
        "call_id": call["id"],
        "exchange_id": call["exchange_id"],
        "source_index": source_index,
        "capture_file": capture_file,
        "api": call["api"],
        "gen_ai_provider_name": call["provider"],
        "gen_ai_operation_name": call["operation"],
        "gen_ai_request_model": call["request_model"],
        "gen_ai_response_model": call["response_model"],
        "gen_ai_response_id": call["response_id"],
        "stream": call["stream"],
        "complete": call["complete"],
        "gen_ai_response_finish_reasons": call["finish_reasons"],
    }
    row.update({column: usage.get(name) for name, column in _USAGE_COLUMNS.items()})
    row.update({f"error_{name}": error.get(name) for name in _ERROR_FIELDS})
    row.update(
        started=timing["started"],
        first_byte=timing["first_byte"],
        first_token=timing["first_token"],
        ended=timing["ended"],
        stream_chunks=timing.get("chunks"),
        inter_chunk=timing.get("inter_chunk"),
        input_message_count=len(call["input_messages"]),
        output_message_count=len(call["output_messages"]),
        system_instructions=call["system_instructions"],
        tool_definitions=call["tool_definitions"],
        request_params=call["request_params"],
    )
    row.update({column: _text(ids.get(name)) for name, column in _ID_COLUMNS.items()})
    row.update(
        ids=ids,
        id_sources=call["id_sources"],
        diagnostics=call["diagnostics"],
        extras=call["extras"],
    )
    yield "calls", row
    cid = call["id"]
    for index, part in enumerate(call["system_instructions"]):
        yield "parts", part_row(cid, "system", None, index, part)
    for direction in ("input", "output"):
        for m_index, message in enumerate(call[f"{direction}_messages"]):
            yield (
                "messages",
                {
                    "call_id": cid,
                    "direction": direction,
                    "message_index": m_index,
                    "role": message["role"],
                    "name": message.get("name"),
                    "finish_reason": message.get("finish_reason"),
                    "part_count": len(message["parts"]),
                },
            )
            for p_index, part in enumerate(message["parts"]):
                yield "parts", part_row(cid, direction, m_index, p_index, part)


def _text(value: Any) -> str | None:
    """An id as text (JSON-RPC ids may be numbers)."""
    return None if value is None else str(value)


# The fields each known part type has columns for; every other field goes to ``extra``.
_PART_COLUMNS: dict[str, dict[str, str]] = {
    "text": {"content": "content"},
    "reasoning": {"content": "content"},
    "tool_call": {
        "id": "gen_ai_tool_call_id",
        "name": "gen_ai_tool_name",
        "arguments": "arguments",
        "arguments_raw": "arguments_raw",
        "arguments_error": "arguments_error",
    },
    "tool_call_response": {"id": "gen_ai_tool_call_id", "response": "response"},
    "blob": {"content": "content", "mime_type": "mime_type", "modality": "modality"},
    "uri": {"uri": "uri", "mime_type": "mime_type", "modality": "modality"},
    "file": {"file_id": "file_id", "mime_type": "mime_type", "modality": "modality"},
}
_PART_VALUES = (
    *("content", "gen_ai_tool_call_id", "gen_ai_tool_name", "arguments", "arguments_raw"),
    *("arguments_error", "response", "mime_type", "modality", "uri", "file_id"),
)


def part_row(
    call_id: str, direction: str, message_index: int | None, index: int, part: dict[str, Any]
) -> Row:
    kind = part["type"]
    columns = _PART_COLUMNS.get(kind, {})
    row: Row = {
        "call_id": call_id,
        "direction": direction,
        "message_index": message_index,
        "part_index": index,
        "type": kind,
        **dict.fromkeys(_PART_VALUES),
    }
    extra = {}
    for name, value in part.items():
        if name == "type":
            continue
        column = columns.get(name)
        if column is None:
            extra[name] = value
        else:
            row[column] = value
    row["extra"] = extra or None
    return row


def connection_row(conn: dict[str, Any], capture_file: str | None) -> Row:
    """The ``connections`` row of one connection report."""
    row: Row = {
        "connection_id": conn["id"],
        "source_index": conn["source"],
        "capture_file": capture_file,
        "client_address": conn["client"]["address"],
        "client_port": conn["client"]["port"],
        "server_address": conn["server"]["address"],
        "server_port": conn["server"]["port"],
        "protocol": conn["protocol"],
        "handshake_seen": conn["handshake_seen"],
        "first_seen": conn["first_ts"],
        "last_seen": conn["last_ts"],
    }
    for side in ("client", "server"):
        row[f"{side}_bytes"] = conn["bytes"][side]
        row[f"{side}_packets"] = conn["packets"][side]
        row[f"{side}_gap_bytes"] = conn["gap_bytes"][side]
        row[f"{side}_end"] = conn["end"][side]
        row[f"{side}_switched_bytes"] = conn["switched_bytes"][side]
    row.update(exchange_count=conn["exchanges"], tls=conn["tls"], diagnostics=conn["diagnostics"])
    return row


_SOURCE_FIELDS = frozenset(("path", "format", "bytes", "exchanges", "diagnostics"))


def source_row(index: int, src: dict[str, Any]) -> Row:
    """The ``sources`` row of one source report."""
    details = {k: v for k, v in src.items() if k not in _SOURCE_FIELDS | {"packets", "connections"}}
    return {
        "source_index": index,
        "capture_file": src["path"],
        "format": src["format"],
        "bytes": src["bytes"],
        "exchange_count": src["exchanges"],
        "packet_count": src.get("packets"),
        "connection_count": src.get("connections"),
        "diagnostics": src["diagnostics"],
        "details": details or None,
    }


def trace_rows(trace: dict[str, Any]) -> Rows:
    """``traces``, ``spans`` and ``tool_calls`` rows of one trace."""
    tid = trace["trace_id"]
    yield (
        "traces",
        {
            "trace_id": tid,
            "origin": trace["origin"],
            "trace_id_source": trace["trace_id_source"],
            "call_ids": trace["calls"],
            "span_count": len(trace["spans"]),
            "evidence": trace["evidence"],
            "hints": trace["hints"],
        },
    )
    for span in trace["spans"]:
        yield (
            "spans",
            {
                "trace_id": tid,
                "span_id": span["span_id"],
                "parent_span_id": span["parent_id"],
                "kind": span["kind"],
                "name": span["name"],
                "started": span["started"],
                "ended": span["ended"],
                "call_id": span["call_id"],
                "gen_ai_tool_call_id": span.get("tool_call_id"),
                "requested_by_call_id": span.get("requested_by"),
                "result_in_call_id": span.get("result_in"),
                "execution_id": span.get("execution"),
                "inferred": span.get("inferred"),
                "synthesized": span.get("synthesized", False),  # the report says only true
                "span_id_source": span["span_id_source"],
                "links": span["links"],
                "attributes": span["attributes"],
            },
        )
        if span["kind"] == "tool":
            yield "tool_calls", _tool_call(tid, span)


_TOOL_PREFIX = "execute_tool "


def _tool_call(trace_id: str, span: dict[str, Any]) -> Row:
    attrs = span["attributes"]
    name = span["name"]
    return {
        "trace_id": trace_id,
        "span_id": span["span_id"],
        "gen_ai_tool_call_id": span["tool_call_id"],
        "gen_ai_tool_name": name[len(_TOOL_PREFIX) :] if name.startswith(_TOOL_PREFIX) else None,
        "requested_by_call_id": span["requested_by"],
        "result_in_call_id": span["result_in"],
        "execution_id": span["execution"],
        "execution_call_id": span["call_id"],
        "inferred": span["inferred"],
        "started": span["started"],
        "ended": span["ended"],
        "arguments": attrs.get("arguments"),
        "arguments_raw": attrs.get("arguments_raw"),
        "arguments_error": attrs.get("arguments_error"),
        "result": attrs.get("result"),
        "result_from": attrs.get("result_from"),
        "execution_evidence": attrs.get("execution_evidence"),
        "confidence": attrs.get("confidence"),
    }


def incident_row(index: int, incident: dict[str, Any]) -> Row:
    return {
        "incident_index": index,
        "rule": incident["rule"],
        "severity": incident["severity"],
        "message": incident["message"],
        "call_id": incident.get("call_id"),
        "exchange_id": incident.get("exchange_id"),
        "trace_id": incident.get("trace_id"),
        "evidence": incident["evidence"],
    }
