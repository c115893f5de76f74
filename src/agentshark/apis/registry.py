"""The registry of API families, and recognition by scored claims.

Every family offers ``match(view) -> float`` (below 0: "not mine"; higher is surer, body shape
and stream event names weigh most, host least) and ``parse(view, call)``, which fills a call
whose common fields (timing, provider request ids, trace context) are already set. The best
claim wins; no claim leaves a plain HTTP exchange. The list below is the whole registry:
adding a family is adding a line (no import-by-name magic).

Families that are recognized but not parsed yet (:data:`UNPARSED`: the Gemini Interactions
API, Bedrock CountTokens, OpenAI Realtime's WebRTC calls and client secrets) are named by
:func:`unparsed_api` from the request's path alone, so a view can say "3 exchanges look like
Bedrock CountTokens (not parsed yet)" instead of nothing; they make no call.

Completeness is decided here last, from the exchange's evidence, whatever the family found:
a call is complete only when its request and its response both arrived whole (their
framing's end seen, no byte lost to a capture gap). Families say what else a whole call
needs (a terminal stream event, a body that parses); they cannot make a cut exchange whole.
(A call the family found settled by a whole message before the response's end may do
without that end; see ``_evidence``.) A call on a cut exchange gets a
``call.evidence_incomplete`` diagnostic naming the cut (when the family had found the call
whole, or whenever the request was cut or response bytes were lost): a request cut
means the request side of the call (input messages, system instructions, tools, model,
parameters) is what the bytes seen hold, so an empty list there is unknown, not "none"; a
response cut likewise for output, usage, finish reasons and ``timing.ended``. The reasons
stay on the call (``Call.cut``) for stages that complete a call later
(:mod:`agentshark.apis.mcp.sessions`).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from agentshark.apis.a2a import calls as a2a
from agentshark.apis.anthropic import messages as anthropic
from agentshark.apis.appids import header_app_ids
from agentshark.apis.bedrock import converse as bedrock_converse
from agentshark.apis.bedrock import invoke as bedrock_invoke
from agentshark.apis.cohere import chat as cohere
from agentshark.apis.family import ApiFamily, OperationFamily
from agentshark.apis.gemini import generate as gemini
from agentshark.apis.gemini import live
from agentshark.apis.graphql import calls as graphql
from agentshark.apis.mcp import calls as mcp
from agentshark.apis.model import Call, Timing
from agentshark.apis.ollama import chat as ollama
from agentshark.apis.openai import chat as openai_chat
from agentshark.apis.openai import realtime
from agentshark.apis.openai import responses as openai_responses
from agentshark.apis.retrieval import (
    memory,
    pgvector,
    rerank,
    search,
    vectors,
    weaviate,
    web,
    writes,
)
from agentshark.apis.view import ExchangeView
from agentshark.apis.xai import chat as xai_chat
from agentshark.errors import Diagnostic
from agentshark.framing.events import EventStreamMessage, GrpcMessage, JsonDocument, SseEvent
from agentshark.http.content import DEFAULT_DECODE_LIMIT
from agentshark.model import Body, Exchange, Headers

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
TIMED_EVENTS = (SseEvent, JsonDocument, EventStreamMessage, GrpcMessage)  # not comments


# The registered families, in tie-break order (first wins a tie).
FAMILIES: tuple[ApiFamily, ...] = (
    *openai_chat.FAMILIES,
    *openai_responses.FAMILIES,
    *anthropic.FAMILIES,
    *gemini.FAMILIES,
    *mcp.FAMILIES,
    *a2a.FAMILIES,
    *bedrock_converse.FAMILIES,
    *bedrock_invoke.FAMILIES,
    *ollama.FAMILIES,
    *cohere.FAMILIES,
    *xai_chat.FAMILIES,
    *graphql.FAMILIES,
    *vectors.FAMILIES,  # retrieval services by role (agentshark.apis.retrieval)
    *writes.FAMILIES,
    *search.FAMILIES,
    *weaviate.FAMILIES,
    *rerank.FAMILIES,
    *web.FAMILIES,
    *memory.FAMILIES,
)


def families() -> Sequence[ApiFamily]:
    """The registered families, in tie-break order (first wins a tie)."""
    return FAMILIES


# The families read from a wire protocol's operations (agentshark.wire), not from HTTP.
OPERATION_FAMILIES: tuple[OperationFamily, ...] = (*pgvector.FAMILIES,)


# The families read from a WebSocket session's messages, not claimed exchange by exchange
# (agentshark.pipeline reads them): OpenAI Realtime, Gemini Live.
SESSION_APIS = (realtime.API, live.API)


def known_apis() -> list[str]:
    """The ``api`` names calls can have (parsed families), then the recognized unparsed ones."""
    named = {n for f in families() for n in (f.api, *getattr(f, "apis", ())) if n}
    named |= {f.api for f in OPERATION_FAMILIES}
    parsed = sorted(named | set(SESSION_APIS))  # ``apis``: the names a family gives by shape
    return parsed + [n for n in dict.fromkeys(u.api for u in UNPARSED) if n not in parsed]


@dataclass(frozen=True, slots=True, kw_only=True)
class UnparsedApi:
    """An API family recognized by its endpoint path, not parsed yet."""

    api: str  # the report's api name it will have (DESIGN.md)
    pattern: re.Pattern[str]  # over the URL-decoded path; group "op" names the operation
    names: dict[str, str]  # operation -> what a user reads ("Gemini generateContent")
    websocket: bool = False  # only a WebSocket upgrade (GET + Upgrade: websocket) counts


# Paths, from the vendors' API references: the Gemini Interactions API
# `/v1beta/interactions` (https://ai.google.dev/api/interactions-api); Bedrock Runtime
# `/model/{modelId}/converse` and friends
# (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_Operations_Amazon_Bedrock_Runtime.html);
# OpenAI Realtime's WebRTC `/v1/realtime/calls` (its events ride a DTLS data channel that a
# capture cannot decrypt) and `/v1/realtime/client_secrets`
# (https://platform.openai.com/docs/api-reference/realtime); a WebSocket to `/v1/realtime` is
# parsed (agentshark.apis.openai.realtime).
UNPARSED: tuple[UnparsedApi, ...] = (
    UnparsedApi(
        api="gemini.interactions",
        pattern=re.compile(r"/v1(?:alpha|beta)/(?P<op>interactions)(?:/[^/]+)?$"),
        names={"interactions": "Gemini Interactions API"},
    ),
    UnparsedApi(
        api="bedrock.count_tokens",
        pattern=re.compile(r"/model/.+/(?P<op>count-tokens)$"),
        names={"count-tokens": "Bedrock CountTokens"},
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


# Families no capture can parse, by name: why, said instead of "not parsed yet".
UNREADABLE: dict[str, str] = {
    "OpenAI Realtime WebRTC call": "the SDP offer and answer of a Realtime call over WebRTC: "
    "its events ride a WebRTC data channel (DTLS, SCTP) that the capture cannot decrypt",
}


def unparsed_api(exchange: Exchange) -> tuple[str, str] | None:
    """``(api, name)`` of the unparsed family ``exchange``'s request path belongs to, if any.

    Cheap: one split of the URL and a few anchored patterns; the body is not read."""
    req = exchange.request
    if req is None:
        return None
    target = req.target
    path = target.partition("?")[0] if target.startswith("/") else urlsplit(req.url).path
    if (
        "%" not in path
        and ":" not in path
        and "/model/" not in path
        and "/realtime" not in path
        and "/interactions" not in path
    ):
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
    _evidence(exchange, call)
    if exchange.response is None or exchange.response.started is None:
        # Sources without arrival times (cassettes) stamp body pieces 0.0: no token time.
        call.timing.first_token = None
    elif call.stream and view.framing is not None:
        _chunk_timing(view, call.timing)
    call.diagnostics.extend(view.diagnostics)
    return call


def recognize_operation(exchange: Exchange, next_id: Callable[[], str]) -> Call | None:
    """The call a wire protocol's operation carries (a pgvector search over PostgreSQL), or
    None; ``next_id`` is called only for a call made, so an operation no family claims takes
    no call id."""
    op = exchange.operation
    if op is None:
        return None
    best: OperationFamily | None = None
    best_score = 0.0
    for family in OPERATION_FAMILIES:
        score = family.match(op)
        if score > best_score:
            best, best_score = family, score
    if best is None:
        return None
    call = Call(id=next_id(), exchange_id=exchange.id, api=best.api)
    _common(exchange, call)
    best.parse(op, call)
    _evidence(exchange, call)
    call.timing.first_token = None
    return call


def evidence_cuts(exchange: Exchange) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Why ``exchange`` is not whole evidence of a call, as (hard, soft) reasons: hard ones
    (a request cut, response bytes lost to a gap) nothing later can mend; soft ones (no
    response, a response that did not end) a call settled without them can do without."""
    req, resp = exchange.request, exchange.response
    hard, soft = [], []
    if req is None:
        hard.append("no request was captured")
    elif not req.complete:
        hard.append("the request did not arrive whole" + _lost(req.body))
    if resp is None:
        soft.append("no response was captured")
    elif resp.body.gap_bytes:
        hard.append("the response did not arrive whole" + _lost(resp.body))
    elif not resp.complete:
        soft.append("the response did not arrive whole")
    return tuple(hard), tuple(soft)


