"""Gemini ``generateContent`` / ``streamGenerateContent`` as calls, and the families around it.

Families (one literal list, :data:`FAMILIES`):

- ``gemini.generate_content`` (operation ``chat``): ``:generateContent`` whole,
  ``:streamGenerateContent`` with ``alt=sse`` (each ``data:`` a whole
  ``GenerateContentResponse``, no ``[DONE]``) or without it (one JSON array whose elements
  arrive one by one: the framing's ``json-array`` decoder gives each as a JSON document, and
  an array the body cut short is a ``jsonarray.truncated`` diagnostic and an incomplete
  call), on AI Studio (provider ``gemini``), Vertex AI (``vertex.gemini``) and Code Assist
  (``code_assist.gemini``, its ``{"response": …}`` wrapper taken off every chunk);
- ``gemini.count_tokens``, ``gemini.embed_content``, ``gemini.models``,
  ``gemini.cached_contents``, ``gemini.files``, ``gemini.file_search_stores``: in
  :mod:`~agentshark.apis.gemini.endpoints`.

Recognition is by the URL (a ``models/{m}:generateContent`` path is Google's alone), helped
by the body's shape (``contents`` in, ``candidates`` / ``promptFeedback`` / Google's error
out); a successful response of another shape (``choices``, ``type: message``) is refused.
The URL's model is the request model when the body has none (it has none but in Code
Assist). Request bodies are read by :mod:`~agentshark.apis.gemini.request`, responses by
:mod:`~agentshark.apis.gemini.response`.
"""

from __future__ import annotations

from agentshark.apis.family import ApiFamily
from agentshark.apis.gemini.endpoints import (
    CachedContentsFamily,
    CountTokensFamily,
    EmbedContentFamily,
    FileSearchStoresFamily,
    FilesFamily,
    ModelsFamily,
    parse_whole,
    shape_evidence,
)
from agentshark.apis.gemini.request import parse_request
from agentshark.apis.gemini.response import ResponseMerger, stream_chunks
from agentshark.apis.gemini.routes import route_of
from agentshark.apis.model import Call, CallError, Json
from agentshark.apis.view import ExchangeView
from agentshark.errors import Diagnostic

__all__ = ["FAMILIES", "GenerateContentFamily"]

_GENERATE = frozenset({"generateContent", "streamGenerateContent"})


class GenerateContentFamily:
    api: str = "gemini.generate_content"

    def match(self, view: ExchangeView) -> float:
        route = route_of(view)
        if route.method not in _GENERATE:
            return -1.0
        evidence = shape_evidence(view, ("candidates", "promptFeedback", "usageMetadata"))
        if evidence is None:
            return -1.0
        return min(0.6 + evidence, 1.0)

    def parse(self, view: ExchangeView, call: Call) -> None:
        route = route_of(view)
        call.provider, call.operation = route.provider, "chat"
        parse_request(view, call)
        if call.request_model is None:
            call.request_model = route.model
        call.stream = route.method == "streamGenerateContent"
        if route.numeric_enums:
            call.request_params.setdefault("enum_encoding", "int")
        merger = ResponseMerger(vertex=route.vertex, location=f"{view.exchange.id} response")
        if view.framing in ("sse", "json-array"):
            _parse_stream(view, call, merger)
        else:
            parse_whole(view, call, merger)


def _parse_stream(view: ExchangeView, call: Call, merger: ResponseMerger) -> None:
    call.stream = True
    closed = True  # a JSON array reached its "]" (SSE has no end marker)
    last_whole = True
    for n, data, ts, whole in stream_chunks(view, call.diagnostics):
        if data is None:
            closed = False
            continue
        if not merger.feed(data, source=f"stream event {n}"):
            call.diagnostics.append(
                Diagnostic(
                    code="gemini.stream.unknown_chunk",
                    severity="info",
                    location=f"{view.exchange.id} response stream event {n}",
                    message="a stream element that is neither a GenerateContentResponse "
                    "nor an error: kept under extras.response.unknown_chunks",
                )
            )
            call.extras.setdefault("response", {}).setdefault("unknown_chunks", []).append(data)
            continue
        if call.timing.first_token is None and merger.chunks and _has_content(data):
            call.timing.first_token = ts
        last_whole = whole
    unknown = call.extras.pop("response", None)
    merger.fill(call)
    if unknown is not None:
        call.extras.setdefault("response", {}).update(unknown)
    if call.error is None and view.status is not None and view.status >= 400:
        call.error = CallError(
            status=view.status, type=None, code=None, message=None, source="http"
        )
    elif call.error is not None and call.error.status is None:
        call.error.status = view.status if view.status is not None and view.status >= 400 else None
    call.complete = merger.finished and closed and last_whole and view.exchange.complete


def _has_content(data: dict[str, Json]) -> bool:
    candidates = (data.get("response") if "response" in data else data) or {}
    cands = candidates.get("candidates") if isinstance(candidates, dict) else None
    return isinstance(cands, list) and any(
        isinstance(c, dict) and isinstance(c.get("content"), dict) and c["content"].get("parts")
        for c in cands
    )


# the whole registry of Gemini families
FAMILIES: tuple[ApiFamily, ...] = (
    GenerateContentFamily(),
    CountTokensFamily(),
    EmbedContentFamily(),
    ModelsFamily(),
    CachedContentsFamily(),
    FilesFamily(),
    FileSearchStoresFamily(),
)
