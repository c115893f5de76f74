"""Vector stores' write endpoints -> ``retrieval.write`` / ``retrieval.delete`` calls (role
``vector_store``).

From each store's REST reference; the request's shape decides, the path confirms (it names
the collection):

- Chroma (https://docs.trychroma.com/reference, v1 ``/api/v1/`` and v2
  ``/api/v2/tenants/{t}/databases/{d}/``): ``POST .../collections/{id}/add``, ``/upsert``
  and ``/update`` with ``ids`` and any of ``embeddings``, ``documents``, ``metadatas``,
  ``uris``; ``POST .../collections/{id}/delete`` with ``ids`` and/or ``where``,
  ``where_document``.
- Qdrant (https://api.qdrant.tech/api-reference/points/upsert-points): ``PUT
  /collections/{name}/points`` with ``points: [{id, vector, payload}]`` or
  ``batch: {ids, vectors, payloads}``; ``POST /collections/{name}/points/delete`` with
  ``points: [id]`` or ``filter``. The answer: ``result: {operation_id, status}``, ``status``
  and ``time``.
- Pinecone (https://docs.pinecone.io/reference/api/data-plane/upsert and ``/delete``):
  ``POST /vectors/upsert`` with ``vectors: [{id, values, sparseValues, metadata}]`` and
  ``namespace`` -> ``upsertedCount``; ``POST /vectors/delete`` with ``ids``, ``deleteAll``
  or ``filter`` and ``namespace``.

The call keeps in ``extras["retrieval"]``: ``data_source`` (the collection), ``namespace``,
``endpoint`` (the store's own name of the operation: ``add``, ``upsert``, ``update``,
``delete``), ``ids`` (the first :data:`IDS_KEPT` ids sent), ``count`` (how many records the
request names: ids, points or vectors), ``vectors`` (how many vectors it carries) and
``dimensions`` (their sizes, one entry per size seen; a base64 vector is float32),
``documents_sent`` (texts carried), ``filter`` (a delete's), and what the store answered:
``written`` (Pinecone's ``upsertedCount``), ``status`` (Qdrant's operation status). A write
has no documents back: its output is empty, and the call is complete once the store
answered.
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING

from agentshark.apis.documents import http_error, int_or_none, record
from agentshark.apis.model import Call, Json
from agentshark.apis.view import ExchangeView

if TYPE_CHECKING:
    from agentshark.apis.family import ApiFamily

ROLE = "vector_store"
IDS_KEPT = 64
CHROMA_WRITES = ("add", "upsert", "update")
CHROMA_RECORDS = ("embeddings", "documents", "metadatas", "uris")


def _json_object(view: ExchangeView, *methods: str) -> dict[str, Json] | None:
    if view.method.upper() not in methods:
        return None
    body = view.request_json
    return body if isinstance(body, dict) else None


def _segments(path: str) -> list[str]:
    return [p for p in path.split("/") if p]


def _after(parts: list[str], name: str) -> str | None:
    return next((parts[i + 1] for i, p in enumerate(parts[:-1]) if p == name), None)


def _vector_size(vector: Json) -> int | None:
    """A dense vector's size: a list of numbers, or base64 of little-endian float32 (how
    Chroma's v2 client sends ``embeddings``); None for anything else."""
    if isinstance(vector, list):
        return len(vector)
    if isinstance(vector, str):
        try:
            raw = base64.b64decode(vector, validate=True)
        except (binascii.Error, ValueError):
            return None
        return len(raw) // 4 if len(raw) % 4 == 0 else None
    return None


def _vectors(vectors: list[Json]) -> dict[str, Json]:
    """How many vectors and their sizes (one entry per size seen)."""
    sizes = [n for n in (_vector_size(v) for v in vectors) if n is not None]
    out: dict[str, Json] = {"vectors": len(sizes)}
    if sizes:
        out["dimensions"] = sorted(set(sizes))
    return out


def _ids(ids: list[Json]) -> dict[str, Json]:
    kept: list[Json] = [i for i in ids if isinstance(i, str | int) and not isinstance(i, bool)]
    return {"ids": kept[:IDS_KEPT], "count": len(ids)}


def _finish(
    view: ExchangeView, call: Call, service: str, operation: str, info: dict[str, Json]
) -> None:
    body = view.response_json
    call.error = http_error(view, body)
    answered = view.exchange.response is not None and view.exchange.response.complete
    record(call, role=ROLE, service=service, operation=operation, info=info, results=None,
           answered=answered)  # fmt: skip


# -- Chroma ---------------------------------------------------------------------------------


