"""The Gemini endpoints around ``generateContent``, and what every Gemini family shares.

Shared: the evidence a response gives (:func:`shape_evidence`) and the reading of a whole
JSON response or its Google error body (:func:`parse_whole`).

Families, recognized by their URL and named, parsed as far as a call has places for:

- ``gemini.count_tokens`` (``:countTokens``, also Code Assist's ``v1internal:countTokens``):
  the request as for generateContent (``contents``, or ``generateContentRequest``), the count
  as usage (``totalTokens`` is the input; ``cachedContentTokenCount`` the cached part);
- ``gemini.embed_content`` (``:embedContent`` operation ``embeddings``,
  ``:batchEmbedContents`` operation ``embeddings.batch``): inputs, vectors and dimensions in
  ``extras["embeddings"]`` (the vectors stay in the exchange's body);
- ``gemini.models``, ``gemini.cached_contents``, ``gemini.files``,
  ``gemini.file_search_stores``: the operation (``models.list``, ``cached_contents.create``,
  ``files.upload``...), the resource id from the path or the response's ``name``, the JSON
  request and response kept under ``extras``.
"""

from __future__ import annotations

from agentshark.apis.gemini.parts import error_of, is_int
from agentshark.apis.gemini.request import parse_request
from agentshark.apis.gemini.response import ResponseMerger, stream_chunks, unwrap
from agentshark.apis.gemini.routes import Route, route_of
from agentshark.apis.model import Call, CallError, Json, Usage
from agentshark.apis.view import ExchangeView, json_failure
from agentshark.errors import Diagnostic

__all__ = [
    "CachedContentsFamily",
    "CountTokensFamily",
    "EmbedContentFamily",
    "FileSearchStoresFamily",
    "FilesFamily",
    "ModelsFamily",
    "parse_whole",
    "shape_evidence",
]

# successful bodies of other APIs (OpenAI "choices"/"object", Anthropic "type")
_FOREIGN = frozenset({"choices", "object", "type", "output"})


def _first_chunk(view: ExchangeView) -> Json:
    for _n, data, _ts, _whole in stream_chunks(view, []):
        return data
    return None


def shape_evidence(view: ExchangeView, keys: tuple[str, ...]) -> float | None:
    """0.3 when the response (its first chunk for a stream) has one of ``keys``, 0.2 for a
    Google error body, 0 when it says nothing, None when it is a successful response of
    another API's shape; 0.1 more when the request has ``contents``."""
    if view.framing in ("sse", "json-array"):
        body = _first_chunk(view)
    else:
        body = view.response_json
        if isinstance(body, list) and len(body) == 1:
            body = body[0]
    score = 0.0
    if isinstance(body, dict):
        inner, _ = unwrap(body)
        if any(k in inner for k in keys):
            score = 0.3
        elif isinstance(inner.get("error"), dict):
            score = 0.2
        elif not _FOREIGN.isdisjoint(inner) and (view.status is None or view.status < 400):
            return None
    req = view.request_json
    if isinstance(req, dict) and (
        "contents" in req or isinstance(req.get("request"), dict) or "requests" in req
    ):
        score += 0.1
    return score


def parse_whole(view: ExchangeView, call: Call, merger: ResponseMerger) -> None:
    """A whole JSON response (or error body) through ``merger`` into ``call``."""
    response = view.exchange.response
    if response is None:
        return
    body = view.response_json
    if isinstance(body, list) and len(body) == 1:
        body = body[0]  # a stream request answered by a one-element array
    status = view.status
    parsed = isinstance(body, dict) and merger.feed(body, source="body", status=status)
    merger.fill(call)
    _http_error(view, call)
    if not parsed and call.error is None and view.response_body:
        _not_recognized(view, call, body)
    call.complete = (parsed or call.error is not None) and view.exchange.complete


def _http_error(view: ExchangeView, call: Call) -> None:
    status = view.status
    if status is None or status < 400:
        return
    if call.error is None:
        text = view.response_body[:300].decode("utf-8", "replace") or None
        call.error = CallError(status=status, type=None, code=None, message=text, source="http")
    elif call.error.status is None:
        call.error.status = status


def _not_recognized(view: ExchangeView, call: Call, body: Json) -> None:
    call.diagnostics.append(
        Diagnostic(
            code="gemini.response_not_recognized",
            location=f"{view.exchange.id} response body",
            message=f"the response body is not the {call.api} response shape"
            + ("" if body is not None else f": it is {json_failure(view.response_body)}"),
        )
    )


def _resource_body(
    view: ExchangeView, call: Call, *, empty_ok: bool = False
) -> dict[str, Json] | None:
    """A whole response: its object (unwrapped), or None after recording its error.
    ``empty_ok``: an empty successful body is a whole answer (a resumable upload's start)."""
    body = view.response_json
    status = view.status
    if empty_ok and not view.response_body.strip() and (status is None or status < 400):
        call.complete = view.exchange.complete  # nothing to say (a resumable upload's start)
        return None
    if isinstance(body, dict):
        body, wrapper = unwrap(body)
        error = error_of(body, status, "body")
        if error is not None:
            call.error = error
            call.complete = view.exchange.complete
            return None
        if wrapper:
            call.extras["response_wrapper"] = wrapper
        if status is None or status < 400:
            call.complete = view.exchange.complete
            return body
    _http_error(view, call)
    if call.error is None and view.response_body:
        _not_recognized(view, call, body)
    call.complete = call.error is not None and view.exchange.complete
    return None


