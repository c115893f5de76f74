"""Corpus oracle: every OpenAI Responses exchange of ``../shared/corpus`` against the SDK.

For each manifest entry whose ``api_families`` include ``openai-responses``: cassettes and HAR
files are read as exchanges; vercel/ai response fixtures (a body, or ``.chunks.txt`` with one
event a line) are wrapped into an exchange on ``POST /v1/responses`` (SSE-framed for chunks).
Each exchange on a Responses path must be claimed by our families, every other one left
alone. The official ``openai`` SDK is the oracle: ``Response.model_validate`` for a body, for a
stream each event validated with the ``ResponseStreamEvent`` adapter and fed to the SDK's own
``ResponseStreamState``, whose completed response (or, for a cut stream, snapshot) is what
our call must say. Fields compared: output text, function calls (call_id, name, arguments),
reasoning summaries, finish reason (status / incomplete reason), usage, response id, model,
error. Every disagreement must be listed with its reason in ``openai_responses_differences``.

``python -m tests.apis.openai.test_responses_corpus`` prints the agreement table.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import openai
import orjson
import pytest
from openai._models import construct_type
from openai.lib.streaming.responses._responses import ResponseStreamState
from openai.types.responses import Response, ResponseStreamEvent
from openai.types.shared import ErrorObject
from pydantic import TypeAdapter, ValidationError

from agentshark.apis.model import Call, ReasoningPart, TextPart, ToolCallPart
from agentshark.apis.openai.responses import (
    FAMILIES,
    conversations_operation,
    finish_reason,
    responses_operation,
)
from agentshark.apis.openai.responses_items import SUMMARY_SEPARATOR
from agentshark.apis.registry import recognize
from agentshark.apis.view import ExchangeView
from agentshark.errors import InputError
from agentshark.framing.events import SseEvent
from agentshark.model import Body, Exchange, Request
from agentshark.model import Response as HttpResponse
from agentshark.sources.detect import classify_document
from agentshark.sources.har import read_har
from agentshark.sources.vcr import read_vcr
from tests.apis.openai.responses_differences import DIFFERENCES
from tests.helpers import CORPUS

MANIFEST = CORPUS / "manifest.jsonl"
EVENT = TypeAdapter[Any](ResponseStreamEvent)
FIELDS = ("text", "tool_calls", "reasoning", "finish", "usage", "response_id", "model", "error")


def _entries() -> list[str]:
    if not MANIFEST.exists():
        return []
    out = []
    for line in MANIFEST.read_text().splitlines():
        entry = json.loads(line) if line.strip() else {}
        if "openai-responses" in entry.get("api_families", {}):
            out.append(entry["file"])
    return out


FILES = _entries()
# The SDK warns when it serializes the models it built without validation (its own
# streaming path does that too): noise for an oracle.
SDK_WARNINGS = "ignore:Pydantic serializer warnings:UserWarning"
pytestmark = [
    pytest.mark.skipif(not FILES, reason=f"no corpus at {CORPUS}"),
    pytest.mark.filterwarnings(SDK_WARNINGS),
]


# -- loading ------------------------------------------------------------------------------------


def load(file: str) -> list[Exchange]:
    data = (CORPUS / file).read_bytes()
    try:
        kind, doc = classify_document(data, file)
    except InputError:
        return fixture_exchanges(file, data)
    ids = itertools.count()
    reader = read_har if kind == "har" else read_vcr
    return [x for x in reader(doc, file, 0, lambda: f"e{next(ids)}") if isinstance(x, Exchange)]


def fixture_exchanges(file: str, data: bytes) -> list[Exchange]:
    """A vercel/ai response fixture as the exchanges that carried it (no request body).
    Some ``.chunks.txt`` files hold the streams of several calls one after the other: each
    ``response.created`` after the first starts another exchange."""
    if not file.endswith(".chunks.txt"):
        return [make_exchange(b"", [(2.0, data)])]
    streams: list[list[bytes]] = []
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        if not streams or (line.startswith(b'{"type":"response.created"') and streams[-1]):
            streams.append([])
        streams[-1].append(b"data: " + line + b"\n\n")
    return [make_exchange(b"", [(2.0, b"".join(s))], "text/event-stream") for s in streams]


def make_exchange(
    request: bytes,
    pieces: list[tuple[float, bytes]],
    content_type: str = "application/json",
    *,
    url: str = "https://api.openai.com/v1/responses",
    method: str = "POST",
    status: int = 200,
    complete: bool = True,
) -> Exchange:
    req_body = Body()
    req_body.append(1.0, request)
    resp_body = Body()
    for ts, piece in pieces:
        resp_body.append(ts, piece)
    target = url.split("://", 1)[-1]
    target = target[target.index("/") :]
    return Exchange(
        id="x1",
        source=0,
        connection=None,
        transport="http/1.1",
        request=Request(
            method=method,
            target=target,
            url=url,
            version="HTTP/1.1",
            headers=[("content-type", "application/json")],
            body=req_body,
            started=1.0,
            ended=1.0,
            complete=True,
        ),
        response=HttpResponse(
            status=status,
            reason="",
            version="HTTP/1.1",
            headers=[("content-type", content_type)],
            body=resp_body,
            started=2.0,
            ended=3.0,
            complete=complete,
        ),
    )


# -- the SDK's view -----------------------------------------------------------------------------


@dataclass
class Oracle:
    values: dict[str, Any]
    notes: list[str] = field(default_factory=list)  # SDK validation failures and the like


def sdk_values(view: ExchangeView) -> Oracle | None:
    """What the SDK makes of the exchange's response, or None when it has nothing to say."""
    if view.framing == "sse":
        return _sdk_stream(view)
    body = view.response_json
    if not isinstance(body, dict):
        return None
    if view.status is not None and view.status >= 400:
        err = body.get("error")
        if not isinstance(err, dict):
            return None
        e = ErrorObject.model_validate(err)
        return Oracle({"error": (e.type, e.code, e.message)})
    if body.get("object") != "response":
        return None
    notes = []
    try:
        resp: Any = Response.model_validate(body)
    except ValidationError as exc:
        notes.append(f"Response.model_validate: {exc.error_count()} errors")
        resp = construct_type(type_=Response, value=body)
    return Oracle(_response_values(resp, body), notes)


