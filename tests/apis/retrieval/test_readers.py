"""Each retrieval reader on bodies shaped as the vendor's API reference shows them (the
captures of real clients are in test_captures.py): the family, the query, the documents
with ids, scores, ranks and content, the data source, and errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentshark.apis.model import Call, GenericPart
from agentshark.apis.registry import recognize
from tests.helpers import http_exchange

Json = Any


def call_of(
    path: str,
    request: Json,
    response: Json,
    *,
    method: str = "POST",
    status: int = 200,
    host: str = "127.0.0.1:8000",
    headers: list[tuple[str, str]] | None = None,
) -> Call:
    body = json.dumps(request).encode() if request is not None else b""
    answer = json.dumps(response).encode()
    x = http_exchange(
        method=method,
        url=f"http://{host}{path}",
        target=path,
        request_body=body,
        request_headers=[("content-type", "application/json")],
        response_pieces=[(1.0, answer)],
        status=status,
        response_headers=[("content-type", "application/json"), *(headers or [])],
    )
    call = recognize(x, "c1")
    assert call is not None, "no family claimed the exchange"
    return call


def docs(call: Call, n: int = 0) -> list[dict[str, Json]]:
    parts = call.output_messages[n].parts
    assert all(isinstance(p, GenericPart) and p.type == "document" for p in parts)
    return [p.fields for p in parts if isinstance(p, GenericPart)]


def info(call: Call) -> dict[str, Json]:
    value = call.extras["retrieval"]
    assert isinstance(value, dict)
    return value


VEC = [0.1, 0.2, 0.3, 0.4]


def test_chroma_v2_query() -> None:
    call = call_of(
        "/api/v2/tenants/default_tenant/databases/default_database/collections/9f1c/query",
        {"query_embeddings": [VEC], "n_results": 2, "where": {"topic": "tea"}},
        {
            "ids": [["d1", "d2"]],
            "distances": [[0.12, 0.5]],
            "documents": [["green tea", "black tea"]],
            "metadatas": [[{"topic": "tea"}, None]],
            "embeddings": None,
            "uris": None,
            "include": ["distances", "documents", "metadatas"],
        },
    )
    assert (call.api, call.operation, call.complete) == ("chroma.query", "retrieval", True)
    i = info(call)
    assert i["data_source"] == "9f1c" and i["namespace"] == "default_tenant/default_database"
    assert i["queries"] == [{"vector_dimensions": 4, "vector_head": VEC}]
    assert (i["top_k"], i["filter"], i["documents"]) == (2, {"where": {"topic": "tea"}}, 2)
    assert docs(call) == [
        {
            "rank": 1,
            "id": "d1",
            "score": 0.12,
            "score_kind": "distance",
            "content": "green tea",
            "metadata": {"topic": "tea"},
        },
        {"rank": 2, "id": "d2", "score": 0.5, "score_kind": "distance", "content": "black tea"},
    ]


def test_chroma_v1_error() -> None:
    call = call_of(
        "/api/v1/collections/abc/query",
        {"query_embeddings": [VEC], "n_results": 1},
        {"error": "InvalidCollection", "message": "Collection abc does not exist."},
        status=404,
    )
    assert call.api == "chroma.query" and info(call)["api_version"] == "v1"
    assert call.error is not None and call.error.status == 404
    assert call.error.message == "Collection abc does not exist." and call.complete
    assert call.output_messages == []


def test_qdrant_search_query_and_batch() -> None:
    point = {"id": 7, "version": 3, "score": 0.93, "payload": {"text": "hello", "lang": "en"}}
    search = call_of(
        "/collections/notes/points/search",
        {"vector": VEC, "limit": 1, "with_payload": True},
        {"result": [point], "status": "ok", "time": 0.001},
    )
    assert (search.api, info(search)["data_source"], info(search)["endpoint"]) == (
        "qdrant.points",
        "notes",
        "search",
    )
    assert docs(search) == [
        {
            "rank": 1,
            "id": 7,
            "score": 0.93,
            "score_kind": "similarity",
            "content": "hello",
            "version": 3,
            "metadata": {"text": "hello", "lang": "en"},
        }
    ]
    query = call_of(
        "/collections/notes/points/query",
        {"query": VEC, "limit": 1, "filter": {"must": [{"key": "lang", "match": {"value": "en"}}]}},
        {"result": {"points": [point]}, "status": "ok", "time": 0.001},
    )
    assert info(query)["endpoint"] == "query" and info(query)["filter"]["must"][0]["key"] == "lang"
    batch = call_of(
        "/collections/notes/points/search/batch",
        {"searches": [{"vector": VEC, "limit": 1}, {"vector": VEC, "limit": 1}]},
        {"result": [[point], []], "status": "ok", "time": 0.002},
    )
    assert info(batch)["batch"] is True and [len(m.parts) for m in batch.output_messages] == [1, 0]
    missing = call_of(
        "/collections/nope/points/search",
        {"vector": VEC, "limit": 1},
        {"status": {"error": "Not found: Collection `nope` doesn't exist!"}, "time": 0.0},
        status=404,
    )
    assert missing.error is not None and "nope" in (missing.error.message or "")


def test_pinecone_query() -> None:
    call = call_of(
        "/query",
        {"vector": VEC, "topK": 2, "namespace": "ns1", "includeMetadata": True},
        {
            "matches": [{"id": "v1", "score": 0.9, "metadata": {"genre": "drama"}}],
            "namespace": "ns1",
            "usage": {"readUnits": 5},
        },
        host="docs-abc123.svc.aped-4627-b74a.pinecone.io",
    )
    assert (call.api, info(call)["data_source"], info(call)["namespace"]) == (
        "pinecone.query",
        "docs-abc123",
        "ns1",
    )
    assert docs(call)[0] == {
        "rank": 1,
        "id": "v1",
        "score": 0.9,
        "score_kind": "similarity",
        "metadata": {"genre": "drama"},
    }


def test_milvus_search_and_error_in_200() -> None:
    call = call_of(
        "/v2/vectordb/entities/search",
        {"collectionName": "books", "data": [VEC, VEC], "limit": 1, "outputFields": ["title"]},
        {
            "code": 0,
            "data": [
                {"id": 1, "distance": 0.2, "title": "A"},
                {"id": 2, "distance": 0.3, "title": "B"},
            ],
            "topks": [1, 1],
        },
    )
    assert call.api == "milvus.search" and [len(m.parts) for m in call.output_messages] == [1, 1]
    assert docs(call, 1)[0]["metadata"] == {"title": "B"}
    failed = call_of(
        "/v2/vectordb/entities/search",
        {"collectionName": "nope", "data": [VEC], "limit": 1},
        {"code": 100, "message": "collection not found[collection=nope]"},
    )
    assert failed.error is not None and failed.error.code == "100" and failed.complete


def test_elasticsearch_and_opensearch_knn() -> None:
    hit = {"_index": "docs", "_id": "a1", "_score": 0.8, "_source": {"text": "x"}}
    hits = {"total": {"value": 1}, "max_score": 0.8, "hits": [hit]}
    es = call_of(
        "/docs/_search",
        {"knn": {"field": "vec", "query_vector": VEC, "k": 3, "num_candidates": 10}},
        {"took": 2, "timed_out": False, "_shards": {"total": 1}, "hits": hits},
        headers=[("x-elastic-product", "Elasticsearch")],
    )
    assert (es.api, info(es)["data_source"], info(es)["top_k"]) == (
        "elasticsearch.search",
        "docs",
        3,
    )
    assert docs(es)[0]["id"] == "a1" and docs(es)[0]["content"] == "x"
    opensearch = call_of(
        "/docs/_search",
        {"size": 2, "query": {"knn": {"vec": {"vector": VEC, "k": 2}}}},
        {"took": 2, "timed_out": False, "_shards": {"total": 1}, "hits": hits},
    )
    assert (
        opensearch.api == "opensearch.search" and info(opensearch)["queries"][0]["field"] == "vec"
    )
    plain = http_exchange(
        method="POST",
        url="http://h/docs/_search",
        target="/docs/_search",
        request_body=b'{"query": {"match": {"text": "x"}}}',
        request_headers=[],
        response_pieces=[(1.0, json.dumps({"took": 1, "_shards": {}, "hits": hits}).encode())],
    )
    assert recognize(plain, "c1") is None  # a search with no k-NN query is not a vector search


def test_weaviate_graphql_near_text() -> None:
    query = (
        "query Find($c: [String]) { Get { Article(nearText: {concepts: $c}, limit: 2) "
        "{ title _additional { id distance } } } }"
    )
    call = call_of(
        "/v1/graphql",
        {"query": query, "variables": {"c": ["tea", "green"]}},
        {
            "data": {
                "Get": {"Article": [{"title": "Tea", "_additional": {"id": "u1", "distance": 0.1}}]}
            }
        },
    )
    assert (call.api, call.operation) == ("weaviate.graphql", "retrieval")
    assert call.extras["graphql"]["operations"][0]["name"] == "Find"
    i = info(call)
    assert i["data_source"] == "Article" and i["top_k"] == 2
    assert i["queries"] == [{"text": "tea green", "operator": "nearText"}]
    assert docs(call) == [
        {
            "rank": 1,
            "id": "u1",
            "score": 0.1,
            "score_kind": "distance",
            "metadata": {"title": "Tea"},
        }
    ]


def test_rerankers_by_shape() -> None:
    request = {"model": "m", "query": "capital?", "documents": ["Paris", "Rome"], "top_n": 1}
    cohere = call_of(
        "/v2/rerank",
        request,
        {
            "id": "r1",
            "results": [{"index": 1, "relevance_score": 0.7}],
            "meta": {"billed_units": {"search_units": 1}},
        },
    )
    assert (cohere.api, cohere.operation, cohere.request_model) == ("cohere.rerank", "rerank", "m")
    assert docs(cohere) == [
        {"rank": 1, "id": 1, "score": 0.7, "score_kind": "relevance", "content": "Rome"}
    ]
    jina = call_of(
        "/v1/rerank",
        request,
        {
            "model": "m",
            "usage": {"total_tokens": 9},
            "results": [{"index": 0, "relevance_score": 0.9, "document": {"text": "Paris"}}],
        },
    )
    assert jina.api == "jina.rerank" and jina.usage is not None and jina.usage.total_tokens == 9


def test_web_search_apis() -> None:
    tavily = call_of(
        "/search",
        {"query": "who won", "max_results": 2, "search_depth": "basic"},
        {
            "query": "who won",
            "answer": None,
            "response_time": 0.4,
            "images": [],
            "results": [{"title": "T", "url": "https://e.x/1", "content": "c", "score": 0.8}],
        },
    )
    assert (tavily.api, info(tavily)["role"], info(tavily)["top_k"]) == (
        "tavily.search",
        "web_search",
        2,
    )
    assert docs(tavily)[0]["url"] == "https://e.x/1" and docs(tavily)[0]["score"] == 0.8
    serper = call_of(
        "/search",
        {"q": "tea", "num": 3},
        {
            "searchParameters": {"q": "tea"},
            "organic": [{"title": "T", "link": "https://t", "snippet": "s", "position": 1}],
        },
    )
    assert serper.api == "serper.search" and docs(serper)[0]["content"] == "s"
    exa = call_of(
        "/search",
        {"query": "tea", "numResults": 1, "type": "auto"},
        {
            "requestId": "q1",
            "resolvedSearchType": "neural",
            "results": [{"id": "https://t", "url": "https://t", "title": "T", "score": 0.3}],
        },
    )
    assert exa.api == "exa.search" and info(exa)["search_type"] == "neural"
    brave = call_of(
        "/res/v1/web/search?q=tea&count=5",
        None,
        {
            "type": "search",
            "query": {"original": "tea"},
            "web": {
                "type": "search",
                "results": [{"title": "T", "url": "https://t", "description": "d"}],
            },
        },
        method="GET",
    )
    assert (brave.api, info(brave)["queries"], info(brave)["top_k"]) == (
        "brave.search",
        [{"text": "tea"}],
        5,
    )


def test_mem0_write_search_and_list() -> None:
    add = call_of(
        "/v1/memories/",
        {"messages": [{"role": "user", "content": "I like tea"}], "user_id": "alex"},
        [{"id": "m1", "event": "ADD", "data": {"memory": "Likes tea"}}],
    )
    assert (add.api, add.operation, info(add)["namespace"]) == (
        "mem0.memories",
        "memory.write",
        {"user_id": "alex"},
    )
    assert docs(add) == [{"rank": 1, "id": "m1", "content": "Likes tea", "event": "ADD"}]
    search = call_of(
        "/v2/memories/search/",
        {"query": "drinks?", "filters": {"user_id": "alex"}, "top_k": 3},
        [
            {
                "id": "m1",
                "memory": "Likes tea",
                "user_id": "alex",
                "hash": "h1",
                "score": 0.4,
                "updated_at": "2026-01-01T00:00:00Z",
            }
        ],
    )
    assert search.operation == "memory.read" and info(search)["top_k"] == 3
    assert docs(search)[0]["version"] == "h1" and docs(search)[0]["scope"] == {"user_id": "alex"}
    listed = call_of(
        "/v1/memories/?user_id=alex",
        None,
        [{"id": "m1", "memory": "Likes tea", "user_id": "alex"}],
        method="GET",
    )
    assert listed.operation == "memory.read" and info(listed)["namespace"] == {"user_id": "alex"}


def test_zep_and_letta() -> None:
    graph = call_of(
        "/api/v2/graph/search",
        {"query": "tea", "user_id": "u1", "scope": "edges", "limit": 2},
        {"edges": [{"uuid": "e1", "fact": "u1 likes tea", "name": "LIKES"}]},
    )
    assert (graph.api, graph.operation, docs(graph)[0]["content"]) == (
        "zep.memory",
        "memory.read",
        "u1 likes tea",
    )
    write = call_of(
        "/api/v2/sessions/s1/memory",
        {"messages": [{"role_type": "user", "content": "hi"}]},
        {"message": "OK"},
    )
    assert write.operation == "memory.write" and info(write)["namespace"] == {"session_id": "s1"}
    passages = call_of(
        "/v1/agents/agent-1/archival-memory?search=tea",
        None,
        [{"id": "passage-1", "text": "likes tea", "agent_id": "agent-1", "embedding_config": {}}],
        method="GET",
    )
    assert (passages.api, passages.operation, info(passages)["namespace"]) == (
        "letta.memory",
        "memory.read",
        {"agent_id": "agent-1"},
    )
    assert docs(passages)[0]["content"] == "likes tea"


def test_vector_store_writes() -> None:
    """Chroma add/upsert/delete, Qdrant points upsert (points and batch) and delete, Pinecone
    upsert and delete, as their references give the bodies."""
    base = "/api/v2/tenants/t/databases/d/collections/c-1"
    up = call_of(f"{base}/upsert", {"ids": ["a", "b"], "embeddings": [VEC, VEC],
                                    "documents": ["x", "y"], "metadatas": None}, True)  # fmt: skip
    assert (up.api, up.operation, up.complete) == ("chroma.write", "retrieval.write", True)
    assert info(up) == {"role": "vector_store", "service": "chroma", "data_source": "c-1",
                        "namespace": "t/d", "endpoint": "upsert", "ids": ["a", "b"],
                        "count": 2, "vectors": 2, "dimensions": [4],
                        "documents_sent": 2}  # fmt: skip
    gone = call_of(f"{base}/delete", {"where": {"topic": "tea"}}, ["a"])
    assert (gone.operation, info(gone)["filter"]) == (
        "retrieval.delete",
        {"where": {"topic": "tea"}},
    )
    points = [{"id": 1, "vector": VEC, "payload": {"t": "x"}}, {"id": "u-2", "vector": VEC[:2]}]
    answer = {"result": {"operation_id": 7, "status": "acknowledged"}, "status": "ok", "time": 0}
    q = call_of("/collections/notes/points?wait=false", {"points": points}, answer, method="PUT")
    assert (q.api, q.operation) == ("qdrant.write", "retrieval.write")
    assert {k: info(q)[k] for k in ("data_source", "ids", "count", "vectors", "dimensions",
                                    "status")} == {
        "data_source": "notes", "ids": [1, "u-2"], "count": 2, "vectors": 2,
        "dimensions": [2, 4], "status": "acknowledged",
    }  # fmt: skip
    batch = {"batch": {"ids": [1, 2, 3], "vectors": [VEC, VEC, VEC]}}
    qb = call_of("/collections/notes/points", batch, answer, method="PUT")
    assert (info(qb)["count"], info(qb)["vectors"]) == (3, 3)
    qd = call_of("/collections/notes/points/delete", {"points": [1, 2]}, answer)
    assert (qd.operation, info(qd)["ids"]) == ("retrieval.delete", [1, 2])
    vectors = [{"id": "v1", "values": VEC, "metadata": {"g": "a"}}, {"id": "v2", "values": VEC}]
    pc = call_of("/vectors/upsert", {"vectors": vectors, "namespace": "kb"}, {"upsertedCount": 2})
    assert (pc.api, pc.operation) == ("pinecone.write", "retrieval.write")
    assert {k: info(pc)[k] for k in ("namespace", "ids", "vectors", "dimensions", "written")} == {
        "namespace": "kb", "ids": ["v1", "v2"], "vectors": 2, "dimensions": [4], "written": 2,
    }  # fmt: skip
    pd = call_of("/vectors/delete", {"deleteAll": True, "namespace": "kb"}, {})
    assert (pd.operation, info(pd)["delete_all"]) == ("retrieval.delete", True)
    failed = call_of(f"{base}/add", {"ids": ["a"], "documents": ["x"]},
                     {"error": "InvalidArgumentError", "message": "bad"}, status=400)  # fmt: skip
    assert failed.complete and failed.error is not None and failed.error.status == 400


@pytest.mark.parametrize(
    ("path", "request_body", "response"),
    [
        ("/collections/c/add", {"name": "c"}, {}),  # no ids
        ("/vectors/upsert", {"vectors": "v"}, {}),  # not records
        ("/collections/n/points", {"points": [1, 2]}, {}),  # a delete's shape on PUT's path
        ("/v1/chat/completions", {"model": "m", "messages": [], "query": "x"}, {"choices": []}),
        ("/search", {"query": "x"}, {"results": []}),  # no web search API's shape
        ("/query", {"topK": 3}, {"matches": []}),  # no vector nor id
        ("/memories", {"messages": "hi"}, {"ok": True}),  # no scope
    ],
)
def test_not_retrieval(path: str, request_body: Json, response: Json) -> None:
    x = http_exchange(
        method="POST",
        url=f"http://h{path}",
        target=path,
        request_body=json.dumps(request_body).encode(),
        request_headers=[],
        response_pieces=[(1.0, json.dumps(response).encode())],
    )
    found = recognize(x, "c1")
    assert found is None or "retrieval" not in found.extras


def test_content_is_bounded() -> None:
    long = "x" * 5000
    call = call_of(
        "/collections/n/points/search",
        {"vector": VEC, "limit": 1},
        {"result": [{"id": 1, "score": 1.0, "payload": {"text": long}}], "status": "ok", "time": 0},
    )
    doc = docs(call)[0]
    assert len(doc["content"]) == 2048 and doc["content_chars"] == 5000


def test_fuzz_findings() -> None:
    """From the fuzz campaign (api_search_memory): a mem0 record whose ``event`` is an object
    (unhashable: it raised TypeError); a Weaviate document of many operations is read once."""
    call = call_of(
        "/v1/memories/",
        {"messages": [{"role": "user", "content": "hi"}], "user_id": "u"},
        [{"id": "m1", "event": {"type": "0"}, "data": "x"}],
    )
    assert call.api != "mem0.memories" or call.operation == "memory.write"
    get = '{ Get { Article(nearText: {concepts: ["tea"]}, limit: 2) { title } } }'
    many = call_of("/v1/graphql", {"query": get * 40}, {"data": {"Get": {"Article": []}}})
    assert many.api in ("graphql", "weaviate.graphql")


def test_known_apis_name_the_retrieval_families() -> None:
    from agentshark.apis.registry import known_apis

    known = set(known_apis())
    assert {"chroma.query", "qdrant.points", "cohere.rerank", "voyage.rerank"} <= known
    assert {"elasticsearch.search", "opensearch.search", "mem0.memories"} <= known
    assert {"chroma.write", "qdrant.write", "pinecone.write"} <= known