# -- countTokens and embeddings ---------------------------------------------------------------


class CountTokensFamily:
    api: str = "gemini.count_tokens"

    def match(self, view: ExchangeView) -> float:
        if route_of(view).method != "countTokens":
            return -1.0
        evidence = shape_evidence(view, ("totalTokens",))
        return -1.0 if evidence is None else 0.6 + evidence

    def parse(self, view: ExchangeView, call: Call) -> None:
        route = route_of(view)
        call.provider, call.operation = route.provider, "count_tokens"
        parse_request(view, call)
        call.request_model = call.request_model or route.model
        body = _resource_body(view, call)
        if body is None:
            return
        total = body.get("totalTokens")
        cached = body.get("cachedContentTokenCount")
        if is_int(total):
            call.usage = Usage(
                input_tokens=total,
                cached_input_tokens=cached if is_int(cached) else None,
                raw=body,
            )
        else:
            _not_recognized(view, call, body)
            call.complete = False


class EmbedContentFamily:
    api: str = "gemini.embed_content"

    def match(self, view: ExchangeView) -> float:
        if route_of(view).method not in ("embedContent", "batchEmbedContents"):
            return -1.0
        evidence = shape_evidence(view, ("embedding", "embeddings"))
        return -1.0 if evidence is None else 0.6 + evidence

    def parse(self, view: ExchangeView, call: Call) -> None:
        route = route_of(view)
        call.provider = route.provider
        batch = route.method == "batchEmbedContents"
        call.operation = "embeddings.batch" if batch else "embeddings"
        call.request_model = route.model
        req = view.request_json
        summary: dict[str, Json] = {}
        if isinstance(req, dict):
            requests = req.get("requests")
            summary["inputs"] = len(requests) if isinstance(requests, list) else 1
            params = {k: v for k, v in req.items() if k not in ("content", "requests", "model")}
            call.request_params.update(params)
        body = _resource_body(view, call)
        if body is not None:
            vectors = body.get("embeddings") if batch else [body.get("embedding")]
            if isinstance(vectors, list):
                summary["vectors"] = len(vectors)
                first = vectors[0] if vectors else None
                values = first.get("values") if isinstance(first, dict) else None
                if isinstance(values, list):
                    summary["dimensions"] = len(values)
        if summary:
            call.extras["embeddings"] = summary


# -- resources --------------------------------------------------------------------------------


class _ResourceFamily:
    """A REST collection: the operation from method, id and verb; bodies kept in extras."""

    api: str = ""
    resource: str = ""
    prefix: str = ""  # the operation's prefix ("models", "cached_contents"...)
    id_name: str = ""

    def match(self, view: ExchangeView) -> float:
        route = route_of(view)
        if route.resource != self.resource or route.provider is None:
            return -1.0
        evidence = shape_evidence(view, ("name", self.resource))
        return -1.0 if evidence is None else 0.5 + evidence

    def parse(self, view: ExchangeView, call: Call) -> None:
        route = route_of(view)
        call.provider = route.provider
        call.operation = f"{self.prefix}.{_operation(view, route)}"
        if route.item is not None:
            call.ids[self.id_name] = route.item
            call.id_sources[self.id_name] = "request URL path"
        req = view.request_json
        if req is not None:
            call.extras["request"] = req
            model = req.get("model") if isinstance(req, dict) else None
            if isinstance(model, str):
                call.request_model = model.removeprefix("models/")
        body = _resource_body(view, call, empty_ok=True)
        if body is not None:
            name = body.get("name")
            if isinstance(name, str):
                call.response_id = name
            call.extras["response"] = body


def _operation(view: ExchangeView, route: Route) -> str:
    if route.verb is not None:
        return route.verb
    method = view.method.upper()
    if method == "DELETE":
        return "delete"
    if method == "PATCH":
        return "update"
    if method == "POST":
        return "upload" if view.path.startswith("/upload/") else "create"
    return "retrieve" if route.item is not None else "list"


class ModelsFamily(_ResourceFamily):
    api, resource, prefix, id_name = "gemini.models", "models", "models", "model_id"


class CachedContentsFamily(_ResourceFamily):
    api, resource, prefix, id_name = (
        "gemini.cached_contents",
        "cachedContents",
        "cached_contents",
        "cached_content_id",
    )


class FilesFamily(_ResourceFamily):
    api, resource, prefix, id_name = "gemini.files", "files", "files", "file_id"


class FileSearchStoresFamily(_ResourceFamily):
    api, resource, prefix, id_name = (
        "gemini.file_search_stores",
        "fileSearchStores",
        "file_search_stores",
        "file_search_store_id",
    )
