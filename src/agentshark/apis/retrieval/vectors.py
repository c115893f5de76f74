"""Vector stores' query endpoints -> ``retrieval`` calls (role ``vector_store``).

From each store's REST reference; what decides is the request's and response's shape, the
path a hint (it names the collection):

- Chroma (https://docs.trychroma.com/reference, ``POST .../collections/{id}/query``, v1
  ``/api/v1/`` and v2 ``/api/v2/tenants/{t}/databases/{d}/``): ``query_embeddings`` and
  ``n_results``, ``where``/``where_document`` -> ``ids``, ``distances``, ``documents``,
  ``metadatas`` as one list per query. Distances: lower is nearer.
- Qdrant (https://api.qdrant.tech/api-reference): ``points/search`` (``vector``, ``limit``,
  ``filter``) -> ``result: [point]``; ``points/query`` (``query``) -> ``result: {points}``;
  their ``/batch`` forms (``searches: [...]``) -> one result per search; every response has
  ``status`` and ``time``.
- Pinecone (https://docs.pinecone.io/reference/api/data-plane/query): ``topK`` with
  ``vector`` or ``id``, ``namespace``, ``filter`` -> ``matches`` and ``namespace``.
- Milvus REST (https://milvus.io/api-reference/restful/v2.5.x/v2/Vector%20(v2)/Search.md):
  v2 ``collectionName`` and ``data`` (vectors) -> ``code`` 0 and ``data`` (hits with
  ``distance``, split per query by ``topks`` when several); v1 ``/v1/vector/search``
  ``vector`` -> ``code`` 200. Milvus answers errors with HTTP 200 and a non-zero ``code``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentshark.apis.documents import (
    body_error,
    document,
    http_error,
    int_or_none,
    query,
    record,
    text_or_none,
)
from agentshark.apis.model import Call, GenericPart, Json
from agentshark.apis.view import ExchangeView

if TYPE_CHECKING:
    from agentshark.apis.family import ApiFamily

ROLE = "vector_store"


def _segment_after(path: str, name: str) -> str | None:
    parts = path.strip("/").split("/")
    for i, part in enumerate(parts[:-1]):
        if part == name:
            return parts[i + 1] or None
    return None


def _post_json(view: ExchangeView) -> dict[str, Json] | None:
    if view.method.upper() != "POST":
        return None
    body = view.request_json
    return body if isinstance(body, dict) else None


def _score(request_shape: bool, response_shape: bool, on_path: bool) -> float:
    """A request of the store's shape is needed; its response's shape or the path confirm."""
    if not request_shape or not (response_shape or on_path):
        return 0.0
    return 0.5 + 0.35 * response_shape + 0.1 * on_path


# -- Chroma ---------------------------------------------------------------------------------


class Chroma:
    api = "chroma.query"

    def match(self, view: ExchangeView) -> float:
        req = _post_json(view)
        shape = req is not None and isinstance(req.get("query_embeddings"), list)
        shape = shape and ("n_results" in req or "include" in req)  # type: ignore[operator]
        body = view.response_json
        answered = isinstance(body, dict) and isinstance(body.get("ids"), list)
        return _score(shape, answered, view.path.rstrip("/").endswith("/query"))

    def parse(self, view: ExchangeView, call: Call) -> None:
        req = _post_json(view) or {}
        vectors = req.get("query_embeddings")
        path = view.path
        tenant, database = _segment_after(path, "tenants"), _segment_after(path, "databases")
        info: dict[str, Json] = {
            "data_source": _segment_after(path, "collections"),
            "namespace": f"{tenant}/{database}" if tenant and database else None,
            "queries": [query(vector=v) for v in vectors] if isinstance(vectors, list) else [],
            "top_k": int_or_none(req.get("n_results")),
            "filter": {k: req[k] for k in ("where", "where_document", "ids") if req.get(k)} or None,
            "api_version": "v2" if "/api/v2/" in path else "v1" if "/api/v1/" in path else None,
        }
        body = view.response_json
        call.error = http_error(view, body)
        results = _chroma_results(body) if call.error is None else None
        record(call, role=ROLE, service="chroma", operation="retrieval", info=info, results=results)


def _chroma_results(body: Json) -> list[list[GenericPart]] | None:
    if not isinstance(body, dict) or not isinstance(body.get("ids"), list):
        return None

    def column(name: str, q: int) -> list[Json]:
        rows = body.get(name)
        row = rows[q] if isinstance(rows, list) and q < len(rows) else None
        return row if isinstance(row, list) else []

    out = []
    for q, ids in enumerate(body["ids"]):
        if not isinstance(ids, list):
            continue
        distances, docs = column("distances", q), column("documents", q)
        metas, uris = column("metadatas", q), column("uris", q)
        out.append(
            [
                document(
                    n + 1,
                    id=doc_id,
                    score=_at(distances, n),
                    score_kind="distance" if distances else None,
                    content=_at(docs, n),
                    metadata=_at(metas, n),
                    uri=_at(uris, n),
                )
                for n, doc_id in enumerate(ids)
            ]
        )
    return out


def _at(items: list[Json], n: int) -> Json:
    return items[n] if n < len(items) else None


# -- Qdrant ---------------------------------------------------------------------------------


class Qdrant:
    api = "qdrant.points"

    def match(self, view: ExchangeView) -> float:
        req = _post_json(view)
        shape = req is not None and _qdrant_request(req)
        body = view.response_json
        answered = isinstance(body, dict) and "result" in body and "time" in body
        on_path = "/points/search" in view.path or "/points/query" in view.path
        return _score(shape, answered, on_path)

    def parse(self, view: ExchangeView, call: Call) -> None:
        req = _post_json(view) or {}
        searches = req.get("searches")
        batch = isinstance(searches, list)
        items = [s for s in searches if isinstance(s, dict)] if batch else [req]  # type: ignore[union-attr]
        first = items[0] if items else {}
        info: dict[str, Json] = {
            "data_source": _segment_after(view.path, "collections"),
            "queries": [_qdrant_query(s) for s in items],
            "top_k": int_or_none(first.get("limit")),
            "filter": first.get("filter"),
            "endpoint": "query" if "/points/query" in view.path or "query" in first else "search",
            "batch": batch or None,
        }
        body = view.response_json
        call.error = http_error(view, body)
        results = None
        if call.error is None and isinstance(body, dict):
            result = body.get("result")
            rows = result if batch and isinstance(result, list) else [result]
            results = [_qdrant_points(r) for r in rows]
            if any(r is None for r in results):
                results = None
        record(
            call,
            role=ROLE,
            service="qdrant",
            operation="retrieval",
            info=info,
            results=results,  # type: ignore[arg-type]
        )


def _qdrant_request(req: dict[str, Json]) -> bool:
    searches = req.get("searches")
    if isinstance(searches, list):
        return bool(searches) and all(isinstance(s, dict) and _qdrant_one(s) for s in searches)
    return _qdrant_one(req)


def _qdrant_one(req: dict[str, Json]) -> bool:
    if "vector" in req and ("limit" in req or "with_payload" in req):
        return True
    return (
        "query" in req
        and ("limit" in req or "prefetch" in req or "using" in req)
        and (not isinstance(req.get("query"), str) or "with_payload" in req)
    )


def _qdrant_query(req: dict[str, Json]) -> dict[str, Json]:
    vector = req.get("vector", req.get("query"))
    if isinstance(vector, dict):  # {"name": ..., "vector": [...]} or {"nearest": [...]}
        vector = vector.get("vector", vector.get("nearest"))
    out = query(vector=vector)
    if not out and isinstance(vector, str | int):
        out["point_id"] = vector  # a query by a stored point's id
    using = req.get("using")
    if isinstance(using, str):
        out["using"] = using
    return out


def _qdrant_points(result: Json) -> list[GenericPart] | None:
    points = result.get("points") if isinstance(result, dict) else result
    if not isinstance(points, list):
        return None
    out = []
    for n, point in enumerate(points):
        if not isinstance(point, dict):
            continue
        payload = point.get("payload")
        content = None
        if isinstance(payload, dict):
            content = next(
                (payload[k] for k in ("text", "content", "document") if k in payload), None
            )
        out.append(
            document(
                n + 1,
                id=point.get("id"),
                score=point.get("score"),
                score_kind="similarity" if "score" in point else None,
                content=content,
                metadata=payload,
                version=point.get("version"),
            )
        )
    return out


# -- Pinecone -------------------------------------------------------------------------------


class Pinecone:
    api = "pinecone.query"

    def match(self, view: ExchangeView) -> float:
        req = _post_json(view)
        shape = req is not None and "topK" in req and ("vector" in req or "id" in req)
        body = view.response_json
        answered = isinstance(body, dict) and isinstance(body.get("matches"), list)
        return _score(shape, answered, view.path.rstrip("/").endswith("/query"))

    def parse(self, view: ExchangeView, call: Call) -> None:
        req = _post_json(view) or {}
        q = query(vector=req.get("vector"))
        if not q and isinstance(req.get("id"), str):
            q["vector_id"] = req["id"]
        info: dict[str, Json] = {
            "data_source": _index_host(view.host),
            "namespace": text_or_none(req.get("namespace")),
            "queries": [q],
            "top_k": int_or_none(req.get("topK")),
            "filter": req.get("filter"),
        }
        body = view.response_json
        call.error = http_error(view, body)
        results = None
        if call.error is None and isinstance(body, dict) and isinstance(body.get("matches"), list):
            results = [
                [
                    document(
                        n + 1,
                        id=m.get("id"),
                        score=m.get("score"),
                        score_kind="similarity",
                        metadata=m.get("metadata"),
                    )
                    for n, m in enumerate(x for x in body["matches"] if isinstance(x, dict))
                ]
            ]
            if isinstance(body.get("namespace"), str) and body["namespace"]:
                info["namespace"] = body["namespace"]
            usage = body.get("usage")
            if isinstance(usage, dict):
                call.extras["usage"] = usage
        record(
            call, role=ROLE, service="pinecone", operation="retrieval", info=info, results=results
        )


def _index_host(host: str) -> str | None:
    """A Pinecone index's name, as its own host begins (``{index}-{project}.svc...``); None
    for an address (a proxy or a local server names no index)."""
    label = host.partition(".")[0]
    return label if label and not label.isdigit() and ":" not in host else None


# -- Milvus ---------------------------------------------------------------------------------


class Milvus:
    api = "milvus.search"

    def match(self, view: ExchangeView) -> float:
        req = _post_json(view)
        vectors = req.get("data", req.get("vector")) if req is not None else None
        shape = req is not None and isinstance(req.get("collectionName"), str)
        shape = shape and isinstance(vectors, list)
        body = view.response_json
        answered = isinstance(body, dict) and isinstance(body.get("code"), int)
        on_path = view.path.rstrip("/").endswith(("/entities/search", "/vector/search"))
        return _score(shape, answered, on_path)

    def parse(self, view: ExchangeView, call: Call) -> None:
        req = _post_json(view) or {}
        vectors = req.get("data", req.get("vector"))
        if isinstance(vectors, list) and vectors and not isinstance(vectors[0], list):
            vectors = [vectors]  # v1: one vector
        info: dict[str, Json] = {
            "data_source": req.get("collectionName"),
            "namespace": text_or_none(req.get("dbName")),
            "queries": [query(vector=v) for v in vectors] if isinstance(vectors, list) else [],
            "top_k": int_or_none(req.get("limit")),
            "filter": req.get("filter") or None,
        }
        body = view.response_json
        call.error = http_error(view, body)
        code = body.get("code") if isinstance(body, dict) else None
        if call.error is None and isinstance(code, int) and code not in (0, 200):
            call.error = body_error(body, view.status, "body")
        results = None
        if call.error is None and isinstance(body, dict) and isinstance(body.get("data"), list):
            results = _milvus_hits(body["data"], body.get("topks"))
        record(call, role=ROLE, service="milvus", operation="retrieval", info=info, results=results)


def _milvus_hits(data: list[Json], topks: Json) -> list[list[GenericPart]]:
    hits = [h for h in data if isinstance(h, dict)]
    sizes = topks if isinstance(topks, list) and all(isinstance(k, int) for k in topks) else None
    groups, start = [], 0
    for size in sizes or [len(hits)]:
        groups.append(hits[start : start + size])
        start += size
    return [
        [
            document(
                n + 1,
                id=h.get("id"),
                score=h.get("distance"),
                score_kind="distance",
                metadata={k: v for k, v in h.items() if k not in ("id", "distance")} or None,
            )
            for n, h in enumerate(group)
        ]
        for group in groups
    ]


CHROMA = Chroma()
QDRANT = Qdrant()
PINECONE = Pinecone()
MILVUS = Milvus()
FAMILIES: tuple[ApiFamily, ...] = (CHROMA, QDRANT, PINECONE, MILVUS)
