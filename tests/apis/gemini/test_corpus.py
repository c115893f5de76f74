"""Corpus oracle: every Gemini generateContent exchange of ``../shared/corpus`` against the SDK.

For each corpus document whose ``manifest.jsonl`` entry lists ``gemini``, every exchange is read
with the VCR / HAR readers and recognized with the Gemini families alone. Every
``gemini.generate_content`` call is compared with what the official ``google-genai`` SDK makes
of the same bytes, the way the SDK's ``Models.generate_content`` and
``generate_content_stream`` read them:

- each ``GenerateContentResponse`` object goes through the SDK's converter for its API
  (``_GenerateContentResponse_from_mldev`` for AI Studio, ``_from_vertex`` for Vertex) and
  ``types.GenerateContentResponse._from_response`` (pydantic validation, enums, base64
  signatures decoded to bytes); Code Assist's ``{"response": …}`` is taken off first, as the
  Gemini CLI does;
- an ``alt=sse`` stream is split into chunks by the SDK's own reader
  (``HttpResponse.segments()`` over an ``httpx2.Response``); a JSON-array stream, which the
  SDK never asks for, is parsed with ``json.loads`` and each element read as above;
- an error body or error chunk is read by ``errors.APIError`` (``status``, ``message``);
- the SDK hands a stream out chunk by chunk: its chunks are merged here as the SDK's own
  ``Chat`` history does (text concatenated per candidate and per kind, function calls in
  order, the last finish reason, the last usage, the first response id).

Per field, the test counts agreement; a difference must be listed, with its reason, in
``differences.DIFFERENCES`` or be of a kind ``differences.RULES`` names. Run with ``-s`` to
see the agreement table.
"""

from __future__ import annotations

import base64
import functools
import itertools
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest
from google.genai import errors, types
from google.genai._api_client import HttpResponse
from google.genai.models import (
    _GenerateContentResponse_from_mldev,
    _GenerateContentResponse_from_vertex,
)

from agentshark.apis.gemini.generate import FAMILIES
from agentshark.apis.gemini.routes import route_of
from agentshark.apis.model import Call, ReasoningPart, TextPart, ToolCallPart
from agentshark.apis.registry import recognize
from agentshark.apis.view import ExchangeView
from agentshark.errors import InputError
from agentshark.model import Exchange
from agentshark.sources.detect import classify_document
from agentshark.sources.har import read_har
from agentshark.sources.vcr import read_vcr
from tests.apis.gemini.differences import DIFFERENCES, NUMERIC_ENUM, explain
from tests.helpers import CORPUS

MANIFEST = CORPUS / "manifest.jsonl"
USAGE = (
    "prompt_token_count",
    "candidates_token_count",
    "thoughts_token_count",
    "cached_content_token_count",
    "tool_use_prompt_token_count",
    "total_token_count",
)
FIELDS = (
    "candidates",
    "text",
    "reasoning",
    "thought_signatures",
    "function_calls",
    "finish_reasons",
    "block_reason",
    *USAGE,
    "response_id",
    "model_version",
    "error",
    "sdk",
)


def _manifest() -> list[dict[str, Any]]:
    if not MANIFEST.exists():
        return []
    entries = [json.loads(line) for line in MANIFEST.read_text().splitlines() if line.strip()]
    return [e for e in entries if "gemini" in e["api_families"]]


ENTRIES = _manifest()
pytestmark = pytest.mark.skipif(not ENTRIES, reason=f"no corpus at {CORPUS}")


# -- the SDK's reading ------------------------------------------------------------------------


@dataclass
class SdkReading:
    chunks: list[Any] = field(default_factory=list)  # GenerateContentResponse objects
    error: tuple[str | None, str | None] | None = None  # (status, message)
    failure: str | None = None  # the SDK raised
    enums_dropped: bool = False  # read again without the numeric enums the SDK refuses


# enum fields that ``enum-encoding=int`` makes numbers, which the SDK's enums refuse
_ENUM_FIELDS = frozenset(
    {
        "finishReason",
        "blockReason",
        "category",
        "probability",
        "severity",
        "modality",
        "trafficType",
    }
)


def _without_numeric_enums(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _without_numeric_enums(v)
            for k, v in value.items()
            if not (k in _ENUM_FIELDS and isinstance(v, int))
        }
    if isinstance(value, list):
        return [_without_numeric_enums(v) for v in value]
    return value


def _sdk_response(obj: dict[str, Any], vertex: bool) -> Any:
    inner = obj.get("response")
    if isinstance(inner, dict) and "candidates" not in obj:
        obj = inner  # Code Assist's wrapper
    convert = (
        _GenerateContentResponse_from_vertex if vertex else _GenerateContentResponse_from_mldev
    )
    return types.GenerateContentResponse._from_response(response=convert(obj), kwargs={})