def _lost(body: Body) -> str:
    return f" ({body.gap_bytes} body bytes lost to capture gaps)" if body.gap_bytes else ""


def _evidence(exchange: Exchange, call: Call) -> None:
    """Completeness from the evidence: a cut exchange never makes a complete call.

    One exception: a call the family found ``settled`` before the response's end (MCP: the
    JSON-RPC response in a whole SSE event, or a notification, which is due no answer) does
    without the rest of the response. When the rest did not arrive (the client hung up
    after its answer, as MCP clients do, or the capture ended) the call is still whole,
    unless its request was cut or a capture gap cut the response body: bytes lost there may
    have been that message, or one that would have settled the call first. A settled call
    ended when its answer arrived (``settled_at``), whether the HTTP message ended later or
    never. The hard reasons stay in ``Call.cut`` for stages that settle a call later.
    """
    resp = exchange.response
    if call.settled_at is not None and resp is not None and resp.started is not None:
        call.timing.ended = call.settled_at
    if exchange.complete:
        return
    hard, soft = evidence_cuts(exchange)
    call.cut = hard
    if not hard and call.settled:
        return
    reasons = (*hard, *soft)
    if call.complete or hard:
        call.diagnostics.append(cut_diagnostic(call.exchange_id, reasons))
    call.complete = False


def cut_diagnostic(exchange_id: str, reasons: tuple[str, ...]) -> Diagnostic:
    """The ``call.evidence_incomplete`` diagnostic of a call whose exchange is cut."""
    unknown = []
    if any("request" in c for c in reasons):
        unknown.append("input messages, system instructions, tools, model and parameters")
    if any("response" in c for c in reasons):
        unknown.append("output, usage, finish reasons and end time")
    return Diagnostic(
        code="call.evidence_incomplete",
        message=f"the call is incomplete: {'; '.join(reasons)}; its "
        f"{' and its '.join(unknown)} are what was seen, not the whole "
        "(an empty value there is unknown, not none)",
        location=exchange_id,
    )


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
