"""Corpus oracle: every Anthropic Messages exchange of ``../shared/corpus`` against the SDK.

For each corpus document whose ``manifest.jsonl`` entry lists ``anthropic-messages`` (and each
``bedrock-invoke`` document, for Anthropic bodies on Bedrock), every exchange is read with the
HAR / VCR readers and recognized with the Anthropic families alone. Every ``anthropic.messages``
call is compared with what the official ``anthropic`` SDK makes of the same bytes:

- a JSON body: ``BetaMessage.model_validate`` (the beta types are a superset: MCP, compaction,
  fallback blocks), or ``ErrorResponse`` for an error body;
- a stream: the SDK's own SSE decoder (``anthropic._streaming.SSEDecoder``), each event built
  as the SDK builds it (``construct_type`` over ``BetaRawMessageStreamEvent``) and folded with
  the SDK's ``accumulate_event``; ``ping`` skipped and ``error`` taken as the SDK's stream loop
  does. Bedrock's event stream has no SDK decoder without botocore: its frames come from
  agentshark's framing decoder and the base64 chunks are decoded here.

vercel/ai's Anthropic fixtures (response bodies and ``*.chunks.txt`` event lists, which the
readers do not take as documents) are wrapped in a synthetic exchange and compared the same way.

Per field, the test counts agreement; a difference must be listed, with its reason, in
``anthropic_differences.DIFFERENCES``. Run with ``-s`` to see the agreement table.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest
from anthropic._models import construct_type
from anthropic._streaming import SSEDecoder
from anthropic.lib.streaming._beta_messages import accumulate_event
from anthropic.types import ErrorResponse
from anthropic.types.beta import BetaMessage, BetaRawMessageStreamEvent

from agentshark.apis.anthropic.messages import FAMILIES
from agentshark.apis.model import (
    Call,
    FilePart,
    GenericPart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
)
from agentshark.apis.registry import recognize
from agentshark.apis.view import ExchangeView
from agentshark.errors import InputError
from agentshark.framing.events import EventStreamMessage
from agentshark.model import Body, Exchange, Request, Response
from agentshark.sources.detect import classify_document
from agentshark.sources.har import read_har
from agentshark.sources.vcr import read_vcr
from tests.apis.anthropic.differences import DIFFERENCES
from tests.helpers import CORPUS

MANIFEST = CORPUS / "manifest.jsonl"
VERCEL = CORPUS / "vercel__ai/packages/anthropic/src/__fixtures__"
FIELDS = (
    "id",
    "model",
    "stop_reason",
    "stop_sequence",
    "blocks",
    "text",
    "citations",
    "thinking",
    "redacted_thinking",
    "tool_calls",
    "tool_results",
    "other_blocks",
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "thinking_tokens",
    "error",
    "complete",
)
_STREAM_EVENTS = {
    "message_start",
    "message_delta",
    "message_stop",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
}


def _manifest() -> list[dict[str, Any]]:
    if not MANIFEST.exists():
        return []
    entries = [json.loads(line) for line in MANIFEST.read_text().splitlines() if line.strip()]
    wanted = ("anthropic-messages", "bedrock-invoke")
    return [e for e in entries if any(f in e["api_families"] for f in wanted)]


ENTRIES = _manifest()
FIXTURES = sorted(VERCEL.glob("*.json")) + sorted(VERCEL.glob("*.chunks.txt"))
pytestmark = pytest.mark.skipif(not ENTRIES, reason=f"no corpus at {CORPUS}")


# -- the two sides, in one canonical form -----------------------------------------------------


def _sdk_view(message: Any) -> dict[str, Any]:
    """What the SDK's message says, field by field."""
    blocks = list(message.content)
    usage = message.usage
    details = getattr(usage, "output_tokens_details", None)
    return {
        "id": message.id,
        "model": message.model,
        "stop_reason": message.stop_reason,
        "stop_sequence": message.stop_sequence,
        "blocks": [b.type for b in blocks],
        "text": [b.text for b in blocks if b.type == "text"],
        "citations": [_dump(b.citations or []) for b in blocks if b.type == "text"],
        "thinking": [(b.thinking, b.signature) for b in blocks if b.type == "thinking"],
        "redacted_thinking": [b.data for b in blocks if b.type == "redacted_thinking"],
        "tool_calls": [
            (b.type, b.id, b.name, b.input) for b in blocks if b.type.endswith("tool_use")
        ],
        "tool_results": [
            (b.type, b.tool_use_id, _dump(b.content))
            for b in blocks
            if b.type.endswith("tool_result")
        ],
        "other_blocks": [_dump(b) for b in blocks if b.type in _OTHER],
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "thinking_tokens": details.thinking_tokens if details is not None else None,
    }