def _sdk_object(obj: Any, vertex: bool, status: int | None, out: SdkReading) -> None:
    if isinstance(obj, list) and len(obj) == 1:
        obj = obj[0]
    if isinstance(obj, dict) and isinstance(obj.get("error"), dict):
        code = obj["error"].get("code")
        err = errors.APIError(status or (code if isinstance(code, int) else 0), obj)
        out.error = (err.status, err.message)
        return
    out.chunks.append(_sdk_response(obj, vertex))


def _sdk_read(view: ExchangeView) -> SdkReading:
    out = SdkReading()
    vertex = route_of(view).vertex
    status = view.status
    try:
        if view.framing == "sse":
            stream = HttpResponse(
                {}, response_stream=httpx2.Response(200, content=view.response_body)
            )
            for obj in stream.segments():
                _sdk_object(obj, vertex, None, out)
        elif view.framing == "json-array":
            for obj in json.loads(view.response_body):
                _sdk_object(obj, vertex, None, out)
        else:
            body = json.loads(view.response_body) if view.response_body.strip() else {}
            if status is not None and status >= 400 and not isinstance(body, dict | list):
                raise ValueError("error body not JSON")
            try:
                _sdk_object(body, vertex, status, out)
            except AttributeError:  # numbers for enums: 'int' object has no attribute 'upper'
                if "enum-encoding=int" not in view.query.replace("%3D", "="):
                    raise
                out.enums_dropped = True
                _sdk_object(_without_numeric_enums(body), vertex, status, out)
    except Exception as exc:  # noqa: BLE001 - the oracle's own failure is a finding
        out.failure = f"{type(exc).__name__}: {exc}"[:200]
    return out


def _enum(value: Any) -> Any:
    return value.value if hasattr(value, "value") else value


def _sdk_view(sdk: SdkReading) -> dict[str, Any]:
    """The SDK's chunks merged (see the module docstring), field by field."""
    cands: dict[int, dict[str, Any]] = {}
    out: dict[str, Any] = dict.fromkeys(USAGE)
    out.update(response_id=None, model_version=None, block_reason=None)
    for chunk in sdk.chunks:
        for pos, cand in enumerate(chunk.candidates or []):
            index = cand.index if cand.index is not None else pos
            mine = cands.setdefault(
                index, {"text": "", "reasoning": "", "sigs": [], "calls": [], "finish": None}
            )
            if cand.finish_reason is not None:
                mine["finish"] = _enum(cand.finish_reason)
            for part in (cand.content.parts or []) if cand.content is not None else []:
                if part.text is not None:
                    mine["reasoning" if part.thought else "text"] += part.text
                if part.thought_signature is not None:
                    mine["sigs"].append(part.thought_signature)
                if part.function_call is not None:
                    fc = part.function_call
                    mine["calls"].append((fc.id, fc.name, fc.args))
        usage = chunk.usage_metadata
        if usage is not None:
            for name in USAGE:
                out[name] = getattr(usage, name)
        out["response_id"] = out["response_id"] or chunk.response_id
        out["model_version"] = chunk.model_version or out["model_version"]
        feedback = chunk.prompt_feedback
        if feedback is not None and feedback.block_reason is not None:
            out["block_reason"] = _enum(feedback.block_reason)
    ordered = [cands[i] for i in sorted(cands)]
    out.update(
        candidates=len(ordered),
        text=[c["text"] for c in ordered],
        reasoning=[c["reasoning"] for c in ordered],
        thought_signatures=[c["sigs"] for c in ordered],
        function_calls=[c["calls"] for c in ordered],
        finish_reasons=[c["finish"] for c in ordered],
    )
    return out


# -- our reading, in the SDK's terms ----------------------------------------------------------


def _signature(part: Any) -> bytes | None:
    details = getattr(part, "provider_details", None) or getattr(part, "fields", {})
    sig = details.get("thoughtSignature")
    return (
        base64.urlsafe_b64decode(sig.replace("+", "-").replace("/", "_"))
        if isinstance(sig, str)
        else None
    )


def _our_view(call: Call) -> dict[str, Any]:
    messages = call.output_messages
    raw = call.usage.raw if call.usage is not None and call.usage.raw else {}
    names = {u: "".join(w.title() if i else w for i, w in enumerate(u.split("_"))) for u in USAGE}
    feedback = call.extras.get("response", {}).get("promptFeedback") or {}
    assert call.finish_reasons == [m.finish_reason for m in messages if m.finish_reason]
    return {
        "candidates": len(messages),
        "text": ["".join(p.content for p in m.parts if isinstance(p, TextPart)) for m in messages],
        "reasoning": [
            "".join(p.content for p in m.parts if isinstance(p, ReasoningPart)) for m in messages
        ],
        "thought_signatures": [
            [s for p in m.parts if (s := _signature(p)) is not None] for m in messages
        ],
        "function_calls": [
            [
                (p.id, p.name, p.arguments)
                for p in m.parts
                if isinstance(p, ToolCallPart) and "execution" not in p.provider_details
            ]
            for m in messages
        ],
        "finish_reasons": [m.finish_reason for m in messages],
        "block_reason": feedback.get("blockReason"),
        **{u: raw.get(names[u]) for u in USAGE},
        "response_id": call.response_id,
        "model_version": call.response_model,
    }


