"""Bedrock InvokeModel and InvokeModelWithResponseStream (``bedrock.invoke``).

``POST /model/{modelId}/invoke`` carries the model vendor's own request and response bodies
(:mod:`~agentshark.apis.bedrock.vendors`); ``/invoke-with-response-stream`` answers an AWS
event stream of ``chunk`` events whose payload ``{"bytes": "<base64>"}`` holds the vendor's
stream chunk as JSON (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModelWithResponseStream.html).
Amazon Nova's chunks are Converse stream events by name (``{"contentBlockDelta": {...}}``) and
fold as ConverseStream does; the text vendors' chunks each carry the next piece of text. The
last chunk adds ``amazon-bedrock-invocationMetrics`` (``inputTokenCount``,
``outputTokenCount``, ``invocationLatency``, ``firstByteLatency``), usage when the vendor's
chunks have none; whole responses say the same in ``X-Amzn-Bedrock-Input-Token-Count`` /
``-Output-Token-Count`` headers. Guardrail members (``amazon-bedrock-guardrailAction``,
``amazon-bedrock-trace``) are kept under ``extras["response"]``.

Anthropic bodies (``anthropic_version``, or the legacy ``prompt`` with
``max_tokens_to_sample``) are the Anthropic family's (``anthropic.messages`` /
``anthropic.completions``, provider ``bedrock.anthropic``): this family declines them.

Operations: ``chat`` (Converse-like ``messages``, OpenAI-style ``messages``, Cohere's
``message``), ``text_completion`` (a ``prompt`` or ``inputText``), ``embeddings``. A stream is
complete when its end was seen: Nova's ``messageStop``, a text vendor's finish reason or the
closing invocation metrics, or an exception message.
"""

from __future__ import annotations

import base64
import binascii

from agentshark.apis.accumulate import PartsAccumulator
from agentshark.apis.bedrock.content import parse_messages_request
from agentshark.apis.bedrock.converse import (
    converse_body,
    finish,
    parse_request_body,
    response_not_recognized,
)
from agentshark.apis.bedrock.stream import ConverseStream
from agentshark.apis.bedrock.vendors import (
    Piece,
    body_kind,
    embeddings_summary,
    parse_plain_request,
    text_pieces,
    vendor_usage,
)
from agentshark.apis.bedrock.wire import (
    PROVIDER,
    count,
    error_of,
    exception_error,
    json_object,
    messages,
    route_of,
    vendor_of,
)
from agentshark.apis.family import ApiFamily
from agentshark.apis.model import Call, GenericPart, Json, Message, Usage
from agentshark.apis.view import ExchangeView
from agentshark.errors import Diagnostic
from agentshark.model import header

__all__ = ["FAMILIES", "InvokeFamily"]

_CONVERSE_EVENTS = frozenset(
    {"messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop"}
)
_METRICS = "amazon-bedrock-invocationMetrics"
_BEDROCK_PREFIX = "amazon-bedrock-"


def _anthropic_body(body: Json) -> bool:
    """An Anthropic request (``anthropic_version``, or a legacy ``prompt`` with
    ``max_tokens_to_sample``) or response (``type`` ``message`` or ``completion``)."""
    return isinstance(body, dict) and (
        "anthropic_version" in body
        or ("prompt" in body and "max_tokens_to_sample" in body)
        or body.get("type") in ("message", "completion")
    )


class InvokeFamily:
    api: str = "bedrock.invoke"

    def match(self, view: ExchangeView) -> float:
        route = route_of(view)
        if route is None or route.operation not in ("invoke", "invoke-with-response-stream"):
            return -1.0
        if _anthropic_body(view.request_json) or _anthropic_body(view.response_json):
            return -1.0  # Anthropic Messages / Text Completions on Bedrock
        return 0.9

    def parse(self, view: ExchangeView, call: Call) -> None:
        route = route_of(view)
        assert route is not None
        call.provider = PROVIDER
        call.request_model, call.stream = route.model, route.stream
        req = view.request_json
        call.operation = _operation(req, route.model, view.response_json)
        converse_like = isinstance(req, dict) and (
            "schemaVersion" in req or (vendor_of(route.model) == "amazon" and "messages" in req)
        )
        parse_request_body(
            view, call, parse_messages_request if converse_like else parse_plain_request
        )
        if view.framing == "aws-eventstream":
            _parse_stream(view, call)
        else:
            _parse_whole(view, call)


