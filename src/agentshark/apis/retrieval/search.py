"""Elasticsearch and OpenSearch ``_search`` with a k-nearest-neighbour query -> ``retrieval``.

Elasticsearch (https://www.elastic.co/docs/api/doc/elasticsearch/operation/operation-search):
a top-level ``knn`` (one object or a list: ``field``, ``query_vector``, ``k``,
``num_candidates``, ``filter``), or a ``retriever`` with ``knn``. OpenSearch
(https://docs.opensearch.org/latest/query-dsl/specialized/k-nn/): ``query.knn.{field}`` with
``vector`` and ``k``. The response: ``hits.hits[]`` with ``_index``, ``_id``, ``_score``,
``_source``, next to ``took`` and ``_shards``. A ``_search`` without a k-NN query is a plain
search, not recognized here. The index is the path's segment before ``_search``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentshark.apis.documents import document, http_error, int_or_none, query, record
from agentshark.apis.model import Call, GenericPart, Json
from agentshark.apis.view import ExchangeView

if TYPE_CHECKING:
    from agentshark.apis.family import ApiFamily


def _knn(req: Json) -> list[dict[str, Json]]:
    """The k-NN clauses of a search request, as ``{field, vector, k, filter}``."""
    if not isinstance(req, dict):
        return []
    out: list[dict[str, Json]] = []
    knn = req.get("knn")
    retriever = req.get("retriever")
    if knn is None and isinstance(retriever, dict):
        knn = retriever.get("knn")
    out.extend(
        {
            "field": clause.get("field"),
            "vector": clause.get("query_vector"),
            "k": clause.get("k"),
            "filter": clause.get("filter"),
        }
        for clause in (knn if isinstance(knn, list) else [knn])
        if isinstance(clause, dict)
        and ("query_vector" in clause or "query_vector_builder" in clause)
    )
    q = req.get("query")
    os_knn = q.get("knn") if isinstance(q, dict) else None
    if isinstance(os_knn, dict):
        for field, clause in os_knn.items():
            if isinstance(clause, dict) and "vector" in clause:
                out.append(
                    {
                        "field": field,
                        "vector": clause.get("vector"),
                        "k": clause.get("k"),
                        "filter": clause.get("filter"),
                    }
                )
    return out


class KnnSearch:
    api = "elasticsearch.search"
    apis = ("opensearch.search",)  # the name a server that is OpenSearch gets

    def match(self, view: ExchangeView) -> float:
        if view.method.upper() not in ("POST", "GET") or not _knn(view.request_json):
            return 0.0
        body = view.response_json
        hits = body.get("hits") if isinstance(body, dict) else None
        answered = isinstance(hits, dict) and ("_shards" in body or "took" in body)  # type: ignore[operator]
        on_path = "/_search" in view.path
        if not (answered or on_path):
            return 0.0
        return 0.5 + 0.35 * answered + 0.1 * on_path

    def parse(self, view: ExchangeView, call: Call) -> None:
        req = view.request_json
        clauses = _knn(req)
        segments = view.path.strip("/").split("/")
        index = segments[segments.index("_search") - 1] if "_search" in segments[1:] else None
        first = clauses[0] if clauses else {}
        size = req.get("size") if isinstance(req, dict) else None
        info: dict[str, Json] = {
            "data_source": index,
            "queries": [
                {**query(vector=c["vector"]), **({"field": c["field"]} if c["field"] else {})}
                for c in clauses
            ],
            "top_k": int_or_none(first.get("k")) or int_or_none(size),
            "filter": first.get("filter"),
        }
        body = view.response_json
        call.error = http_error(view, body)
        results = None
        hits = body.get("hits") if isinstance(body, dict) else None
        if call.error is None and isinstance(hits, dict) and isinstance(hits.get("hits"), list):
            results = [_hits(hits["hits"])]
        product = _product(view)
        call.api = f"{product}.search"
        record(
            call,
            role="vector_store",
            service=product,
            operation="retrieval",
            info=info,
            results=results,
        )


def _hits(hits: list[Json]) -> list[GenericPart]:
    out = []
    for n, hit in enumerate(h for h in hits if isinstance(h, dict)):
        source = hit.get("_source")
        content = None
        if isinstance(source, dict):
            content = next((source[k] for k in ("text", "content", "body") if k in source), None)
        out.append(
            document(
                n + 1,
                id=hit.get("_id"),
                score=hit.get("_score"),
                score_kind="similarity",
                content=content,
                index=hit.get("_index"),
                metadata=source,
            )
        )
    return out


def _product(view: ExchangeView) -> str:
    """``elasticsearch`` unless the server says OpenSearch (its ``_search`` responses carry no
    ``X-Elastic-Product`` header, and an OpenSearch k-NN query is ``query.knn``)."""
    resp = view.exchange.response
    if resp is not None and any(k.lower() == "x-elastic-product" for k, _ in resp.headers):
        return "elasticsearch"
    req = view.request_json
    q = req.get("query") if isinstance(req, dict) else None
    return (
        "opensearch" if isinstance(q, dict) and isinstance(q.get("knn"), dict) else "elasticsearch"
    )


KNN_SEARCH = KnnSearch()
FAMILIES: tuple[ApiFamily, ...] = (KNN_SEARCH,)
