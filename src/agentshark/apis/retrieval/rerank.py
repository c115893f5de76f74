"""Rerankers -> ``rerank`` calls (role ``reranker``): Cohere, Jina, Voyage.

The three share one request shape: ``POST .../rerank`` with a ``query`` and ``documents``
(strings, or objects with ``text``), ``top_n`` (Cohere https://docs.cohere.com/reference/rerank,
Jina https://jina.ai/reranker) or ``top_k`` (Voyage https://docs.voyageai.com/reference/reranker-api),
and ``model``. The response tells the vendor:

- Cohere: ``results: [{index, relevance_score, document?}]`` with ``id`` and ``meta``
  (``billed_units``) -> ``cohere.rerank``;
- Voyage: ``object: "list"``, ``data: [{index, relevance_score, document?}]``, ``usage`` ->
  ``voyage.rerank``;
- Jina: ``results`` with ``usage`` and no ``meta`` -> ``jina.rerank``.

A result's content is the document it returns, else the request's document at its
``index``. ``extras["rerank"]`` keeps the query, the number of documents sent and the ranked
``[index, relevance_score]`` pairs, as sent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentshark.apis.documents import document, http_error, int_or_none, query, record
from agentshark.apis.model import Call, GenericPart, Json, Usage
from agentshark.apis.view import ExchangeView

if TYPE_CHECKING:
    from agentshark.apis.family import ApiFamily


def _vendor(body: Json, host: str) -> str | None:
    if isinstance(body, dict):
        if body.get("object") == "list" and isinstance(body.get("data"), list):
            return "voyage"
        if isinstance(body.get("results"), list):
            if "meta" in body or "id" in body:
                return "cohere"
            return "jina" if "usage" in body else None
    if host.endswith(("cohere.com", "cohere.ai")):
        return "cohere"
    return None


def _request_shape(req: Json) -> bool:
    return (
        isinstance(req, dict)
        and isinstance(req.get("query"), str)
        and isinstance(req.get("documents"), list)
    )


class Rerank:
    api = "rerank"
    apis = ("cohere.rerank", "jina.rerank", "voyage.rerank")  # by the response's shape

    def match(self, view: ExchangeView) -> float:
        if view.method.upper() != "POST" or not _request_shape(view.request_json):
            return 0.0
        on_path = view.path.rstrip("/").endswith("/rerank")
        vendor = _vendor(view.response_json, view.host.lower())
        if vendor is None and not on_path:
            return 0.0
        return 0.5 + 0.35 * (vendor is not None) + 0.1 * on_path

    def parse(self, view: ExchangeView, call: Call) -> None:
        req = view.request_json
        assert isinstance(req, dict)  # match said so
        body = view.response_json
        vendor = _vendor(body, view.host.lower())
        call.api = f"{vendor}.rerank" if vendor else "rerank"
        model = req.get("model")
        call.request_model = model if isinstance(model, str) else None
        sent = req["documents"]
        top = req.get("top_n", req.get("top_k"))
        summary: dict[str, Json] = {"query": req["query"], "documents": len(sent)}
        for key, value in req.items():
            if key not in ("query", "documents", "model"):
                call.request_params[key] = value
        call.error = http_error(view, body)
        results = None
        rows = (
            body.get("data" if vendor == "voyage" else "results")
            if isinstance(body, dict)
            else None
        )
        if call.error is None and isinstance(rows, list):
            ranked = [r for r in rows if isinstance(r, dict)]
            summary["results"] = [[r.get("index"), r.get("relevance_score")] for r in ranked]
            results = [[_ranked(n, r, sent) for n, r in enumerate(ranked)]]
            _usage(body, call)  # type: ignore[arg-type]
        call.extras["rerank"] = summary
        info: dict[str, Json] = {"queries": [query(req["query"])], "top_k": int_or_none(top)}
        record(
            call,
            role="reranker",
            service=vendor or "rerank",
            operation="rerank",
            info=info,
            results=results,
        )
        if vendor is None:
            call.provider = None  # the shape named no vendor: none is invented


def _ranked(n: int, row: dict[str, Json], sent: list[Json]) -> GenericPart:
    index = row.get("index")
    doc = row.get("document")
    content: Json = doc.get("text") if isinstance(doc, dict) else doc
    if content is None and isinstance(index, int) and 0 <= index < len(sent):
        given = sent[index]
        content = given.get("text") if isinstance(given, dict) else given
    return document(
        n + 1,
        id=index,
        score=row.get("relevance_score"),
        score_kind="relevance",
        content=content,
    )


def _usage(body: dict[str, Json], call: Call) -> None:
    response_id = body.get("id")
    call.response_id = response_id if isinstance(response_id, str) else None
    model = body.get("model")
    call.response_model = model if isinstance(model, str) else None
    usage = body.get("usage")
    meta = body.get("meta")
    if isinstance(usage, dict):
        total = int_or_none(usage.get("total_tokens"))
        call.usage = Usage(input_tokens=total, total_tokens=total, raw=usage)
    elif isinstance(meta, dict):  # Cohere: search units billed, no tokens
        call.usage = Usage(raw=meta)


RERANK = Rerank()
FAMILIES: tuple[ApiFamily, ...] = (RERANK,)
