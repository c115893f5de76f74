"""The URL side of the Anthropic API, and the endpoints around Messages.

What every Anthropic family shares: the route a URL names (direct, Vertex AI
``…/publishers/anthropic/models/<m>:rawPredict|streamRawPredict``, Bedrock
``/model/<id>/invoke[-with-response-stream]``, gateways and Anthropic-compatible hosts), the
evidence a response gives (``response_evidence``), the claim a score makes (``claim``) and the
reading of a whole JSON response or its error (``parse_body``).

And the families of the endpoints around Messages, recognized and named, parsed shallowly:
``anthropic.count_tokens`` (``/v1/messages/count_tokens``: the request as for Messages, the
count as usage), ``anthropic.models``, ``anthropic.message_batches``, ``anthropic.files``
(operation and resource id; the JSON response kept under ``extras["response"]``), and
``anthropic.completions``, the legacy Text Completions API (``prompt`` in, ``completion``
out, whole or streamed; also on Bedrock).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import unquote

from agentshark.apis.anthropic.blocks import error_of, parse_request, usage_of
from agentshark.apis.anthropic.stream import stream_events
from agentshark.apis.model import Call, CallError, Json, Message, TextPart
from agentshark.apis.view import ExchangeView, json_failure
from agentshark.errors import Diagnostic
from agentshark.model import header

__all__ = [
    "BatchesFamily",
    "BodyParser",
    "CompletionsFamily",
    "CountTokensFamily",
    "FilesFamily",
    "ModelsFamily",
    "Route",
    "claim",
    "identity",
    "is_message",
    "parse_body",
    "response_evidence",
    "route_of",
    "version_header",
]

# what a whole-body parser makes of a JSON response: True when it had the expected shape
BodyParser = Callable[[dict[str, Json], Call], bool]

# -- routes: what the URL says ----------------------------------------------------------------

_VERTEX = re.compile(r"/publishers/anthropic/models/([^/:]+):(rawPredict|streamRawPredict)$")
_BEDROCK = re.compile(r"/model/([^/]+)/(invoke|invoke-with-response-stream)$")
_DIRECT = re.compile(
    r"/(?:v1/)?(?P<ep>messages/count_tokens|messages/batches|messages|models|files|complete)"
    r"(?:/(?P<id>[^/]+))?(?:/(?P<sub>results|cancel|content))?$"
)
_HOSTS = {  # hosts serving the Anthropic wire format, by provider
    "api.anthropic.com": "anthropic",
    "api.deepseek.com": "deepseek",
    "api.moonshot.ai": "moonshot",
    "api.moonshot.cn": "moonshot",
    "open.bigmodel.cn": "zhipu",
    "api.z.ai": "zhipu",
    "api.minimax.io": "minimax",
    "api.minimaxi.com": "minimax",
}


@dataclass(frozen=True, slots=True)
class Route:
    endpoint: str | None  # "messages", "messages/count_tokens", ..., "invoke", or None
    provider: str | None
    model: str | None = None  # from the URL (Vertex, Bedrock)
    stream: bool = False  # the URL asks for a stream
    item: str | None = None  # a batch, file or model id in the path
    sub: str | None = None  # "results", "cancel", "content"


def route_of(view: ExchangeView) -> Route:
    """What the URL says: the endpoint, the provider, a model or resource id in the path."""
    return _route(view.path, view.host.lower())


@functools.lru_cache(maxsize=1024)
def _route(path: str, host: str) -> Route:
    if m := _VERTEX.search(path):
        model = unquote(m.group(1))
        endpoint = "messages/count_tokens" if model == "count-tokens" else "messages"
        return Route(
            endpoint,
            "vertex.anthropic",
            None if model == "count-tokens" else model,
            m.group(2) == "streamRawPredict",
        )
    if m := _BEDROCK.search(path):
        return Route(
            "invoke",
            "bedrock.anthropic",
            unquote(m.group(1)),
            m.group(2) == "invoke-with-response-stream",
        )
    provider = _HOSTS.get(host)
    if provider is None and (host.endswith(".anthropic.com") or "/anthropic/" in path.lower()):
        provider = "anthropic"
    if m := _DIRECT.search(path):
        item = unquote(m.group("id")) if m.group("id") else None
        return Route(m.group("ep"), provider, item=item, sub=m.group("sub"))
    return Route(None, provider)


# -- evidence -------------------------------------------------------------------------------

# the events a stream of each shape starts with
_SHAPE_EVENTS = {
    "message": frozenset({"message_start", "content_block_start", "content_block_delta", "ping"}),
    "completion": frozenset({"completion", "ping"}),
}


def _first_event(view: ExchangeView) -> dict[str, Json] | None:
    """The first decoded stream event (SSE or Bedrock event stream), or None."""
    for n, data, _ts, _whole in stream_events(view, [], "", limit=1):
        return data if n == 0 else None
    return None


def response_evidence(view: ExchangeView, shape: str) -> float | None:
    """3 when the response has ``shape`` (a ``message`` or ``completion`` body, or a stream of
    its events), 1 for an Anthropic error, 0 when it says nothing (no response, an error body
    in another shape), None when it is someone else's (a successful body or a stream of
    another shape: OpenAI, Gemini, Cohere...)."""
    if view.framing in ("sse", "aws-eventstream"):
        first = _first_event(view)
        kind = first.get("type") if first is not None else None
        if kind in _SHAPE_EVENTS[shape]:
            return 3.0
        if kind == "error" and first is not None and isinstance(first.get("error"), dict):
            return 1.0
        return None if first is not None else 0.0
    body = view.response_json
    kind = body.get("type") if isinstance(body, dict) else None
    if kind == shape or (kind is None and shape == "message" and is_message(body)):
        return 3.0
    if kind == "error" and isinstance(body, dict) and isinstance(body.get("error"), dict):
        return 1.0
    failed = view.status is not None and view.status >= 400
    return None if body is not None and not failed else 0.0


def version_header(view: ExchangeView) -> float:
    return 1.0 if view.anthropic_version else 0.0


def claim(score: float) -> float:
    """A claim needs at least one real piece of evidence; scores land in (0, 1]."""
    return min(score, 10.0) / 10.0 if score >= 1.0 else 0.0


def is_message(body: Json) -> bool:
    """A Messages response, also when abridged without its ``type`` (as in docs)."""
    return (
        isinstance(body, dict)
        and body.get("type", "message") == "message"
        and isinstance(body.get("content"), list)
        and "stop_reason" in body
    )


def parse_generation(
    view: ExchangeView,
    call: Call,
    operation: str,
    parse_stream: Callable[[ExchangeView, Call], None],
    parse_whole: BodyParser,
) -> None:
    """A generating call (messages, legacy completions): route facts, the request, then the
    streamed or whole response."""
    route = route_of(view)
    call.provider, call.operation = route.provider, operation
    parse_request(view, call)
    if call.request_model is None:
        call.request_model = route.model
    call.stream = call.stream or route.stream
    if view.framing in ("sse", "aws-eventstream"):
        parse_stream(view, call)
    else:
        parse_body(view, call, parse_whole)


def parse_body(view: ExchangeView, call: Call, parse: BodyParser) -> None:
    """A whole JSON response: what ``parse`` makes of it, or the error it carries."""
    response = view.exchange.response
    if response is None:
        return
    body = view.response_json
    status = view.status
    parsed = False
    if isinstance(body, dict) and (status is None or status < 400) and body.get("type") != "error":
        parsed = parse(body, call)
    if not parsed:
        kind = header(response.headers, "x-amzn-errortype")
        error = error_of(body, status, "body", type_hint=kind.split(":")[0] if kind else None)
        if error is None and status is not None and status >= 400:
            text = view.response_body[:300].decode("utf-8", "replace") or None
            error = CallError(status=status, type=None, code=None, message=text, source="http")
        call.error = error
        parsed = error is not None  # an error, whole, is the call's outcome
        if isinstance(body, dict) and isinstance(body.get("request_id"), str):
            _request_id(call, body["request_id"], "response body $.request_id")
    if not parsed and view.response_body:
        call.diagnostics.append(
            Diagnostic(
                code="anthropic.response_not_recognized",
                location=f"{view.exchange.id} response body",
                message=f"the response body is not the {call.api} response shape"
                + ("" if body is not None else f": it is {json_failure(view.response_body)}"),
            )
        )
    call.complete = parsed and view.exchange.complete


def identity(call: Call, response_id: Json, model: Json) -> None:
    if isinstance(response_id, str):
        call.response_id = response_id
    if isinstance(model, str):
        call.response_model = model


def _request_id(call: Call, value: str, source: str) -> None:
    if "provider_request_id" not in call.ids:
        call.ids["provider_request_id"] = value
        call.id_sources["provider_request_id"] = source


# -- the families -----------------------------------------------------------------------------


class CountTokensFamily:
    api: str = "anthropic.count_tokens"

    def match(self, view: ExchangeView) -> float:
        if route_of(view).endpoint != "messages/count_tokens":
            return -1.0
        body = view.response_json
        shape = 1.0 if isinstance(body, dict) and "input_tokens" in body else 0.0
        return claim(3.0 + shape + version_header(view))

    def parse(self, view: ExchangeView, call: Call) -> None:
        call.provider, call.operation = route_of(view).provider, "count_tokens"
        parse_request(view, call)
        parse_body(view, call, _count_body)


class _ResourceFamily:
    """Endpoints recognized and named, not parsed deeply: the operation, the resource id,
    and the JSON response kept under ``extras["response"]``."""

    api: str = ""
    endpoint: str = ""
    shape: str = ""  # the response objects' "type"
    id_name: str = ""

    def match(self, view: ExchangeView) -> float:
        route = route_of(view)
        if route.endpoint != self.endpoint:
            return -1.0
        body = view.response_json
        items = body.get("data") if isinstance(body, dict) else None
        first = items[0] if isinstance(items, list) and items else body
        kind = first.get("type") if isinstance(first, dict) else None
        if isinstance(first, dict) and "object" in first:  # OpenAI's /v1/models, /v1/files
            return -1.0
        score = 2.0 if kind is not None and str(kind).startswith(self.shape) else 0.0
        score += 1.0 if route.provider is not None else 0.0
        return claim(score + 2.0 * version_header(view))

    def parse(self, view: ExchangeView, call: Call) -> None:
        route = route_of(view)
        call.provider = route.provider
        call.operation = f"{self.api.removeprefix('anthropic.')}.{_operation(view, route)}"
        if route.item is not None:
            call.ids[self.id_name] = route.item
            call.id_sources[self.id_name] = "request URL path"
        req = view.request_json
        if req is not None:
            call.extras["request"] = req
        failed = view.status is not None and view.status >= 400
        if route.sub in ("results", "content") and not failed:  # JSONL results, file bytes
            call.complete = view.exchange.complete
        else:
            parse_body(view, call, self._body)

    def _body(self, body: dict[str, Json], call: Call) -> bool:
        item = body.get("id")
        if isinstance(item, str):
            call.response_id = item
        call.extras["response"] = body
        return True


def _operation(view: ExchangeView, route: Route) -> str:
    if route.sub is not None:
        return {"content": "download"}.get(route.sub, route.sub)
    method = view.method.upper()
    if method == "DELETE":
        return "delete"
    if route.item is not None:
        return "retrieve"
    return "create" if method == "POST" else "list"


class ModelsFamily(_ResourceFamily):
    api, endpoint, shape, id_name = "anthropic.models", "models", "model", "model_id"


class BatchesFamily(_ResourceFamily):
    api, endpoint, shape, id_name = (
        "anthropic.message_batches",
        "messages/batches",
        "message_batch",
        "batch_id",
    )


class FilesFamily(_ResourceFamily):
    api, endpoint, shape, id_name = "anthropic.files", "files", "file", "file_id"


class CompletionsFamily:
    """The legacy Text Completions API: ``prompt`` in, ``completion`` out."""

    api: str = "anthropic.completions"

    def match(self, view: ExchangeView) -> float:
        route = route_of(view)
        req = view.request_json
        legacy = isinstance(req, dict) and "prompt" in req and "max_tokens_to_sample" in req
        if route.endpoint != "complete" and not (route.endpoint == "invoke" and legacy):
            return -1.0
        response = response_evidence(view, "completion")
        if response is None:
            return -1.0
        path = 1.0 if route.provider is not None else 0.0
        return claim(response + path + (2.0 if legacy else 0.0) + version_header(view))

    def parse(self, view: ExchangeView, call: Call) -> None:
        parse_generation(view, call, "text_completion", _parse_completion_stream, _completion_body)


def _count_body(body: dict[str, Json], call: Call) -> bool:
    if "input_tokens" not in body:
        return False
    call.usage = usage_of(body)
    return True


def _completion_body(body: dict[str, Json], call: Call) -> bool:
    text = body.get("completion")
    if not isinstance(text, str):
        return False
    stop = body.get("stop_reason")
    stop = stop if isinstance(stop, str) else None
    call.output_messages = [
        Message(role="assistant", parts=[TextPart(content=text)], finish_reason=stop)
    ]
    call.finish_reasons = [stop] if stop is not None else []
    identity(call, body.get("id"), body.get("model"))
    extras = {
        k: v
        for k, v in body.items()
        if k not in ("type", "id", "completion", "stop_reason", "model") and v is not None
    }
    if extras:
        call.extras["response"] = extras
    return True


def _parse_completion_stream(view: ExchangeView, call: Call) -> None:
    """Legacy completion events: each carries the next piece of ``completion``; the one with a
    ``stop_reason`` ends the stream."""
    location = f"{view.exchange.id} response"
    call.stream = True
    chunks: list[str] = []
    stop: str | None = None
    ended = False
    for n, data, ts, whole in stream_events(view, call.diagnostics, location):
        if data["type"] == "error":
            error = error_of(data, None, f"stream event {n}")
            call.error = error
            ended = ended or whole
        elif isinstance(text := data.get("completion"), str):
            chunks.append(text)
            call.timing.first_token = call.timing.first_token or ts
            identity(call, data.get("id") or data.get("log_id"), data.get("model"))
            reason = data.get("stop_reason")
            if isinstance(reason, str):
                stop, ended = reason, ended or whole
    if chunks or stop is not None:
        call.output_messages = [
            Message(role="assistant", parts=[TextPart(content="".join(chunks))], finish_reason=stop)
        ]
    call.finish_reasons = [stop] if stop is not None else []
    call.complete = ended and view.exchange.complete
