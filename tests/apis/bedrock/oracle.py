"""botocore's reading of a Bedrock Runtime response, in one canonical form.

The response bytes go through botocore exactly as boto3 hands them to a user: the
``bedrock-runtime`` service model (``botocore.session.get_session().get_service_model``), its
``rest-json`` parser for the body and errors, and its ``EventStream`` (``EventStreamBuffer``
framing, ``EventStreamJSONParser`` per event) for streams. What a boto3 user then does with the
events (concatenate the deltas of a content block, ``json.loads`` the tool input at the end,
read the vendor's JSON out of ``chunk.bytes``) is written here after the AWS user guide, not
after agentshark.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

import botocore
import botocore.session
from botocore.compat import HTTPHeaders
from botocore.eventstream import EventStreamError
from botocore.parsers import create_parser

from agentshark.apis.view import ExchangeView

_MODEL = botocore.session.get_session().get_service_model("bedrock-runtime")
_OPERATIONS = {
    "converse": "Converse",
    "converse-stream": "ConverseStream",
    "invoke": "InvokeModel",
    "invoke-with-response-stream": "InvokeModelWithResponseStream",
}


class _Raw:
    """What botocore's endpoint passes as a streamed body: an object with ``stream()``."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self) -> Any:
        yield self._body

    def close(self) -> None:
        pass


@dataclass
class Reading:
    fields: dict[str, Any] = field(default_factory=dict)
    failure: str | None = None  # botocore raised


def read(view: ExchangeView, operation: str) -> Reading:
    """botocore's reading of the exchange's response for ``operation`` (the path's)."""
    name = _OPERATIONS[operation]
    op = _MODEL.operation_model(name)
    response = view.exchange.response
    assert response is not None
    headers = HTTPHeaders()
    for k, v in response.headers:
        headers[k] = v
    body = view.response_body
    status = view.status or 200
    streamed = op.has_event_stream_output and status < 400
    raw = {
        "status_code": status,
        "headers": headers,
        "body": _Raw(body) if streamed else body,
        "context": {"operation_name": name},
    }
    out = Reading()
    try:
        parsed = create_parser("rest-json").parse(raw, op.output_shape)
        if "Error" in parsed:
            error = parsed["Error"]
            out.fields = {"error": (error.get("Code"), error.get("Message")), "complete": True}
        elif name == "Converse":
            out.fields = converse_whole(parsed)
        elif name == "ConverseStream":
            out.fields = converse_events(parsed["stream"], lambda e: e)
        elif name == "InvokeModel":
            payload = parsed["body"]
            payload = payload.read() if hasattr(payload, "read") else payload
            out.fields = invoke_whole(json.loads(payload), response.headers)
        else:
            out.fields = invoke_stream(parsed["body"])
    except Exception as exc:  # noqa: BLE001 - the oracle's own failure is a finding
        out.failure = f"{type(exc).__name__}: {exc}"[:200]
    return out


# -- Converse -----------------------------------------------------------------------------------


def _usage(usage: dict[str, Any] | None) -> dict[str, Any]:
    usage = usage or {}
    return {
        "input_tokens": usage.get("inputTokens"),
        "output_tokens": usage.get("outputTokens"),
        "total_tokens": usage.get("totalTokens"),
        "cache_read": usage.get("cacheReadInputTokens"),
        "cache_write": usage.get("cacheWriteInputTokens"),
    }