_OTHER = {"container_upload", "compaction", "fallback", "mcp_tool_listing"}


def _dump(value: Any) -> Any:
    """An SDK model (or list of them) as the JSON it came from."""
    if isinstance(value, list):
        return [_dump(v) for v in value]
    if hasattr(value, "to_dict"):
        return value.to_dict(mode="json")
    return value


def _block_type(part: Part) -> str:
    if isinstance(part, GenericPart):
        return part.type
    plain = {
        TextPart: "text",
        ReasoningPart: "thinking",
        ToolCallPart: "tool_use",
        ToolCallResponsePart: "tool_result",
    }
    kind = part.provider_details.get("block_type")
    return kind if isinstance(kind, str) else plain.get(type(part), part.type)


def _our_view(call: Call) -> dict[str, Any]:
    """What agentshark's call says, in the SDK's terms."""
    parts = call.output_messages[0].parts if call.output_messages else []
    usage = call.usage.raw if call.usage is not None and call.usage.raw else {}
    details = usage.get("output_tokens_details") or {}
    response = call.extras.get("response", {})
    finish = call.output_messages[0].finish_reason if call.output_messages else None
    assert call.finish_reasons == ([finish] if finish is not None else [])
    if call.usage is not None:
        _check_normalized_usage(call)
    return {
        "id": call.response_id,
        "model": call.response_model,
        "stop_reason": finish,
        "stop_sequence": response.get("stop_sequence"),
        "blocks": [_block_type(p) for p in parts],
        "text": [p.content for p in parts if isinstance(p, TextPart)],
        "citations": [
            p.provider_details.get("citations") or [] for p in parts if isinstance(p, TextPart)
        ],
        "thinking": [
            (p.content, p.provider_details.get("signature"))
            for p in parts
            if isinstance(p, ReasoningPart) and _block_type(p) == "thinking"
        ],
        "redacted_thinking": [
            p.provider_details.get("data")
            for p in parts
            if isinstance(p, ReasoningPart) and _block_type(p) == "redacted_thinking"
        ],
        "tool_calls": [
            (_block_type(p), p.id, p.name, p.arguments)
            for p in parts
            if isinstance(p, ToolCallPart)
        ],
        "tool_results": [
            (_block_type(p), p.id, p.response) for p in parts if isinstance(p, ToolCallResponsePart)
        ],
        "other_blocks": [
            {"type": _block_type(p), **_fields(p)}
            for p in parts
            if isinstance(p, GenericPart | FilePart) and _block_type(p) in _OTHER
        ],
        "input_tokens": usage.get("input_tokens"),
        "output_tokens": usage.get("output_tokens"),
        "cache_creation_input_tokens": usage.get("cache_creation_input_tokens"),
        "cache_read_input_tokens": usage.get("cache_read_input_tokens"),
        "thinking_tokens": details.get("thinking_tokens"),
    }


def _fields(part: GenericPart | FilePart) -> dict[str, Any]:
    if isinstance(part, GenericPart):
        return part.fields
    details = {k: v for k, v in part.provider_details.items() if k != "block_type"}
    return {"file_id": part.file_id, **details}


def _check_normalized_usage(call: Call) -> None:
    """The normalized numbers follow from the raw ones (input includes the cache)."""
    usage = call.usage
    assert usage is not None and usage.raw is not None
    raw = usage.raw
    if isinstance(raw.get("input_tokens"), int):
        cache = (raw.get("cache_creation_input_tokens") or 0) + (
            raw.get("cache_read_input_tokens") or 0
        )
        assert usage.input_tokens == raw["input_tokens"] + cache
    assert usage.output_tokens == raw.get("output_tokens")
    assert usage.cached_input_tokens == raw.get("cache_read_input_tokens")
    assert usage.cache_creation_input_tokens == raw.get("cache_creation_input_tokens")


# -- the SDK's reading ------------------------------------------------------------------------


@dataclass
class SdkReading:
    message: Any = None  # BetaMessage / ParsedBetaMessage
    error: tuple[str | None, str | None] | None = None  # (type, message)
    ended: bool = False
    failure: str | None = None  # the SDK raised
    strict_failure: str | None = None  # strict validation failed (lenient reading used)


