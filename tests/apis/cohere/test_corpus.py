"""Corpus oracle: every Cohere chat exchange of ``../shared/corpus`` against the ``cohere`` SDK.

Every corpus file with a ``/v1/chat`` or ``/v2/chat`` endpoint on a Cohere host, and
vercel/ai's Cohere fixtures (response bodies and ``*.chunks.txt`` v2 event lists, wrapped in
a synthetic exchange), is recognized with the whole registry; each ``cohere.chat`` call is
compared with what the SDK makes of the same bytes, the way its clients read them:

- v2 whole: ``construct_type(V2ChatResponse, body)`` (``V2Client.chat``);
- v2 stream: the SDK's ``EventSource(response).iter_sse()``, ``[DONE]`` ending it, each event
  ``parse_sse_obj(sse, V2ChatStreamResponse)`` (``V2Client.chat_stream``), folded here as a
  caller folds them (content texts by index, tool plan, tool call arguments by index,
  ``message-end``'s finish reason and usage);
- v1 whole: ``construct_type(NonStreamedChatResponse, body)``; v1 stream: ``iter_lines``,
  ``construct_type(StreamedChatResponse, line)``, the ``stream-end`` event's ``response``;
- an error status: the body's ``message`` (the SDK raises ``ApiError`` with that body).

Per field, agreement is counted; a difference must be listed with its reason in
``differences.DIFFERENCES``. Run with ``-s`` to see the table.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from cohere import NonStreamedChatResponse, StreamedChatResponse, V2ChatResponse
from cohere.core.http_sse._api import EventSource
from cohere.core.pydantic_utilities import parse_sse_obj
from cohere.core.unchecked_base_model import construct_type
from cohere.v2 import V2ChatStreamResponse

from agentshark.apis.model import Call, ReasoningPart, TextPart, ToolCallPart
from agentshark.apis.registry import recognize
from agentshark.apis.view import ExchangeView
from agentshark.model import Body, Exchange, Request, Response
from tests.apis.cohere.differences import DIFFERENCES
from tests.apis.corpus_cases import Agreement, entries, exchanges
from tests.helpers import CORPUS

FILES = entries(lambda e: "cohere" in e and e.rstrip("/").endswith(("/v1/chat", "/v2/chat")))
# the SDK's event unions are typing forms, which its own code passes with a type: ignore
_V2_EVENT: Any = V2ChatStreamResponse
_V1_EVENT: Any = StreamedChatResponse
VERCEL = CORPUS / "vercel__ai/packages/cohere/src/__fixtures__"
FIXTURES = [p for p in sorted(VERCEL.glob("*")) if "embedding" not in p.name]
pytestmark = [
    pytest.mark.skipif(not FILES, reason="no corpus"),
    # the SDK's own pydantic-v1 compatibility code warns on every event it builds
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]


# -- the SDK's reading ------------------------------------------------------------------------


def _args(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _sdk(view: ExchangeView, version: str) -> dict[str, Any]:
    status = view.status or 0
    if status >= 400:
        body = json.loads(view.response_body)
        return {"error": body.get("message"), "complete": True}
    if view.framing in ("sse", "ndjson"):
        headers = {"content-type": view.response_content_type}
        http = httpx.Response(200, headers=headers, content=view.response_body)
        return _sdk_v2_stream(http) if version == "v2" else _sdk_v1_stream(http)
    body = json.loads(view.response_body)
    if version == "v2":
        return _v2(construct_type(type_=V2ChatResponse, object_=body)) | {"complete": True}
    return _v1(construct_type(type_=NonStreamedChatResponse, object_=body)) | {"complete": True}


def _usage(usage: Any) -> dict[str, Any]:
    tokens = getattr(usage, "tokens", None)
    billed = getattr(usage, "billed_units", None)
    return {
        "input_tokens": _whole(tokens.input_tokens if tokens else None)
        if tokens is not None
        else _whole(billed.input_tokens if billed else None),
        "output_tokens": _whole(tokens.output_tokens if tokens else None)
        if tokens is not None
        else _whole(billed.output_tokens if billed else None),
        "cached_tokens": _whole(getattr(usage, "cached_tokens", None)),
    }


def _whole(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _v2(r: Any) -> dict[str, Any]:
    m = r.message
    content = m.content or []
    return {
        "id": r.id,
        "text": "".join(c.text for c in content if c.type == "text"),
        "reasoning": "".join(c.thinking for c in content if c.type == "thinking"),
        "tool_plan": m.tool_plan or "",
        "tool_calls": [
            (t.id, t.function.name, _args(t.function.arguments)) for t in m.tool_calls or []
        ],
        "citations": len(m.citations or []),
        "finish_reason": r.finish_reason,
        **_usage(r.usage),
        "error": None,
    }


def _sdk_v2_stream(http: httpx.Response) -> dict[str, Any]:
    texts: dict[int, list[str]] = {}
    thinking: dict[int, list[str]] = {}
    tools: dict[int, list[Any]] = {}
    out: dict[str, Any] = {"id": None, "tool_plan": "", "citations": 0, "error": None}
    out |= {"finish_reason": None, "complete": False, **_usage(None)}
    for sse in EventSource(http).iter_sse():
        if sse.data == "[DONE]":
            break
        if not sse.data:
            continue
        e: Any = parse_sse_obj(sse=sse, type_=_V2_EVENT)
        if e.type == "message-start":
            out["id"] = e.id
        elif e.type in ("content-start", "content-delta"):
            c = e.delta.message.content
            if getattr(c, "thinking", None) is not None:
                thinking.setdefault(e.index, []).append(c.thinking)
            elif getattr(c, "text", None) is not None:
                texts.setdefault(e.index, []).append(c.text)
        elif e.type == "tool-plan-delta":
            out["tool_plan"] += e.delta.message.tool_plan or ""
        elif e.type == "tool-call-start":
            t = e.delta.message.tool_calls
            tools[e.index] = [t.id, t.function.name, [t.function.arguments or ""]]
        elif e.type == "tool-call-delta":
            tools[e.index][2].append(e.delta.message.tool_calls.function.arguments or "")
        elif e.type == "citation-start":
            out["citations"] += 1
        elif e.type == "message-end":
            out |= {
                "finish_reason": e.delta.finish_reason,
                "complete": True,
                "error": e.delta.error,
            }
            out |= _usage(e.delta.usage)
    out["text"] = "".join("".join(texts[i]) for i in sorted(texts))
    out["reasoning"] = "".join("".join(thinking[i]) for i in sorted(thinking))
    out["tool_calls"] = [(t[0], t[1], _args("".join(t[2]))) for _, t in sorted(tools.items())]
    return out


def _v1(r: Any) -> dict[str, Any]:
    return {
        "id": r.response_id,
        "text": r.text,
        "tool_calls": [(None, t.name, t.parameters) for t in r.tool_calls or []],
        "citations": len(r.citations or []),
        "finish_reason": r.finish_reason,
        **_usage(r.meta),
        "error": None,
    }


def _sdk_v1_stream(http: httpx.Response) -> dict[str, Any]:
    end = None
    for line in http.iter_lines():
        if line:
            e: Any = construct_type(type_=_V1_EVENT, object_=json.loads(line))
            if e.event_type == "stream-end":
                end = e
    if end is None:
        return {"complete": False}
    return _v1(end.response) | {"finish_reason": end.finish_reason, "complete": True}


# -- ours -------------------------------------------------------------------------------------


def _ours(call: Call) -> dict[str, Any]:
    if call.error is not None and call.error.status is not None:
        return {"error": call.error.message, "complete": call.complete}
    parts = call.output_messages[0].parts if call.output_messages else []
    reasoning = [p for p in parts if isinstance(p, ReasoningPart)]
    raw = call.usage.raw if call.usage is not None and call.usage.raw else {}
    citations: list[Any] = next(
        (p.provider_details.get("citations", []) for p in parts if isinstance(p, TextPart)), []
    )
    return {
        "id": call.response_id,
        "text": "".join(p.content for p in parts if isinstance(p, TextPart)),
        "reasoning": "".join(
            p.content for p in reasoning if p.provider_details.get("field") != "tool_plan"
        ),
        "tool_plan": "".join(
            p.content for p in reasoning if p.provider_details.get("field") == "tool_plan"
        ),
        "tool_calls": [(p.id, p.name, p.arguments) for p in parts if isinstance(p, ToolCallPart)],
        "citations": len(citations),
        "finish_reason": call.output_messages[0].finish_reason if call.output_messages else None,
        "input_tokens": call.usage.input_tokens if call.usage else None,
        "output_tokens": call.usage.output_tokens if call.usage else None,
        "cached_tokens": raw.get("cached_tokens"),
        "error": call.error.message if call.error is not None else None,
        "complete": call.complete,
    }


# -- cases ------------------------------------------------------------------------------------


def _synthetic(name: str, body: bytes, content_type: str) -> Exchange:
    request = json.dumps({"model": "command-a", "messages": [{"role": "user", "content": "hi"}]})
    return Exchange(
        id=name,
        source=0,
        connection=None,
        transport="http/1.1",
        request=Request(
            method="POST",
            target="/v2/chat",
            url="https://api.cohere.com/v2/chat",
            version="HTTP/1.1",
            headers=[("content-type", "application/json")],
            body=Body(pieces=[(1.0, request.encode())]),
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


def fixture_exchange(path: Path) -> Exchange:
    text = path.read_text()
    if not path.name.endswith(".chunks.txt"):
        return _synthetic(path.name, text.encode(), "application/json")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    sse = "".join(f"event: {json.loads(ln)['type']}\ndata: {ln}\n\n" for ln in lines)
    return _synthetic(path.name, (sse + "data: [DONE]\n\n").encode(), "text/event-stream")


@functools.cache
def _everything() -> tuple[Agreement, dict[str, list[str]]]:
    result = Agreement()
    apis: dict[str, list[str]] = {}
    cases = [(f, exchanges(f)) for f in FILES]
    cases += [(f"vercel:{p.name}", [fixture_exchange(p)]) for p in FIXTURES]
    for case, xs in cases:
        apis[case] = []
        for x in xs:
            call = recognize(x, "k1")
            apis[case].append(call.api if call is not None else "")
            if call is None or call.api != "cohere.chat":
                continue
            theirs = _sdk(ExchangeView(x), call.extras["api_version"])
            mine = _ours(call)
            result.compare(case, x.id, {k: (mine.get(k), v) for k, v in theirs.items()})
    return result, apis


@pytest.mark.parametrize("file", FILES)
def test_corpus_file_agrees_with_sdk(file: str) -> None:
    result, apis = _everything()
    assert [d for d in result.unexplained(DIFFERENCES) if d[0] == file] == []
    for x, api in zip(exchanges(file), apis[file], strict=True):
        url = x.request.url.split("?")[0] if x.request is not None else ""
        if "cohere" in url and url.endswith(("/v1/chat", "/v2/chat")):
            assert api == "cohere.chat", x.id


@pytest.mark.parametrize("fixture", FIXTURES, ids=[p.name for p in FIXTURES])
def test_vercel_fixture_agrees_with_sdk(fixture: Path) -> None:
    result, apis = _everything()
    case = f"vercel:{fixture.name}"
    assert apis[case] == ["cohere.chat"]
    assert [d for d in result.unexplained(DIFFERENCES) if d[0] == case] == []


def test_agreement_table() -> None:
    result, _ = _everything()
    print("\n" + result.table(f"{result.calls} Cohere chat calls compared with the cohere SDK"))
    assert result.calls >= 60
    assert not result.stale(DIFFERENCES)
    assert result.unexplained(DIFFERENCES) == []
    assert result.ratio() >= 0.995