def _sdk_stream(view: ExchangeView) -> Oracle:
    notes: list[str] = []
    state = ResponseStreamState(input_tools=openai.omit, text_format=openai.omit)
    final: Any = None
    final_raw: dict[str, Any] | None = None
    state_ok = True
    error: Any = None
    for ev in view.events:
        if not isinstance(ev, SseEvent) or not ev.data or ev.data == "[DONE]":
            continue
        try:
            raw = orjson.loads(ev.data)
        except orjson.JSONDecodeError:
            notes.append("event data is not JSON")
            continue
        try:
            event = EVENT.validate_python(raw)
        except ValidationError:
            notes.append(f"event {raw.get('type')} fails validation")
            event = construct_type(type_=ResponseStreamEvent, value=raw)
        if raw.get("type") == "error" and error is None:
            error = raw.get("error") if isinstance(raw.get("error"), dict) else raw
        if state_ok:
            try:
                state.handle_event(event)
            except (RuntimeError, AssertionError, AttributeError, IndexError) as exc:
                notes.append(f"ResponseStreamState: {exc}")
                state_ok = False
        if (
            raw.get("type") in ("response.completed", "response.failed", "response.incomplete")
            and ev.complete
        ):
            final_raw = raw["response"]
            final = event.response
    if final is not None and state_ok and state._completed_response is not None:
        final = state._completed_response
    if final is None:
        snapshot = state._ResponseStreamState__current_snapshot if state_ok else None  # type: ignore[attr-defined]
        values = _response_values(snapshot, None) if snapshot is not None else {}
        values["finish"] = None
        values["usage"] = None
        if not state_ok:
            notes.append("no terminal event and no SDK snapshot")
    else:
        values = _response_values(final, final_raw)
    if error is not None and values.get("error") is None:
        values["error"] = (
            error.get("type") if error is not error.get("error") else None,
            error.get("code"),
            error.get("message"),
        )
    return Oracle(values, notes)


def _response_values(resp: Any, raw: dict[str, Any] | None) -> dict[str, Any]:
    output = getattr(resp, "output", None) or []
    text = "".join(
        c.text
        for o in output
        if o.type == "message"
        for c in o.content
        if c.type == "output_text" and c.text is not None
    )
    calls = [(o.call_id, o.name, o.arguments) for o in output if o.type == "function_call"]
    reasoning = [
        SUMMARY_SEPARATOR.join(s.text for s in (o.summary or []))
        or SUMMARY_SEPARATOR.join(c.text for c in (getattr(o, "content", None) or []))
        for o in output
        if o.type == "reasoning"
    ]
    usage = getattr(resp, "usage", None)
    u = None
    if usage is not None:
        itd = getattr(usage, "input_tokens_details", None)
        otd = getattr(usage, "output_tokens_details", None)
        u = (
            usage.input_tokens,
            usage.output_tokens,
            getattr(itd, "cached_tokens", None),
            getattr(otd, "reasoning_tokens", None),
            usage.total_tokens,
        )
    err = getattr(resp, "error", None)
    status = getattr(resp, "status", None)
    incomplete = getattr(resp, "incomplete_details", None)
    finish = finish_reason(
        {
            "status": status,
            "incomplete_details": {"reason": incomplete.reason} if incomplete is not None else None,
        }
    )
    return {
        "text": text,
        "tool_calls": calls,
        "reasoning": reasoning,
        "finish": finish,
        "usage": u,
        "response_id": getattr(resp, "id", None),
        "model": getattr(resp, "model", None),
        "error": (None, err.code, err.message) if err is not None else None,
    }


