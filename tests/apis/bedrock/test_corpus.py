"""Corpus oracle: every Bedrock Converse and InvokeModel exchange of ``../shared/corpus``
against botocore.

For each corpus document whose ``manifest.jsonl`` entry lists ``bedrock-converse`` or
``bedrock-invoke``, every exchange is read with the HAR / VCR readers and recognized with the
whole registry; every ``bedrock.converse`` and ``bedrock.invoke`` call is compared field by
field with what botocore makes of the same response bytes (:mod:`tests.apis.bedrock.oracle`).
Anthropic bodies sent through InvokeModel are ``anthropic.messages`` calls, compared with the
anthropic SDK in ``tests/apis/anthropic/test_corpus.py``. vercel/ai's Bedrock fixtures
(Converse response bodies and ``*.chunks.txt`` event lists) are wrapped in synthetic
exchanges, the events written as AWS event stream frames, and compared the same way.

Per field, the test counts agreement; a difference must match a rule of
``differences.RULES`` (a named reason why agentshark is right). Run with ``-s`` to see the
agreement table.
"""

from __future__ import annotations

import base64
import functools
import itertools
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agentshark.apis.bedrock.wire import route_of
from agentshark.apis.model import (
    BlobPart,
    Call,
    GenericPart,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
    UriPart,
)
from agentshark.apis.registry import recognize
from agentshark.apis.view import ExchangeView
from agentshark.errors import InputError
from agentshark.model import Exchange
from agentshark.sources.detect import classify_document
from agentshark.sources.har import read_har
from agentshark.sources.vcr import read_vcr
from tests.apis.bedrock import frames, oracle
from tests.apis.bedrock.differences import explain
from tests.helpers import CORPUS

MANIFEST = CORPUS / "manifest.jsonl"
VERCEL = CORPUS / "vercel__ai/packages/amazon-bedrock/src/__fixtures__"


def _manifest() -> list[dict[str, Any]]:
    if not MANIFEST.exists():
        return []
    entries = [json.loads(line) for line in MANIFEST.read_text().splitlines() if line.strip()]
    wanted = ("bedrock-converse", "bedrock-invoke")
    return [
        e
        for e in entries
        if any(f in e["api_families"] for f in wanted) and not e["file"].startswith("vercel__ai")
    ]


ENTRIES = _manifest()
FIXTURES = sorted(VERCEL.glob("*.json")) + sorted(VERCEL.glob("*.chunks.txt"))
pytestmark = pytest.mark.skipif(not ENTRIES, reason=f"no corpus at {CORPUS}")


# -- our side, in the oracle's terms ----------------------------------------------------------


def _kind(part: Any) -> str:
    if isinstance(part, GenericPart):
        return part.type
    block = part.provider_details.get("block_type")
    if isinstance(block, str):
        return block
    if isinstance(part, BlobPart | UriPart):
        return part.modality or "document"
    return {
        TextPart: "text",
        ReasoningPart: "reasoningContent",
        ToolCallPart: "toolUse",
        ToolCallResponsePart: "toolResult",
    }[type(part)]


def _ours(call: Call) -> dict[str, Any]:
    message = call.output_messages[0] if call.output_messages else None
    parts = message.parts if message is not None else []
    raw = call.usage.raw or {} if call.usage is not None else {}
    response = call.extras.get("response", {})
    texts = [p.content for p in parts if isinstance(p, TextPart) and _kind(p) == "text"]
    out: dict[str, Any] = {
        "role": message.role if message is not None else None,
        "blocks": [_kind(p) for p in parts],
        "text": texts,
        "reasoning": [
            (
                p.content,
                p.provider_details.get("signature"),
                p.provider_details.get("redactedContent"),
            )
            for p in parts
            if isinstance(p, ReasoningPart)
        ],
        "tool_calls": [(p.id, p.name, p.arguments) for p in parts if isinstance(p, ToolCallPart)],
        "stop_reason": message.finish_reason if message is not None else None,
        "input_tokens": raw.get("inputTokens"),
        "output_tokens": raw.get("outputTokens"),
        "total_tokens": raw.get("totalTokens"),
        "cache_read": raw.get("cacheReadInputTokens"),
        "cache_write": raw.get("cacheWriteInputTokens"),
        "latency_ms": (response.get("metrics") or {}).get("latencyMs"),
        "error": (call.error.type, call.error.message) if call.error is not None else None,
        "complete": call.complete,
    }
    if call.api == "bedrock.invoke" and "inputTokens" not in raw and call.usage is not None:
        out["input_tokens"], out["output_tokens"] = (
            call.usage.input_tokens,
            call.usage.output_tokens,
        )
    if call.operation == "embeddings":
        summary = call.extras.get("embeddings", {})
        out = {"vectors": summary.get("vectors"), "dimensions": summary.get("dimensions")}
        out["complete"] = call.complete
    elif call.api == "bedrock.invoke" and len(call.output_messages) > 1:
        out["text"] = [
            "".join(p.content for p in m.parts if isinstance(p, TextPart))
            for m in call.output_messages
        ]
    if call.usage is not None and raw:
        _check_normalized(call)
    return out


def _check_normalized(call: Call) -> None:
    """The normalized numbers follow from Converse's raw ones (input includes the cache)."""
    usage = call.usage
    assert usage is not None and usage.raw is not None
    raw = usage.raw
    if isinstance(raw.get("inputTokens"), int):
        cache = (raw.get("cacheReadInputTokens") or 0) + (raw.get("cacheWriteInputTokens") or 0)
        assert usage.input_tokens == raw["inputTokens"] + cache
        assert usage.output_tokens == raw.get("outputTokens")
        assert usage.total_tokens == raw.get("totalTokens")