FAMILIES: tuple[ApiFamily, ...] = (InvokeFamily(),)


def _operation(req: Json, model: str, response: Json) -> str:
    if body_kind(response) == "embeddings":
        return "embeddings"
    if not isinstance(req, dict):
        return "embeddings" if "embed" in model else "chat"
    if "texts" in req or "singleEmbeddingParams" in req or "embed" in model:
        return "embeddings"
    if "messages" in req or "message" in req:
        return "chat"
    return "text_completion" if "prompt" in req or "inputText" in req else "chat"


# -- whole responses --------------------------------------------------------------------------


def _parse_whole(view: ExchangeView, call: Call) -> None:
    body = view.response_json
    parsed = False
    if view.status is not None and view.status >= 400:
        call.error = error_of(view)
        parsed = True
    elif isinstance(body, dict):
        parsed = _body(body, call)
        if not parsed:
            _unknown_body(view, call, body)
            parsed = True  # kept whole: the answer is there, in a shape we do not read
    if not parsed:
        response_not_recognized(view, call, body)
    if call.usage is None:
        call.usage = _header_usage(view)
    call.complete = parsed and view.exchange.complete


def _body(body: dict[str, Json], call: Call) -> bool:
    kind = body_kind(body)
    if kind is None:
        return False
    bedrock = {k: v for k, v in body.items() if k.startswith(_BEDROCK_PREFIX)}
    if kind == "converse":
        converse_body(body, call)
    elif kind == "embeddings":
        call.operation = "embeddings"
        call.extras["embeddings"] = embeddings_summary(body)
        rest = {
            k: v
            for k, v in body.items()
            if k not in ("embedding", "embeddings", "embeddingsByType")
        }
        if rest:
            call.extras["response"] = rest
        tokens = count(body.get("inputTextTokenCount"))
        if tokens is not None:
            call.usage = Usage(input_tokens=tokens, raw={"inputTextTokenCount": tokens})
        return True
    else:
        _pieces_messages(call, text_pieces(kind, body))
        call.usage = vendor_usage(kind, body)
        _identity(call, body)
        extras = _response_extras(kind, body)
        if extras:
            call.extras["response"] = extras
    if bedrock:
        call.extras.setdefault("response", {}).update(bedrock)
    return True


# members each text shape reads; the others are kept under extras["response"]
_READ = {
    "titan": {"results", "inputTextTokenCount", "outputText", "completionReason", "index"},
    "llama": {"generation", "stop_reason", "prompt_token_count", "generation_token_count"},
    "mistral": {"outputs"},
    "cohere": {"generations"},
    "ai21": {"completions"},
    "choices": {"choices", "usage"},
    "cohere_chat": {"text", "finish_reason", "tool_calls"},
}


def _response_extras(kind: str, body: dict[str, Json]) -> dict[str, Json]:
    read = _READ.get(kind, set())
    return {
        k: v
        for k, v in body.items()
        if k not in read and not k.startswith(_BEDROCK_PREFIX) and v is not None
    }


def _identity(call: Call, body: dict[str, Json]) -> None:
    """The response id (``id``; Cohere's ``generation_id``) and model, when a string."""
    for key in ("id", "generation_id"):
        value = body.get(key)
        if isinstance(value, str) and value:
            call.response_id = value
            break
    if isinstance(body.get("model"), str):
        call.response_model = body["model"]


def _unknown_body(view: ExchangeView, call: Call, body: dict[str, Json]) -> None:
    call.output_messages = [
        Message(role=None, parts=[GenericPart(type="invoke_body", fields=body)])
    ]
    call.diagnostics.append(
        Diagnostic(
            code="bedrock.invoke.unknown_body",
            severity="info",
            location=f"{view.exchange.id} response body",
            message=f"the InvokeModel response of {call.request_model!r} is in no vendor "
            "format agentshark reads: kept whole as an invoke_body part",
        )
    )


def _header_usage(view: ExchangeView) -> Usage | None:
    response = view.exchange.response
    if response is None:
        return None
    given = header(response.headers, "x-amzn-bedrock-input-token-count")
    out = header(response.headers, "x-amzn-bedrock-output-token-count")
    if given is None and out is None:
        return None
    raw: dict[str, Json] = {}
    if given is not None:
        raw["x-amzn-bedrock-input-token-count"] = given
    if out is not None:
        raw["x-amzn-bedrock-output-token-count"] = out
    return Usage(
        input_tokens=_header_count(given),
        output_tokens=_header_count(out),
        raw=raw,
    )


