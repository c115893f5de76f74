"""Cohere's other endpoints, recognized and named, parsed shallowly.

From Cohere's API reference (https://docs.cohere.com/reference/embed, ``/rerank``,
``/generate``, ``/tokenize``):

- ``cohere.embed`` (``POST /v1/embed``, ``/v2/embed``): model, input count (``texts``,
  ``images`` or ``inputs``), vector count and dimensions per embedding type
  (``extras["embeddings"]``), usage (``meta.billed_units``), error.
- ``cohere.rerank`` is read with the other rerankers (:mod:`agentshark.apis.retrieval.rerank`).
- ``cohere.generate``, the legacy v1 completion (``/v1/generate``): the prompt as a user
  message, each ``generations[]`` text an output message with its finish reason; an
  NDJSON stream (``text`` pieces, then ``is_finished: true`` with the whole ``response``).
- ``cohere.tokenize`` (``/v1/tokenize``, ``/v1/detokenize``): the token count.

Recognition: the path's last segment and a Cohere body (a ``meta`` with ``api_version`` or
``billed_units``, a ``results``/``generations``/``embeddings`` field), or the path on a
Cohere host: Voyage and others also serve ``/v1/rerank`` and ``/v1/embed`` in their own
shapes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson

from agentshark.apis.cohere.messages import error_of, http_error, usage_of
from agentshark.apis.documents import embedding_evidence
from agentshark.apis.model import Call, Json, Message, TextPart
from agentshark.apis.view import ExchangeView
from agentshark.framing.events import JsonDocument

if TYPE_CHECKING:
    from agentshark.apis.family import ApiFamily


def _endpoint(view: ExchangeView) -> str:
    return view.path.lower().rstrip("/").rpartition("/")[2]


def _cohere_body(body: Json, key: str) -> bool:
    if not isinstance(body, dict) or "object" in body or "data" in body:
        return False
    meta = body.get("meta")
    return key in body or (
        isinstance(meta, dict) and ("api_version" in meta or "billed_units" in meta)
    )


def _host(view: ExchangeView) -> bool:
    return view.host.lower().endswith(("cohere.com", "cohere.ai"))


def _request(view: ExchangeView, call: Call, own: tuple[str, ...]) -> dict[str, Json]:
    request = view.request_json
    if not isinstance(request, dict):
        return {}
    model = request.get("model")
    call.request_model = model if isinstance(model, str) else None
    for key, value in request.items():
        if key not in own and key != "model":
            call.request_params[key] = value
    return request


def _finish(view: ExchangeView, call: Call) -> dict[str, Json]:
    body = view.response_json
    call.provider = "cohere"
    call.error = http_error(view, body)
    call.complete = view.exchange.complete and isinstance(body, dict)
    if not isinstance(body, dict):
        return {}
    response_id = body.get("id")
    call.response_id = response_id if isinstance(response_id, str) and response_id else None
    call.usage = usage_of(body.get("meta"))
    return body


class _Endpoint:
    api = ""
    paths: tuple[str, ...] = ()
    key = ""  # the response field that shows the body is Cohere's

    def match(self, view: ExchangeView) -> float:
        if view.method.upper() != "POST" or _endpoint(view) not in self.paths:
            return 0.0
        shape = self._shape(view)
        if not (shape or _host(view)):
            return 0.0
        return 0.4 + 0.4 * shape + 0.05 * _host(view)

    def _shape(self, view: ExchangeView) -> bool:
        return _cohere_body(view.response_json, self.key)


class Embed(_Endpoint):
    api = "cohere.embed"
    paths = ("embed",)
    key = "embeddings"

    def parse(self, view: ExchangeView, call: Call) -> None:
        call.operation = "embeddings"
        request = _request(view, call, ("texts", "images", "inputs"))
        summary: dict[str, Json] = {}
        for name in ("texts", "images", "inputs"):
            if isinstance(request.get(name), list):
                summary["inputs"] = len(request[name])
        texts = request.get("texts")
        body = _finish(view, call)
        vectors = body.get("embeddings")
        by_type = vectors if isinstance(vectors, dict) else {"float": vectors}
        for kind, rows in by_type.items():
            if isinstance(rows, list):
                first = rows[0] if rows else None
                summary[kind] = {
                    "vectors": len(rows),
                    "dimensions": len(first) if isinstance(first, list) else None,
                }
                if kind == "float":
                    summary.update(embedding_evidence(texts, rows))
        if summary:
            call.extras["embeddings"] = summary


class Tokenize(_Endpoint):
    api = "cohere.tokenize"
    paths = ("tokenize", "detokenize")
    key = "tokens"

    def parse(self, view: ExchangeView, call: Call) -> None:
        call.operation = _endpoint(view)
        _request(view, call, ())
        body = _finish(view, call)
        if isinstance(body.get("tokens"), list):
            call.extras["tokens"] = len(body["tokens"])


class Generate(_Endpoint):
    api = "cohere.generate"
    paths = ("generate",)
    key = "generations"

    def _shape(self, view: ExchangeView) -> bool:
        body = view.response_json
        if body is None:  # a stream: its lines say is_finished
            return b'"is_finished"' in view.response_head(256)
        return _cohere_body(body, self.key)

    def parse(self, view: ExchangeView, call: Call) -> None:
        call.operation = "text_completion"
        request = _request(view, call, ("prompt",))
        call.stream = request.get("stream") is True
        prompt = request.get("prompt")
        if isinstance(prompt, str):
            call.input_messages.append(Message(role="user", parts=[TextPart(content=prompt)]))
        if view.framing == "ndjson":
            call.stream = True
            body = _generate_stream(view, call)
        else:
            body = _finish(view, call)
        generations = body.get("generations")
        for g in generations if isinstance(generations, list) else ():
            if isinstance(g, dict):
                text, finish = g.get("text"), g.get("finish_reason")
                call.output_messages.append(
                    Message(
                        role="assistant",
                        parts=[TextPart(content=text)] if isinstance(text, str) and text else [],
                        finish_reason=finish if isinstance(finish, str) and finish else None,
                    )
                )
        call.finish_reasons = [m.finish_reason for m in call.output_messages if m.finish_reason]


def _generate_stream(view: ExchangeView, call: Call) -> dict[str, Json]:
    """A v1 generate stream: the whole response is in the ``is_finished: true`` line."""
    call.provider = "cohere"
    final: dict[str, Json] = {}
    cut = False
    for n, item in enumerate(e for e in view.events if isinstance(e, JsonDocument)):
        if not item.complete:
            cut = True
            continue
        try:
            line = item.value()
        except orjson.JSONDecodeError:
            continue  # the framing decoder already said ndjson.not_json
        if not isinstance(line, dict):
            continue
        if call.error is None and "text" not in line:
            call.error = error_of(line, None, f"stream event {n}")
        if line.get("is_finished") is True and isinstance(line.get("response"), dict):
            final = line["response"]
    call.usage = usage_of(final.get("meta"))
    response_id = final.get("id")
    call.response_id = response_id if isinstance(response_id, str) else None
    call.complete = view.exchange.complete and not cut and bool(final)
    return final


EMBED = Embed()
TOKENIZE = Tokenize()
GENERATE = Generate()
ENDPOINT_FAMILIES: tuple[ApiFamily, ...] = (EMBED, TOKENIZE, GENERATE)