# -- comparing --------------------------------------------------------------------------------


@dataclass
class Comparison:
    agree: Counter[str] = field(default_factory=Counter)
    total: Counter[str] = field(default_factory=Counter)
    differences: list[tuple[str, str, str, Any, Any]] = field(default_factory=list)
    calls: int = 0
    streams: int = 0
    enums_dropped: int = 0
    seen: Counter[str] = field(default_factory=Counter)  # calls where the SDK's value is not empty


def _compare(case: str, call: Call, view: ExchangeView, result: Comparison) -> None:
    sdk = _sdk_read(view)
    result.calls += 1
    result.streams += call.stream
    ours_error = (call.error.type, call.error.message) if call.error is not None else None
    pairs: dict[str, tuple[Any, Any]] = {"error": (ours_error, sdk.error)}
    pairs["sdk"] = (None, sdk.failure)
    if sdk.enums_dropped:
        result.enums_dropped += 1
    if sdk.failure is None:
        ours, theirs = _our_view(call), _sdk_view(sdk)
        if sdk.enums_dropped:  # what the SDK was not given, it cannot say
            theirs["finish_reasons"] = [NUMERIC_ENUM] * len(theirs["finish_reasons"])
        pairs.update({name: (ours[name], theirs[name]) for name in ours})
    for name, (mine, expected) in pairs.items():
        result.total[name] += 1
        result.seen[name] += expected not in (None, [], [""], [[]], 0) and expected != [None]
        if mine == expected:
            result.agree[name] += 1
        else:
            result.differences.append((case, call.exchange_id, name, mine, expected))


def _exchanges(file: str) -> list[Exchange]:
    data = (CORPUS / file).read_bytes()
    try:
        kind, doc = classify_document(data, file)
    except InputError:
        return []  # the agentsight eBPF log: not a document the readers take
    ids = itertools.count()
    reader = read_har if kind == "har" else read_vcr
    return [x for x in reader(doc, file, 0, lambda: f"e{next(ids)}") if isinstance(x, Exchange)]


@functools.cache
def _everything() -> tuple[Comparison, dict[str, list[tuple[str, str]]]]:
    result = Comparison()
    recognized: dict[str, list[tuple[str, str]]] = {}
    for entry in ENTRIES:
        file = entry["file"]
        recognized[file] = []
        for x in _exchanges(file):
            call = recognize(x, "k1", registry=FAMILIES)
            url = x.request.url if x.request is not None else ""
            recognized[file].append((url, call.api if call is not None else ""))
            if call is not None and call.api == "gemini.generate_content":
                _compare(file, call, ExchangeView(x), result)
    return result, recognized


def _unexplained(result: Comparison) -> list[tuple[str, str, str, Any, Any]]:
    return [d for d in result.differences if explain(*d) is None]


# -- tests ------------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_corpus_file_agrees_with_sdk(entry: dict[str, Any]) -> None:
    result, recognized = _everything()
    file = entry["file"]
    assert [d for d in _unexplained(result) if d[0] == file] == []
    for url, api in recognized[file]:  # every generateContent endpoint is claimed
        if url.split("?")[0].endswith(("generateContent", "GenerateContent")):
            assert api == "gemini.generate_content", url


def test_agreement_table() -> None:
    result, _ = _everything()
    print(
        f"\n{result.calls} gemini.generate_content calls ({result.streams} streamed) "
        "compared with google-genai"
    )
    print(f"{result.enums_dropped} numeric-enum bodies read by the SDK without their enums")
    print(f"{'field':<28} {'agree':>7} {'total':>7}  {'%':>6}  explained  non-empty")
    listed = Counter(d[2] for d in result.differences)
    for name in FIELDS:
        agree, total = result.agree[name], result.total[name]
        if total:
            print(
                f"{name:<28} {agree:>7} {total:>7}  {100 * agree / total:6.2f}  "
                f"{listed[name]:>9}  {result.seen[name]:>9}"
            )
    agree = sum(n for name, n in result.agree.items() if name != "sdk")
    total = sum(n for name, n in result.total.items() if name != "sdk")
    print(f"{'all fields but sdk':<28} {agree:>7} {total:>7}  {100 * agree / total:6.2f}")
    for d in result.differences:
        print("  ", d[0].rsplit("/", 1)[-1], d[1], d[2], "->", explain(*d))
    assert result.calls > 300
    stale = set(DIFFERENCES) - {(d[0], d[1], d[2]) for d in result.differences}
    assert not stale, f"listed differences that no longer occur: {sorted(stale)}"
    assert _unexplained(result) == []
    assert agree / total >= 0.995
