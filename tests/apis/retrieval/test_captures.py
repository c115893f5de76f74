"""Retrieval calls in loopback captures of real clients (made by
scripts/make_retrieval_captures.py), document by document against the clients' own parsed
results in truth.json:

- ``retrieval_chroma``: the real Chroma server and ``chromadb.HttpClient``;
- ``retrieval_stub_clients``: the official clients of Qdrant, Pinecone, Cohere, Tavily and
  Elasticsearch against a stub that speaks their REST schema (a stub server, real clients);
- ``retrieval_mem0``: ``mem0ai``'s ``MemoryClient`` against a stub of mem0's REST API;
- ``retrieval_agent_chroma``: the agent run, in tests/trace/test_retrieval_tools.py.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest

from agentshark.apis.documents import same_vector
from agentshark.apis.model import Call, GenericPart
from agentshark.pipeline import Options
from tests.helpers import ROOT, Collected

Json = Any
CAPTURES = ROOT / "tests" / "data" / "captures"


@functools.cache
def capture(name: str) -> tuple[dict[str, Json], list[Call]]:
    folder = CAPTURES / name
    truth = json.loads((folder / "truth.json").read_text())
    collected = Collected([str(folder / "capture.pcap")], Options(calls=True))
    order = {x.id: x.request.started or 0 for x in collected.exchanges if x.request}
    return truth, sorted(collected.calls, key=lambda c: order[c.exchange_id])


def documents(call: Call, n: int = 0) -> list[dict[str, Json]]:
    parts = call.output_messages[n].parts
    return [p.fields for p in parts if isinstance(p, GenericPart) and p.type == "document"]


def test_chroma_queries_document_by_document() -> None:
    truth, calls = capture("retrieval_chroma")
    queries = [c for c in calls if c.api == "chroma.query"]
    assert len(queries) == len(truth["queries"]) == 3
    assert {c.api for c in calls} == {"chroma.query", "chroma.write"}  # collections: neither
    for call, sent in zip(queries[:2], truth["queries"][:2], strict=True):
        info = call.extras["retrieval"]
        assert call.complete and call.error is None and call.operation == "retrieval"
        assert info["data_source"] == truth["collection_id"]
        assert info["namespace"] == "default_tenant/default_database"
        assert info["top_k"] == sent["n_results"]
        assert info.get("filter") == ({"where": sent["where"]} if "where" in sent else None)
        assert [q["vector_dimensions"] for q in info["queries"]] == [
            len(v) for v in sent["vectors"]
        ]
        for q, vector in zip(info["queries"], sent["vectors"], strict=True):
            assert same_vector(q["vector_head"], vector[:8])
        result = sent["result"]
        assert len(call.output_messages) == len(result["ids"])
        for n, ids in enumerate(result["ids"]):
            docs = documents(call, n)
            assert [d["id"] for d in docs] == ids
            assert [d["rank"] for d in docs] == list(range(1, len(ids) + 1))
            assert [d["score"] for d in docs] == result["distances"][n]
            assert {d["score_kind"] for d in docs} == {"distance"}
            assert [d["content"] for d in docs] == result["documents"][n]
            assert [d.get("metadata") for d in docs] == result["metadatas"][n]


def test_chroma_add_is_a_write_with_its_ids_and_vectors() -> None:
    """chromadb 1.x sends ``embeddings`` as base64 float32: their size read from that."""
    truth, calls = capture("retrieval_chroma")
    (add,) = [c for c in calls if c.api == "chroma.write"]
    info = add.extras["retrieval"]
    assert (add.operation, add.complete, add.error, add.output_messages) == (
        "retrieval.write", True, None, []
    )  # fmt: skip
    assert info["data_source"] == truth["collection_id"]
    assert info["endpoint"] == "add"
    assert info["ids"] == ["d1", "d2", "d3", "d4"]  # the script's DOCS, added whole
    assert info["count"] == info["vectors"] == info["documents_sent"] == 4
    assert info["dimensions"] == [len(truth["queries"][0]["vectors"][0])]
    found = {i for q in truth["queries"][:2] for ids in q["result"]["ids"] for i in ids}
    assert found <= set(info["ids"])


def test_chroma_error_is_the_clients() -> None:
    truth, calls = capture("retrieval_chroma")
    failed = [c for c in calls if c.api == "chroma.query"][2]
    sent = truth["queries"][2]
    assert failed.error is not None and failed.error.status == 404
    assert failed.error.type == sent["error"]["type"] == "NotFoundError"
    assert failed.error.message == sent["error"]["message"]
    assert failed.extras["retrieval"]["data_source"] == sent["collection_id"]
    assert failed.complete and failed.output_messages == []  # answered: with an error


def stub_calls() -> dict[str, list[Call]]:
    _, calls = capture("retrieval_stub_clients")
    out: dict[str, list[Call]] = {}
    for call in calls:
        out.setdefault(call.api, []).append(call)
    return out


def test_stub_clients_every_exchange_a_retrieval_call() -> None:
    _, calls = capture("retrieval_stub_clients")
    assert [c.api for c in calls] == [
        "qdrant.points",
        "qdrant.points",
        "qdrant.points",
        "pinecone.query",
        "cohere.rerank",
        "tavily.search",
        "elasticsearch.search",
    ]
    assert all(c.complete for c in calls if c.error is None)
    assert not [d for c in calls for d in c.diagnostics]


def test_qdrant_points_as_the_client_parsed_them() -> None:
    truth, _ = capture("retrieval_stub_clients")
    query, batch, missing = stub_calls()["qdrant.points"]

    def same(call: Call, n: int, points: list[dict[str, Json]]) -> None:
        docs = documents(call, n)
        assert [(d["id"], d["score"], d["version"]) for d in docs] == [
            (p["id"], p["score"], p["version"]) for p in points
        ]
        assert [d["metadata"] for d in docs] == [p["payload"] for p in points]
        assert [d["content"] for d in docs] == [p["payload"]["text"] for p in points]

    same(query, 0, truth["qdrant_query"])
    assert query.extras["retrieval"]["filter"]["must"][0]["key"] == "topic"
    assert (
        query.extras["retrieval"]["top_k"] == 2 and query.extras["retrieval"]["endpoint"] == "query"
    )
    assert batch.extras["retrieval"]["batch"] is True
    for n, points in enumerate(truth["qdrant_batch"]):
        same(batch, n, points)
    assert missing.error is not None and missing.error.status == 404
    assert missing.error.message is not None and missing.error.message in truth["qdrant_missing"][
        "message"
    ].replace("\\'", "'")


def test_pinecone_rerank_tavily_elasticsearch() -> None:
    truth, _ = capture("retrieval_stub_clients")
    found = stub_calls()
    (pinecone,) = found["pinecone.query"]
    assert pinecone.extras["retrieval"]["namespace"] == truth["pinecone"]["namespace"]
    assert "data_source" not in pinecone.extras["retrieval"]  # a local address names no index
    assert [(d["id"], d["score"], d["metadata"]) for d in documents(pinecone)] == [
        (m["id"], m["score"], m["metadata"]) for m in truth["pinecone"]["matches"]
    ]
    (rerank,) = found["cohere.rerank"]
    assert rerank.response_id == truth["cohere_rerank"]["id"]
    assert [(d["id"], d["score"]) for d in documents(rerank)] == [
        (r["index"], r["relevance_score"]) for r in truth["cohere_rerank"]["results"]
    ]
    assert all(isinstance(d["content"], str) for d in documents(rerank))  # from the request
    (tavily,) = found["tavily.search"]
    assert tavily.extras["retrieval"]["queries"] == [{"text": truth["tavily"]["query"]}]
    assert [(d["url"], d["score"], d["content"], d["title"]) for d in documents(tavily)] == [
        (r["url"], r["score"], r["content"], r["title"]) for r in truth["tavily"]["results"]
    ]
    (es,) = found["elasticsearch.search"]
    hits = truth["elasticsearch"]["hits"]["hits"]
    assert es.extras["retrieval"]["data_source"] == hits[0]["_index"]
    assert [(d["id"], d["score"], d["metadata"]) for d in documents(es)] == [
        (h["_id"], h["_score"], h["_source"]) for h in hits
    ]


@pytest.mark.parametrize(
    "name", ["retrieval_chroma", "retrieval_stub_clients", "retrieval_agent_chroma"]
)
def test_captures_are_whole(name: str) -> None:
    run = json.loads((CAPTURES / name / "run.json").read_text())
    assert run["capture_complete"] is True