class ChromaWrite:
    api = "chroma.write"

    def match(self, view: ExchangeView) -> float:
        req = _json_object(view, "POST")
        if req is None:
            return 0.0
        parts = _segments(view.path)
        if "collections" not in parts[:-2] or not parts:
            return 0.0
        end = parts[-1]
        ids = req.get("ids")
        if end in CHROMA_WRITES:
            shape = isinstance(ids, list) and any(
                isinstance(req.get(k), list) for k in CHROMA_RECORDS
            )
        elif end == "delete":
            shape = set(req) <= {"ids", "where", "where_document"} and bool(req)
        else:
            return 0.0
        return 0.9 if shape else 0.0

    def parse(self, view: ExchangeView, call: Call) -> None:
        req = _json_object(view, "POST") or {}
        parts = _segments(view.path)
        tenant, database = _after(parts, "tenants"), _after(parts, "databases")
        endpoint = parts[-1]
        info: dict[str, Json] = {
            "data_source": _after(parts, "collections"),
            "namespace": f"{tenant}/{database}" if tenant and database else None,
            "endpoint": endpoint,
        }
        ids = req.get("ids")
        if isinstance(ids, list):
            info.update(_ids(ids))
        embeddings = req.get("embeddings")
        if isinstance(embeddings, list):
            info.update(_vectors(embeddings))
        documents = req.get("documents")
        if isinstance(documents, list):
            info["documents_sent"] = len(documents)
        if endpoint == "delete":
            found = {k: req[k] for k in ("where", "where_document") if req.get(k)}
            info["filter"] = found or None
        operation = "retrieval.delete" if endpoint == "delete" else "retrieval.write"
        _finish(view, call, "chroma", operation, info)


# -- Qdrant ---------------------------------------------------------------------------------


class QdrantWrite:
    api = "qdrant.write"

    def match(self, view: ExchangeView) -> float:
        parts = _segments(view.path)
        if "collections" not in parts or "points" not in parts:
            return 0.0
        if parts[-1] == "points":
            req = _json_object(view, "PUT")
            points, batch = (req or {}).get("points"), (req or {}).get("batch")
            shape = isinstance(points, list) and all(
                isinstance(p, dict) and "id" in p for p in points
            )
            shape = shape or (isinstance(batch, dict) and isinstance(batch.get("ids"), list))
        elif parts[-2:] == ["points", "delete"]:
            req = _json_object(view, "POST")
            shape = req is not None and ("points" in req or "filter" in req)
        else:
            return 0.0
        return 0.9 if shape else 0.0

    def parse(self, view: ExchangeView, call: Call) -> None:
        parts = _segments(view.path)
        delete = parts[-1] == "delete"
        req = _json_object(view, "POST" if delete else "PUT") or {}
        info: dict[str, Json] = {
            "data_source": _after(parts, "collections"),
            "endpoint": "delete" if delete else "upsert",
        }
        points, batch = req.get("points"), req.get("batch")
        if delete:
            if isinstance(points, list):
                info.update(_ids(points))
            info["filter"] = req.get("filter")
        elif isinstance(points, list):
            records = [p for p in points if isinstance(p, dict)]
            info.update(_ids([p.get("id") for p in records]))
            info.update(_vectors([p.get("vector") for p in records]))
        elif isinstance(batch, dict):
            ids, vectors = batch.get("ids"), batch.get("vectors")
            info.update(_ids(ids if isinstance(ids, list) else []))
            info.update(_vectors(vectors if isinstance(vectors, list) else []))
        body = view.response_json
        result = body.get("result") if isinstance(body, dict) else None
        if isinstance(result, dict) and isinstance(result.get("status"), str):
            info["status"] = result["status"]
        _finish(view, call, "qdrant", "retrieval.delete" if delete else "retrieval.write", info)


# -- Pinecone -------------------------------------------------------------------------------


class PineconeWrite:
    api = "pinecone.write"

    def match(self, view: ExchangeView) -> float:
        req = _json_object(view, "POST")
        if req is None:
            return 0.0
        path = view.path.rstrip("/")
        if path.endswith("/vectors/upsert"):
            vectors = req.get("vectors")
            shape = isinstance(vectors, list) and all(
                isinstance(v, dict) and "id" in v for v in vectors
            )
        elif path.endswith("/vectors/delete"):
            shape = bool(req) and set(req) <= {"ids", "deleteAll", "namespace", "filter"}
        else:
            return 0.0
        return 0.9 if shape else 0.0

    def parse(self, view: ExchangeView, call: Call) -> None:
        req = _json_object(view, "POST") or {}
        delete = view.path.rstrip("/").endswith("/delete")
        info: dict[str, Json] = {
            "namespace": req.get("namespace"),
            "endpoint": "delete" if delete else "upsert",
        }
        if delete:
            ids = req.get("ids")
            if isinstance(ids, list):
                info.update(_ids(ids))
            info["filter"] = req.get("filter")
            if req.get("deleteAll") is True:
                info["delete_all"] = True
        else:
            vectors = [v for v in req.get("vectors") or [] if isinstance(v, dict)]
            info.update(_ids([v.get("id") for v in vectors]))
            info.update(_vectors([v.get("values") for v in vectors]))
        body = view.response_json
        if isinstance(body, dict):
            info["written"] = int_or_none(body.get("upsertedCount"))
        _finish(view, call, "pinecone", "retrieval.delete" if delete else "retrieval.write", info)


FAMILIES: tuple[ApiFamily, ...] = (ChromaWrite(), QdrantWrite(), PineconeWrite())
