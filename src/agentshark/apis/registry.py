"""The registry of API families, and recognition by scored claims.

Every family offers ``match(view) -> float`` (below 0: "not mine"; higher is surer, body shape
and stream event names weigh most, host least) and ``parse(view, call)``, which fills a call
whose common fields (timing, provider request ids, trace context) are already set. The best
claim wins; no claim leaves a plain HTTP exchange. The list below is the whole registry:
adding a family is adding a line (no import-by-name magic).

Families that are recognized but not parsed yet (:data:`UNPARSED`: Gemini, Bedrock, OpenAI
Realtime) are named by :func:`unparsed_api` from the request's path alone, so a view can say
"3 exchanges look like Gemini generateContent (not parsed yet)" instead of nothing; they make
no call.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import unquote, urlsplit

from agentshark.apis.model import Call, Timing
from agentshark.apis.view import ExchangeView
from agentshark.framing.events import EventStreamMessage, JsonDocument, SseEvent
from agentshark.http.content import DEFAULT_DECODE_LIMIT
from agentshark.model import Exchange, Headers
from agentshark.trace.appids import header_app_ids


class ApiFamily(Protocol):
    api: str  # the report's "api" value for calls this family parses

    def match(self, view: ExchangeView) -> float: ...

    def parse(self, view: ExchangeView, call: Call) -> None: ...


# Response headers that carry the provider's own request id, in order of preference.
REQUEST_ID_HEADERS = (
    "x-request-id",
    "request-id",
    "x-amzn-requestid",
    "x-amz-request-id",
    "apim-request-id",
    "x-goog-request-id",
    "cf-ray",
)
TRACE_HEADERS = ("traceparent", "tracestate", "baggage")
TIMED_EVENTS = (SseEvent, JsonDocument, EventStreamMessage)  # not comments


@functools.cache  # the list never changes; the deferred import costs a lookup per exchange
def families() -> Sequence[ApiFamily]:
    """The registered families, in tie-break order (first wins a tie)."""
    from agentshark.apis import a2a, anthropic, mcp, openai_chat, openai_responses

    return (
        *openai_chat.FAMILIES,
        *openai_responses.FAMILIES,
        *anthropic.FAMILIES,
        *mcp.FAMILIES,
        *a2a.FAMILIES,
    )


def known_apis() -> list[str]:
    """The ``api`` names calls can have (parsed families), then the recognized unparsed ones."""
    parsed = sorted({f.api for f in families() if f.api})
    return parsed + [n for n in dict.fromkeys(u.api for u in UNPARSED) if n not in parsed]


@dataclass(frozen=True, slots=True, kw_only=True)
class UnparsedApi:
    """An API family recognized by its endpoint path, not parsed yet."""

    api: str  # the report's api name it will have (DESIGN.md)
    pattern: re.Pattern[str]  # over the URL-decoded path; group "op" names the operation
    names: dict[str, str]  # operation -> what a user reads ("Gemini generateContent")
    websocket: bool = False  # only a WebSocket upgrade (GET + Upgrade: websocket) counts


# Paths, from the vendors' API references: Gemini `models/{model}:generateContent`
# (https://ai.google.dev/api/generate-content), also under Vertex `publishers/google/models/`
# and Code Assist `v1internal:`; Bedrock Runtime `/model/{modelId}/converse` and friends
# (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_Operations_Amazon_Bedrock_Runtime.html);
# OpenAI Realtime: a WebSocket to `/v1/realtime` and the WebRTC `/v1/realtime/calls`,
# `/v1/realtime/client_secrets` (https://platform.openai.com/docs/api-reference/realtime).
UNPARSED: tuple[UnparsedApi, ...] = (
    UnparsedApi(
        api="gemini.generate_content",
        pattern=re.compile(r":(?P<op>generateContent|streamGenerateContent)$"),
        names={
            "generateContent": "Gemini generateContent",
            "streamGenerateContent": "Gemini streamGenerateContent",
        },
    ),
    UnparsedApi(
        api="gemini.count_tokens",
        pattern=re.compile(r"(?:models/[^/]+|v1internal):(?P<op>countTokens)$"),
        names={"countTokens": "Gemini countTokens"},
    ),
    UnparsedApi(
        api="gemini.embed_content",
        pattern=re.compile(r"models/[^/]+:(?P<op>embedContent|batchEmbedContents)$"),
        names={
            "embedContent": "Gemini embedContent",
            "batchEmbedContents": "Gemini batchEmbedContents",
        },
    ),
    UnparsedApi(
        api="bedrock.converse",
        pattern=re.compile(r"/model/.+/(?P<op>converse|converse-stream)$"),
        names={"converse": "Bedrock Converse", "converse-stream": "Bedrock ConverseStream"},
    ),
    UnparsedApi(
        api="bedrock.invoke",
        pattern=re.compile(r"/model/.+/(?P<op>invoke|invoke-with-response-stream)$"),
        names={
            "invoke": "Bedrock InvokeModel",
            "invoke-with-response-stream": "Bedrock InvokeModelWithResponseStream",
        },
    ),
    UnparsedApi(
        api="bedrock.count_tokens",
        pattern=re.compile(r"/model/.+/(?P<op>count-tokens)$"),
        names={"count-tokens": "Bedrock CountTokens"},
    ),
    UnparsedApi(
        api="openai.realtime",
        pattern=re.compile(r"/realtime(?P<op>)/?$"),
        names={"": "OpenAI Realtime over WebSocket"},
        websocket=True,
    ),
    UnparsedApi(
        api="openai.realtime",
        pattern=re.compile(r"/realtime/(?P<op>calls|client_secrets|sessions)/?$"),
        names={
            "calls": "OpenAI Realtime WebRTC call",
            "client_secrets": "OpenAI Realtime client secret",
            "sessions": "OpenAI Realtime session",
        },
    ),
)


def unparsed_api(exchange: Exchange) -> tuple[str, str] | None:
    """``(api, name)`` of the unparsed family ``exchange``'s request path belongs to, if any.

    Cheap: one split of the URL and a few anchored patterns; the body is not read."""
    req = exchange.request
    if req is None:
        return None
    target = req.target
    path = target.partition("?")[0] if target.startswith("/") else urlsplit(req.url).path
    if "%" not in path and ":" not in path and "/model/" not in path and "/realtime" not in path:
        return None  # the common case: a few looks at the path
    if "%" in path:
        path = unquote(path)  # Bedrock model ids are URL-encoded (anthropic.claude%3A0)
    for family in UNPARSED:
        m = family.pattern.search(path)
        if m is None:
            continue
        if family.websocket and not _websocket_upgrade(exchange):
            continue
        return family.api, family.names[m.group("op")]
    return None


def _websocket_upgrade(exchange: Exchange) -> bool:
    """A WebSocket opening handshake (RFC 6455 §4.1), or an HTTP/2 extended CONNECT
    (RFC 8441)."""
    if exchange.upgrade == "websocket":
        return True
    req = exchange.request
    assert req is not None
    upgrade = _first_values(req.headers, ("upgrade", ":protocol"))
    return any(v.lower() == "websocket" for v in upgrade.values())


def recognize(
    exchange: Exchange,
    call_id: str,
    *,
    registry: Sequence[ApiFamily] | None = None,
    max_body: int = DEFAULT_DECODE_LIMIT,
) -> Call | None:
    """The call ``exchange`` carries, or None when no family claims it."""
    if exchange.request is None:
        return None
    view = ExchangeView(exchange, max_body=max_body)
    best: ApiFamily | None = None
    best_score = 0.0
    for family in registry if registry is not None else families():
        score = family.match(view)
        if score > best_score:
            best, best_score = family, score
    if best is None:
        return None
    call = Call(id=call_id, exchange_id=exchange.id, api=best.api)
    _common(exchange, call)
    best.parse(view, call)
    if exchange.response is None or exchange.response.started is None:
        # Sources without arrival times (cassettes) stamp body pieces 0.0: no token time.
        call.timing.first_token = None
    elif call.stream and view.framing is not None:
        _chunk_timing(view, call.timing)
    call.diagnostics.extend(view.diagnostics)
    return call


def _chunk_timing(view: ExchangeView, timing: Timing) -> None:
    """How the stream's events were spaced on the wire (nearest-rank p95)."""
    times = [e.ts for e in view.events if isinstance(e, TIMED_EVENTS)]
    timing.chunks = len(times)
    if len(times) < 2:
        return
    gaps = sorted(b - a for a, b in itertools.pairwise(times))
    timing.inter_chunk = {
        "median": gaps[(len(gaps) - 1) // 2],
        "p95": gaps[max(math.ceil(0.95 * len(gaps)) - 1, 0)],
        "max": gaps[-1],
    }


def _common(exchange: Exchange, call: Call) -> None:
    req, resp = exchange.request, exchange.response
    call.timing = Timing(
        started=req.started if req else None,
        first_byte=resp.started if resp else None,
        ended=resp.ended if resp else None,
    )
    if resp is not None:
        # One pass over the headers instead of one scan per candidate name.
        found = _first_values(resp.headers, REQUEST_ID_HEADERS)
        for name in REQUEST_ID_HEADERS:
            value = found.get(name)
            if value:
                call.ids["provider_request_id"] = value
                call.id_sources["provider_request_id"] = f"response header {name}"
                break
    if req is not None:
        for app in header_app_ids(req.headers):  # x-session-id, x-run-id...
            if app.name not in call.ids:
                call.ids[app.name] = app.value
                call.id_sources[app.name] = app.location
        found = _first_values(req.headers, TRACE_HEADERS)
        for name in TRACE_HEADERS:
            value = found.get(name)
            if value:
                call.ids[name] = value
                call.id_sources[name] = f"request header {name}"


def _first_values(headers: Headers, names: tuple[str, ...]) -> dict[str, str]:
    """The first value of each of ``names`` (lowercase) among ``headers``, as ``header``
    would find it."""
    found: dict[str, str] = {}
    for k, v in headers:
        lname = k.lower()
        if lname in names and lname not in found:
            found[lname] = v
    return found