def _sdk_read(view: ExchangeView) -> SdkReading:
    out = SdkReading()
    request = view.exchange.request
    headers = httpx2.Headers(request.headers if request is not None else [])
    try:
        if view.framing == "sse":
            events = [
                (sse.event, sse.json())
                for sse in SSEDecoder().iter_bytes(iter([view.response_body]))
                if sse.data
            ]
            _sdk_stream(events, headers, out)
        elif view.framing == "aws-eventstream":
            events = [(d.get("type"), d) for d in _bedrock_chunks(view)]
            _sdk_stream(events, headers, out)
        else:
            body = view.response_json
            if isinstance(body, dict) and body.get("type") == "error":
                err = ErrorResponse.model_validate(body).error
                out.error, out.ended = (err.type, err.message), True
            else:
                out.message, out.ended = _sdk_message(body, out), True
    except Exception as exc:  # noqa: BLE001 - the oracle's own failure is a finding
        out.failure = f"{type(exc).__name__}: {exc}"[:200]
    return out


def _sdk_message(body: Any, out: SdkReading) -> Any:
    """``BetaMessage.model_validate``; when strict validation fails (older recordings lack
    fields the current types require), what the SDK's client does by default: build the
    model without validation (``construct_type``; ``_strict_response_validation`` is off)."""
    try:
        return BetaMessage.model_validate(body)
    except ValueError as exc:
        out.strict_failure = str(exc).splitlines()[1] if "\n" in str(exc) else str(exc)
        return construct_type(type_=BetaMessage, value=body)


def _sdk_stream(events: list[tuple[str | None, Any]], headers: Any, out: SdkReading) -> None:
    bufs: dict[int, bytes] = {}
    for name, data in events:
        if name == "error":
            err = ErrorResponse.model_validate(data).error
            out.error, out.ended = (err.type, err.message), True
            return
        if name not in _STREAM_EVENTS:
            continue  # ping; the SDK's stream loop skips unknown events too
        event: Any = construct_type(type_=BetaRawMessageStreamEvent, value=data)
        out.message = accumulate_event(
            event=event, current_snapshot=out.message, json_bufs=bufs, request_headers=headers
        )
        out.ended = out.ended or name == "message_stop"


def _bedrock_chunks(view: ExchangeView) -> list[dict[str, Any]]:
    import base64

    out = []
    for ev in view.events:
        if isinstance(ev, EventStreamMessage) and ev.message_type == "event":
            out.append(json.loads(base64.b64decode(json.loads(ev.payload)["bytes"])))
        elif isinstance(ev, EventStreamMessage):
            payload = json.loads(ev.payload)
            out.append({"type": "error", "error": {"type": ev.event_type, **payload}})
    return out


# -- comparing --------------------------------------------------------------------------------


@dataclass
class Comparison:
    agree: Counter[str] = field(default_factory=Counter)
    total: Counter[str] = field(default_factory=Counter)
    differences: list[tuple[str, str, str, Any, Any]] = field(default_factory=list)
    calls: int = 0
    strict_failures: Counter[str] = field(default_factory=Counter)


def _compare(case: str, call: Call, view: ExchangeView, result: Comparison) -> None:
    sdk = _sdk_read(view)
    result.calls += 1
    if sdk.strict_failure is not None:
        result.strict_failures[sdk.strict_failure] += 1
    ours_error = (call.error.type, call.error.message) if call.error is not None else None
    pairs: dict[str, tuple[Any, Any]] = {
        "error": (ours_error, sdk.error),
        "complete": (call.complete, sdk.ended and sdk.failure is None),
    }
    if sdk.failure is not None:
        pairs["sdk"] = (None, sdk.failure)
    if sdk.message is not None or call.output_messages:
        ours = _our_view(call)
        theirs = _sdk_view(sdk.message) if sdk.message is not None else {}
        pairs.update({name: (ours[name], theirs.get(name)) for name in ours})
    for name, (mine, expected) in pairs.items():
        result.total[name] += 1
        if mine == expected:
            result.agree[name] += 1
        else:
            result.differences.append((case, call.exchange_id, name, mine, expected))


def _corpus_exchanges(file: str) -> list[Exchange]:
    data = (CORPUS / file).read_bytes()
    try:
        kind, doc = classify_document(data, file)
    except InputError:
        return []  # response-only fixtures and eBPF logs: not documents the readers take
    ids = itertools.count()
    reader = read_har if kind == "har" else read_vcr
    return [x for x in reader(doc, file, 0, lambda: f"e{next(ids)}") if isinstance(x, Exchange)]