# -- comparing --------------------------------------------------------------------------------


@dataclass
class Comparison:
    agree: Counter[str] = field(default_factory=Counter)
    total: Counter[str] = field(default_factory=Counter)
    explained: Counter[str] = field(default_factory=Counter)  # rule name -> count
    unexplained: list[tuple[str, str, str, Any, Any]] = field(default_factory=list)
    calls: Counter[str] = field(default_factory=Counter)


def _compare(case: str, call: Call, view: ExchangeView, result: Comparison) -> None:
    route = route_of(view)
    assert route is not None
    theirs = oracle.read(view, route.operation)
    result.calls[call.api] += 1
    ours = _ours(call)
    pairs = {name: (ours.get(name), theirs.fields.get(name)) for name in theirs.fields}
    if theirs.failure is not None:
        pairs["botocore"] = (None, theirs.failure)
    for name, (mine, expected) in pairs.items():
        result.total[name] += 1
        if mine == expected:
            result.agree[name] += 1
            continue
        rule = explain(name, mine, expected, call, view)
        if rule is None:
            result.unexplained.append((case, call.exchange_id, name, mine, expected))
        else:
            result.explained[rule] += 1


def _corpus_exchanges(file: str) -> list[Exchange]:
    data = (CORPUS / file).read_bytes()
    try:
        kind, doc = classify_document(data, file)
    except InputError:
        return []
    ids = itertools.count()
    reader = read_har if kind == "har" else read_vcr
    return [x for x in reader(doc, file, 0, lambda: f"e{next(ids)}") if isinstance(x, Exchange)]


def _fixture_exchange(path: Path) -> Exchange:
    """A vercel/ai fixture as the exchange it came from (the model id is made up)."""
    request = {"messages": [{"role": "user", "content": [{"text": "hi"}]}]}
    model = "/model/anthropic.claude-3-7-sonnet-20250219-v1%3A0"
    if path.name.endswith(".chunks.txt"):
        lines = [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]
        body = frames.converse_events(lines)
        return frames.exchange(
            model + "/converse-stream",
            request,
            body,
            content_type="application/vnd.amazon.eventstream",
            name=path.name,
        )
    return frames.exchange(model + "/converse", request, path.read_bytes(), name=path.name)


@functools.cache
def _everything() -> tuple[Comparison, dict[str, list[str]]]:
    result = Comparison()
    recognized: dict[str, list[str]] = {}
    cases = [(e["file"], _corpus_exchanges(e["file"])) for e in ENTRIES]
    cases += [(f"vercel:{p.name}", [_fixture_exchange(p)]) for p in FIXTURES]
    for case, exchanges in cases:
        recognized[case] = []
        for x in exchanges:
            call = recognize(x, "k1")
            recognized[case].append(call.api if call is not None else "")
            if call is not None and call.api in ("bedrock.converse", "bedrock.invoke"):
                _compare(case, call, ExchangeView(x), result)
    return result, recognized


# -- tests ------------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_corpus_file_agrees_with_botocore(entry: dict[str, Any]) -> None:
    result, recognized = _everything()
    file = entry["file"]
    assert [d for d in result.unexplained if d[0] == file] == []
    for x, api in zip(_corpus_exchanges(file), recognized[file], strict=True):
        req = x.request
        if req is None or "/model/" not in req.url or req.url.endswith("/count-tokens"):
            continue
        assert api.startswith(("bedrock.", "anthropic.")), (x.id, req.url, api)


@pytest.mark.parametrize("fixture", FIXTURES, ids=[p.name for p in FIXTURES])
def test_vercel_fixture_agrees_with_botocore(fixture: Path) -> None:
    result, recognized = _everything()
    case = f"vercel:{fixture.name}"
    assert recognized[case] == ["bedrock.converse"]
    assert [d for d in result.unexplained if d[0] == case] == []


def test_agreement_table() -> None:
    result, _ = _everything()
    calls = ", ".join(f"{n} {api}" for api, n in sorted(result.calls.items()))
    print(f"\n{calls} calls compared with botocore {oracle.botocore_version()}")
    print(f"{'field':<16} {'agree':>7} {'total':>7}  {'%':>7}")
    for name in sorted(result.total):
        agree, total = result.agree[name], result.total[name]
        print(f"{name:<16} {agree:>7} {total:>7}  {100 * agree / total:7.2f}")
    agree, total = sum(result.agree.values()), sum(result.total.values())
    print(f"{'all':<16} {agree:>7} {total:>7}  {100 * agree / total:7.2f}")
    for rule, n in result.explained.most_common():
        print(f"explained {n:>4}x: {rule}")
    assert sum(result.calls.values()) > 300
    assert result.unexplained == []
    assert agree / total >= 0.995


def test_redacted_content_is_base64_as_sent() -> None:
    """Our redactedContent is the base64 text of the wire; botocore decodes it to bytes."""
    data = base64.b64encode(b"\x00\x01opaque").decode()
    body = frames.converse_events(
        [
            {"messageStart": {"role": "assistant"}},
            {
                "contentBlockDelta": {
                    "contentBlockIndex": 0,
                    "delta": {"reasoningContent": {"redactedContent": data}},
                }
            },
            {"contentBlockStop": {"contentBlockIndex": 0}},
            {"messageStop": {"stopReason": "end_turn"}},
        ]
    )
    x = frames.exchange(
        "/model/m/converse-stream",
        {"messages": []},
        body,
        content_type="application/vnd.amazon.eventstream",
    )
    call = recognize(x, "k1")
    assert call is not None
    theirs = oracle.read(ExchangeView(x), "converse-stream").fields
    assert _ours(call)["reasoning"] == theirs["reasoning"] == [("", None, data)]