# -- our view -----------------------------------------------------------------------------------


def our_values(call: Call) -> dict[str, Any]:
    parts = [p for m in call.output_messages if m.role == "assistant" for p in m.parts]
    u = call.usage
    return {
        "text": "".join(p.content for p in parts if isinstance(p, TextPart)),
        "tool_calls": [
            (p.id, p.name, p.arguments_raw)
            for p in parts
            if isinstance(p, ToolCallPart) and "item_type" not in p.provider_details
        ],
        "reasoning": [p.content for p in parts if isinstance(p, ReasoningPart)],
        "finish": call.finish_reasons[0] if call.finish_reasons else None,
        "usage": (
            u.input_tokens,
            u.output_tokens,
            u.cached_input_tokens,
            u.reasoning_tokens,
            u.total_tokens,
        )
        if u is not None
        else None,
        "response_id": call.response_id,
        "model": call.response_model,
        "error": (call.error.type, call.error.code, call.error.message) if call.error else None,
    }


# -- comparison ---------------------------------------------------------------------------------


@dataclass
class Result:
    file: str
    index: int
    agree: dict[str, bool] = field(default_factory=dict)
    ours: dict[str, Any] = field(default_factory=dict)
    theirs: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    claimed: bool = False
    claim_ok: bool = True


def compare(file: str, index: int, exchange: Exchange) -> Result:
    res = Result(file, index)
    view = ExchangeView(exchange)
    path, method = view.path, view.method
    ours_expected = responses_operation(path, method) is not None or (
        conversations_operation(path, method) is not None and "openai" in view.host
    )
    call = recognize(exchange, "k1", registry=FAMILIES)
    res.claimed = call is not None
    res.claim_ok = res.claimed == ours_expected
    if call is None or call.api != "openai.responses":
        return res
    oracle = sdk_values(ExchangeView(exchange))
    if oracle is None:
        return res
    res.notes = oracle.notes
    ours = our_values(call)
    for name, expected in oracle.values.items():
        if name == "error" and expected is not None and ours["error"] is not None:
            # the SDK's failed-response error has no type: compare what it has
            got = tuple(
                o if e is not None else None for o, e in zip(ours["error"], expected, strict=True)
            )
        else:
            got = ours[name]
        res.agree[name] = got == expected
        res.ours[name], res.theirs[name] = got, expected
    return res


@cache
def results() -> tuple[Result, ...]:
    out = []
    for file in FILES:
        for i, x in enumerate(load(file)):
            out.append(compare(file, i, x))
    return tuple(out)


def _problems(file: str) -> list[str]:
    problems = []
    for r in results():
        if r.file != file:
            continue
        if not r.claim_ok:
            problems.append(f"exchange {r.index}: claimed={r.claimed}, expected the opposite")
        for name, ok in r.agree.items():
            key = (r.file, r.index, name)
            if not ok and key not in DIFFERENCES:
                problems.append(
                    f"exchange {r.index} {name}: ours {r.ours[name]!r:.300} "
                    f"!= sdk {r.theirs[name]!r:.300} {r.notes}"
                )
            elif ok and key in DIFFERENCES:
                problems.append(f"exchange {r.index} {name}: listed as a difference but agrees")
    return problems


@pytest.mark.parametrize("file", FILES)
def test_corpus_file_agrees_with_sdk(file: str) -> None:
    problems = _problems(file)
    assert not problems, "\n".join(problems)


def test_every_listed_difference_exists() -> None:
    known = {(r.file, r.index) for r in results()}
    stale = [k for k in DIFFERENCES if (k[0], k[1]) not in known]
    assert not stale, stale


def agreement_table() -> str:
    agree: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for r in results():
        for name, ok in r.agree.items():
            total[name] += 1
            agree[name] += ok
    lines = [f"{'field':<12} {'agree':>6} {'total':>6} {'%':>7}"]
    lines.extend(
        f"{name:<12} {agree[name]:>6} {total[name]:>6} {100 * agree[name] / total[name]:>6.1f}%"
        for name in FIELDS
        if total[name]
    )
    compared = sum(1 for r in results() if r.agree)
    claimed = sum(r.claimed for r in results())
    lines.append(
        f"exchanges: {len(results())}, claimed: {claimed}, compared with the SDK: "
        f"{compared}, justified differences: {len(DIFFERENCES)}"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    print(agreement_table())
    for r in results():
        for name, ok in r.agree.items():
            if not ok:
                print(
                    r.file,
                    r.index,
                    name,
                    repr(r.ours[name])[:200],
                    "!=",
                    repr(r.theirs[name])[:200],
                    r.notes,
                )
        if not r.claim_ok:
            print(r.file, r.index, "claim", r.claimed)
