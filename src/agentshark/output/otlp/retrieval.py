"""A retrieval call of the report (vector store, reranker, web search, memory) -> its span's
name and attributes.

GenAI semconv v1.41.1 (gen-ai-spans.md) names a retrieval span ``retrieval
{gen_ai.data_source.id}``, CLIENT, ``gen_ai.operation.name`` ``retrieval``; rerankers get
``rerank``, a vector store's writes ``retrieval.write``/``retrieval.delete`` and memory services
``memory.read``/``memory.write``/``memory.delete`` (no semconv name yet: the report's
operation, as it is). Besides ``gen_ai.data_source.id`` and
``gen_ai.request.top_k``, what the conventions have no name for is agentshark's own: the
service and its role, the distance metric (pgvector's), the queries and the documents as
JSON strings (the documents are the call's output parts). A pgvector search is a database
client span too: ``db.system.name`` ``postgresql`` and ``db.query.text`` (semconv database
spans), the statement as sent. :mod:`.openinference` reads these
for the RETRIEVER and RERANKER kinds.
"""

from __future__ import annotations

from typing import Any

from agentshark.output.otlp import attributes as a
from agentshark.output.otlp import names as n

Json = Any


def is_retrieval(call: dict[str, Json]) -> bool:
    return isinstance((call.get("extras") or {}).get("retrieval"), dict)


def retrieval_call(call: dict[str, Json]) -> a.Attributes:
    """The attributes of a retrieval call's CLIENT span."""
    attrs = a.common(call)
    info = call["extras"]["retrieval"]
    op = str(call.get("operation") or "retrieval")
    attrs[n.OPERATION] = op
    for key, name in (
        ("data_source", n.DATA_SOURCE),
        ("role", n.RETRIEVAL_ROLE),
        ("service", n.RETRIEVAL_SERVICE),
        ("top_k", n.REQUEST_TOP_K),
        ("metric", n.RETRIEVAL_METRIC),
    ):
        if info.get(key) is not None:
            attrs[name] = info[key]
    if call.get("request_model"):
        attrs[n.REQUEST_MODEL] = call["request_model"]
    if isinstance(info.get("statement"), str):  # pgvector: a database client span too
        attrs[n.DB_SYSTEM] = "postgresql"
        attrs[n.DB_QUERY_TEXT] = info["statement"]
    for key, name in (("namespace", n.RETRIEVAL_NAMESPACE), ("filter", n.RETRIEVAL_FILTER)):
        if info.get(key) is not None:
            attrs[name] = a.dumps(info[key])
    queries = [
        {k: v for k, v in q.items() if k != "vector_head"} for q in info.get("queries") or []
    ]
    if queries:
        attrs[n.RETRIEVAL_QUERIES] = a.dumps(queries)
    documents = [p for m in call.get("output_messages") or [] for p in m.get("parts") or []]
    if "documents" in info:
        attrs[n.RETRIEVAL_DOCUMENTS] = a.dumps(documents)
    attrs[n.COMPLETE] = bool(call.get("complete"))
    a.error(attrs, call)
    return attrs


def span_name(call: dict[str, Json]) -> str:
    """``retrieval {data source}`` (semconv), ``rerank {model}``, ``memory.read {service}``."""
    info = call["extras"]["retrieval"]
    op = str(call.get("operation") or "retrieval")
    target = info.get("data_source") if op.startswith("retrieval") else None
    if op == "rerank":
        target = call.get("request_model")
    target = target or info.get("service")
    return f"{op} {target}" if target else op