def _fixture_exchanges(path: Path) -> list[Exchange]:
    """A vercel/ai response fixture in synthetic exchanges. Some ``*.chunks.txt`` hold the
    streams of several turns one after the other: each stream (up to its ``message_stop``)
    becomes its own exchange, as it crossed the wire."""
    text = path.read_text()
    if not path.name.endswith(".chunks.txt"):
        return [_synthetic(path.name, text.encode(), "application/json", stream=False)]
    streams: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.strip():
            streams[-1].append(line)
            if json.loads(line)["type"] == "message_stop":
                streams.append([])
    return [
        _synthetic(
            f"{path.name}#{i}",
            "".join(f"event: {json.loads(ln)['type']}\ndata: {ln}\n\n" for ln in lines).encode(),
            "text/event-stream",
            stream=True,
        )
        for i, lines in enumerate(s for s in streams if s)
    ]


def _synthetic(name: str, body: bytes, content_type: str, *, stream: bool) -> Exchange:
    request = {"model": "claude-test", "max_tokens": 1024, "stream": stream, "messages": []}
    return Exchange(
        id=name,
        source=0,
        connection=None,
        transport="http/1.1",
        request=Request(
            method="POST",
            target="/v1/messages",
            url="https://api.anthropic.com/v1/messages",
            version="HTTP/1.1",
            headers=[("content-type", "application/json"), ("anthropic-version", "2023-06-01")],
            body=Body(pieces=[(1.0, json.dumps(request).encode())]),
            started=1.0,
            ended=1.0,
            complete=True,
        ),
        response=Response(
            status=200,
            reason="OK",
            version="HTTP/1.1",
            headers=[("content-type", content_type)],
            body=Body(pieces=[(2.0, body)]),
            started=2.0,
            ended=3.0,
            complete=True,
        ),
    )


@functools.cache
def _everything() -> tuple[Comparison, dict[str, list[str]]]:
    """All cases compared once; also the api each exchange was recognized as, per file."""
    result = Comparison()
    recognized: dict[str, list[str]] = {}
    cases = [(e["file"], _corpus_exchanges(e["file"])) for e in ENTRIES]
    cases += [(f"vercel:{p.name}", _fixture_exchanges(p)) for p in FIXTURES]
    for case, exchanges in cases:
        recognized[case] = []
        for x in exchanges:
            call = recognize(x, "k1", registry=FAMILIES)
            recognized[case].append(call.api if call is not None else "")
            if call is not None and call.api == "anthropic.messages":
                _compare(case, call, ExchangeView(x), result)
    return result, recognized


def _unexplained(result: Comparison) -> list[tuple[str, str, str, Any, Any]]:
    return [d for d in result.differences if (d[0], d[1], d[2]) not in DIFFERENCES]


# -- tests ------------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_corpus_file_agrees_with_sdk(entry: dict[str, Any]) -> None:
    result, recognized = _everything()
    file = entry["file"]
    mine = [d for d in _unexplained(result) if d[0] == file]
    assert mine == []
    if "anthropic-messages" in entry["api_families"]:
        # every Messages endpoint of the file is claimed (documents the readers take)
        for x, api in zip(_corpus_exchanges(file), recognized[file], strict=True):
            req = x.request
            if req is not None and req.url.split("?")[0].endswith("/v1/messages"):
                assert api == "anthropic.messages", x.id


@pytest.mark.parametrize("fixture", FIXTURES, ids=[p.name for p in FIXTURES])
def test_vercel_fixture_agrees_with_sdk(fixture: Path) -> None:
    result, recognized = _everything()
    case = f"vercel:{fixture.name}"
    assert set(recognized[case]) == {"anthropic.messages"}
    assert [d for d in _unexplained(result) if d[0] == case] == []


def test_agreement_table() -> None:
    result, _ = _everything()
    print(f"\n{result.calls} anthropic.messages calls compared with the anthropic SDK")
    print(f"{'field':<30} {'agree':>7} {'total':>7}  {'%':>6}  listed")
    listed = Counter(d[2] for d in result.differences)
    for name in sorted(result.total, key=lambda n: (*FIELDS, "sdk").index(n)):
        agree, total = result.agree[name], result.total[name]
        print(f"{name:<30} {agree:>7} {total:>7}  {100 * agree / total:6.2f}  {listed[name]}")
    for problem, count in result.strict_failures.items():
        print(f"SDK strict validation failed ({count}x, lenient reading used): {problem}")
    assert result.calls > 400
    stale = set(DIFFERENCES) - {(d[0], d[1], d[2]) for d in result.differences}
    assert not stale, f"listed differences that no longer occur: {sorted(stale)}"
    assert _unexplained(result) == []