def _blocks(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """Canonical fields of a list of Converse content blocks."""
    text, reasoning, tools, kinds = [], [], [], []
    for block in blocks:
        kind = next(iter(block), None)
        kinds.append(kind)
        if kind == "text":
            text.append(block["text"])
        elif kind == "reasoningContent":
            r = block["reasoningContent"]
            rt = r.get("reasoningText") or {}
            redacted = r.get("redactedContent")
            if isinstance(redacted, bytes):
                redacted = base64.b64encode(redacted).decode()
            reasoning.append((rt.get("text", ""), rt.get("signature"), redacted))
        elif kind == "toolUse":
            t = block["toolUse"]
            tools.append((t.get("toolUseId"), t.get("name"), t.get("input")))
    return {"blocks": kinds, "text": text, "reasoning": reasoning, "tool_calls": tools}


def converse_whole(parsed: dict[str, Any]) -> dict[str, Any]:
    message = parsed["output"]["message"]
    return {
        "role": message.get("role"),
        **_blocks(message.get("content", [])),
        "stop_reason": parsed.get("stopReason"),
        **_usage(parsed.get("usage")),
        "latency_ms": (parsed.get("metrics") or {}).get("latencyMs"),
        "error": None,
        "complete": True,
    }


def converse_events(events: Any, unwrap: Any) -> dict[str, Any]:
    """A ConverseStream event sequence folded as a boto3 user folds it: per
    ``contentBlockIndex`` (a new block after its ``contentBlockStop``), text and tool input
    concatenated, the input parsed once at the end."""
    blocks: list[dict[str, Any]] = []
    open_: dict[int, dict[str, Any]] = {}
    out: dict[str, Any] = {"role": None, "stop_reason": None, "error": None}
    usage: dict[str, Any] | None = None
    latency = None
    ended = False
    try:
        for wrapped in events:
            event = unwrap(wrapped)
            if event is None:
                continue
            ((name, data),) = [(k, v) for k, v in event.items() if k in _EVENTS][:1] or [
                (None, None)
            ]
            if name == "messageStart":
                out["role"] = data.get("role")
            elif name in ("contentBlockStart", "contentBlockDelta"):
                index = data["contentBlockIndex"]
                if index not in open_:
                    open_[index] = {"kind": None, "text": "", "input": "", "sig": None, "red": None}
                    blocks.append(open_[index])
                _apply(open_[index], data.get("start") or data.get("delta") or {})
            elif name == "contentBlockStop":
                open_.pop(data["contentBlockIndex"], None)
            elif name == "messageStop":
                out["stop_reason"] = data.get("stopReason")
                ended = True
            elif name == "metadata":
                usage = data.get("usage")
                latency = (data.get("metrics") or {}).get("latencyMs")
    except EventStreamError as exc:
        error = exc.response.get("Error", {})
        out["error"] = (error.get("Code"), error.get("Message"))
        ended = True
    out.update(_stream_blocks(blocks))
    out.update(_usage(usage))
    out["latency_ms"] = latency
    out["complete"] = ended
    return out


_EVENTS = (
    "messageStart",
    "contentBlockStart",
    "contentBlockDelta",
    "contentBlockStop",
    "messageStop",
    "metadata",
)


def _apply(block: dict[str, Any], member: dict[str, Any]) -> None:
    if "toolUse" in member:
        block["kind"] = "toolUse"
        tool = member["toolUse"]
        block.setdefault("id", tool.get("toolUseId"))
        block.setdefault("name", tool.get("name"))
        block["input"] += tool.get("input", "")
    elif "text" in member:
        block["kind"] = block["kind"] or "text"
        block["text"] += member["text"]
    elif "reasoningContent" in member:
        block["kind"] = "reasoningContent"
        r = member["reasoningContent"]
        block["text"] += r.get("text", "")
        block["sig"] = r.get("signature", block["sig"])
        redacted = r.get("redactedContent")
        if redacted is not None:
            block["red"] = (
                base64.b64encode(redacted).decode() if isinstance(redacted, bytes) else redacted
            )
    elif member:
        block["kind"] = block["kind"] or next(iter(member))


def _stream_blocks(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    text, reasoning, tools = [], [], []
    for b in blocks:
        if b["kind"] == "text":
            text.append(b["text"])
        elif b["kind"] == "reasoningContent":
            reasoning.append((b["text"], b["sig"], b["red"]))
        elif b["kind"] == "toolUse":
            try:
                args = json.loads(b["input"]) if b["input"] else None
            except ValueError:
                args = None
            tools.append((b.get("id"), b.get("name"), args))
    return {
        "blocks": [b["kind"] for b in blocks],
        "text": text,
        "reasoning": reasoning,
        "tool_calls": tools,
    }


# -- InvokeModel ----------------------------------------------------------------------------------


def _header(headers: list[tuple[str, str]], name: str) -> int | None:
    for k, v in headers:
        if k.lower() == name:
            return int(v)
    return None


def invoke_whole(body: dict[str, Any], headers: list[tuple[str, str]]) -> dict[str, Any]:
    """A vendor's whole InvokeModel body, read after the AWS user guide's model parameters."""
    if "output" in body:  # Amazon Nova: Converse-shaped
        fields = converse_whole(body)
        fields.pop("latency_ms")
        return fields
    if "embedding" in body or "embeddings" in body:
        vectors = [body["embedding"]] if "embedding" in body else body["embeddings"]
        if isinstance(vectors, dict):
            vectors = next(iter(vectors.values()))
        vectors = [v["embedding"] if isinstance(v, dict) else v for v in vectors]
        return {"vectors": len(vectors), "dimensions": len(vectors[0]), "complete": True}
    texts, stop, usage = _vendor_text([body])
    if usage == (None, None):
        usage = (
            _header(headers, "x-amzn-bedrock-input-token-count"),
            _header(headers, "x-amzn-bedrock-output-token-count"),
        )
    return {
        "text": texts,
        "stop_reason": stop,
        "input_tokens": usage[0],
        "output_tokens": usage[1],
        "error": None,
        "complete": True,
    }


def invoke_stream(events: Any) -> dict[str, Any]:
    chunks: list[dict[str, Any]] = []
    error = None
    try:
        chunks.extend(json.loads(e["chunk"]["bytes"]) for e in events if "chunk" in e)
    except EventStreamError as exc:
        err = exc.response.get("Error", {})
        error = (err.get("Code"), err.get("Message"))
    metrics: dict[str, Any] = next(
        (
            c["amazon-bedrock-invocationMetrics"]
            for c in chunks
            if "amazon-bedrock-invocationMetrics" in c
        ),
        {},
    )
    if any(k in c for c in chunks for k in _EVENTS):  # Nova: Converse events by name
        fields = converse_events(
            chunks, lambda c: {k: v for k, v in c.items() if k in _EVENTS} or None
        )
        fields.pop("latency_ms")
        if error is not None:
            fields["error"], fields["complete"] = error, True
        return fields
    texts, stop, usage = _vendor_text(chunks)
    return {
        "text": texts,
        "stop_reason": stop,
        "input_tokens": usage[0] if usage[0] is not None else metrics.get("inputTokenCount"),
        "output_tokens": usage[1] if usage[1] is not None else metrics.get("outputTokenCount"),
        "error": error,
        "complete": error is not None or stop is not None or bool(metrics),
    }


def _vendor_text(chunks: list[dict[str, Any]]) -> tuple[list[str], str | None, tuple[Any, Any]]:
    """Text per choice, the last stop reason, (input, output) tokens of the vendor bodies."""
    text: dict[int, str] = {}
    stop = None
    given = out = None
    for c in chunks:
        if "results" in c or "outputText" in c:  # Titan
            for i, r in enumerate(c.get("results") or [c]):
                text[i] = text.get(i, "") + r.get("outputText", "")
                stop = r.get("completionReason") or stop
            given = c.get("inputTextTokenCount", given)
            if "results" in c:
                out = sum(r["tokenCount"] for r in c["results"])
        elif "generation" in c:  # Llama
            text[0] = text.get(0, "") + c["generation"]
            stop = c.get("stop_reason") or stop
            given = c.get("prompt_token_count", given)
            out = c.get("generation_token_count", out)
        elif "outputs" in c or "generations" in c:  # Mistral, Cohere Command
            for i, o in enumerate(c.get("outputs") or c.get("generations") or []):
                text[i] = text.get(i, "") + o.get("text", "")
                stop = o.get("stop_reason") or o.get("finish_reason") or stop
        elif "completions" in c:  # AI21 Jurassic
            for i, o in enumerate(c["completions"]):
                text[i] = text.get(i, "") + o["data"]["text"]
                stop = o["finishReason"]["reason"]
        elif "choices" in c:  # DeepSeek, OpenAI-compatible
            for i, o in enumerate(c["choices"]):
                piece = (
                    o.get("text")
                    if "text" in o
                    else (o.get("message") or o.get("delta") or {}).get("content")
                )
                text[i] = text.get(i, "") + (piece or "")
                stop = o.get("finish_reason") or o.get("stop_reason") or stop
            usage = c.get("usage") or {}
            given, out = usage.get("prompt_tokens", given), usage.get("completion_tokens", out)
        elif "text" in c:  # Cohere Command R
            text[0] = text.get(0, "") + c["text"]
            stop = c.get("finish_reason") or stop
    if given is not None and isinstance(given, float):
        given = int(given)
    return [text[i] for i in sorted(text)], stop, (given, out)


def botocore_version() -> str:
    return str(botocore.__version__)