def _header_count(value: str | None) -> int | None:
    """A token count header: ASCII digits, at most 18 (a count, not a 64-bit overflow)."""
    if value is None or not value.isascii() or not value.isdigit() or len(value) > 18:
        return None
    return int(value)


def _pieces_messages(call: Call, pieces: list[Piece]) -> None:
    """Text pieces (a whole body's, or a stream's in order) into one message per choice,
    each through the shared parts accumulator."""
    by_choice: dict[int, PartsAccumulator] = {}
    finishes: dict[int, str] = {}
    for i, piece in enumerate(pieces):
        choice = by_choice.get(piece.index)
        if choice is None:
            choice = by_choice[piece.index] = PartsAccumulator(location=f"choice {piece.index}")
        if piece.reasoning is not None:
            choice.reasoning("reasoning", piece.reasoning)
        if piece.text is not None:
            choice.text("text", piece.text)
        if piece.part is not None:
            choice.whole(("part", i), piece.part)
        if piece.finish is not None:
            finishes[piece.index] = piece.finish
    call.output_messages = [
        Message(role="assistant", parts=choice.parts(), finish_reason=finishes.get(index))
        for index, choice in sorted(by_choice.items())
    ]
    call.finish_reasons = [finishes[i] for i in sorted(finishes)]
    for choice in by_choice.values():
        call.diagnostics.extend(choice.diagnostics)


# -- streams ----------------------------------------------------------------------------------


def _chunk(payload: bytes) -> dict[str, Json] | None:
    raw = (json_object(payload) or {}).get("bytes")
    if not isinstance(raw, str):
        return None
    try:
        return json_object(base64.b64decode(raw, validate=True))
    except (binascii.Error, ValueError):
        return None


def _parse_stream(view: ExchangeView, call: Call) -> None:
    location = f"{view.exchange.id} response"
    call.stream = True
    converse = ConverseStream(location=location)
    pieces: list[Piece] = []
    kind: str | None = None
    metrics: dict[str, Json] | None = None
    bedrock: dict[str, Json] = {}
    for n, msg in messages(view, call.diagnostics):
        if msg.message_type in ("exception", "error"):
            converse.error_event(exception_error(msg, n), n)
            continue
        data = _chunk(msg.payload)
        if data is None:
            call.diagnostics.append(
                Diagnostic(
                    code="bedrock.stream.bad_event",
                    location=f"{location} stream event {n} byte {msg.offset}",
                    message=f"stream event {n} is not a chunk of base64 JSON: skipped",
                )
            )
            continue
        if call.timing.first_token is None and kind is None:
            call.timing.first_token = msg.ts
        for key in [k for k in data if k.startswith(_BEDROCK_PREFIX)]:
            value = data.pop(key)
            if key == _METRICS and isinstance(value, dict):
                metrics = value
            else:
                bedrock[key] = value
        events = [k for k in data if k in _CONVERSE_EVENTS or k == "metadata"]
        if events:
            for name in events:
                value = data[name]
                converse.feed(name, value if isinstance(value, dict) else {}, n=n, ts=msg.ts)
        elif data:
            kind = kind or body_kind(data)
            if kind is None:
                converse.extras.setdefault("unknown_chunks", []).append(data)
            else:
                pieces.extend(text_pieces(kind, data))
    if converse.started or converse.stopped or kind is None:
        finish(converse, call)
        ended = converse.ended
    else:
        _pieces_messages(call, pieces)
        call.error = converse.error
        ended = bool(call.finish_reasons) or metrics is not None or converse.error is not None
        if converse.extras:
            call.extras.setdefault("response", {}).update(converse.extras)
    if metrics is not None:
        bedrock["invocationMetrics"] = metrics
        if call.usage is None:
            call.usage = Usage(
                input_tokens=count(metrics.get("inputTokenCount")),
                output_tokens=count(metrics.get("outputTokenCount")),
                raw=metrics,
            )
    if bedrock:
        call.extras.setdefault("response", {}).update(bedrock)
    call.complete = ended and view.exchange.complete
