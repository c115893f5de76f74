"""Retrieval calls recorded against the real services by other projects (../shared/corpus):
Tavily searches (pydantic-ai's and openllmetry's LangChain agent cassettes), Cohere and Voyage
reranks, each document against the response the cassette recorded. A scan of the whole corpus
(every file through the pipeline) finds retrieval calls in these files only: no other
exchange of the corpus is claimed by a retrieval family."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentshark.apis.model import Call, GenericPart
from agentshark.pipeline import Options
from tests.helpers import CORPUS, Collected

Json = Any
TAVILY = [
    "pydantic__pydantic-ai/tests/cassettes/test_tavily/test_basic_search.yaml",
    "pydantic__pydantic-ai/tests/cassettes/test_tavily/test_factory_with_bound_params.yaml",
    "pydantic__pydantic-ai/tests/cassettes/test_tavily/test_search_with_include_domains.yaml",
    "traceloop__openllmetry/packages/opentelemetry-instrumentation-langchain/tests/cassettes/"
    "test_agents/test_agents.yaml",
]
RERANK = {
    "traceloop__openllmetry/packages/opentelemetry-instrumentation-cohere/tests/cassettes/"
    "test_rerank/test_cohere_v2_rerank_legacy.yaml": "cohere.rerank",
    "traceloop__openllmetry/packages/opentelemetry-instrumentation-llamaindex/tests/cassettes/"
    "test_query_pipeline/test_query_pipeline.yaml": "cohere.rerank",
    "traceloop__openllmetry/packages/opentelemetry-instrumentation-voyageai/tests/cassettes/"
    "test_rerank/test_voyageai_rerank_legacy.yaml": "voyage.rerank",
}


def recorded(path: Path, suffix: str) -> list[tuple[Json, Json]]:
    """(request, response) JSON of the cassette's interactions whose URI ends with ``suffix``."""
    out = []
    for item in yaml.safe_load(path.read_text())["interactions"]:
        req, resp = item["request"], item["response"]
        if not req["uri"].endswith(suffix):
            continue
        body = resp.get("parsed_body") or json.loads(resp["body"]["string"])
        sent = req.get("parsed_body") or json.loads(req["body"])
        out.append((sent, body))
    return out


def retrieval_calls(path: Path) -> list[Call]:
    calls = Collected([str(path)], Options(calls=True)).calls
    return [c for c in calls if "retrieval" in c.extras]


def docs(call: Call) -> list[dict[str, Json]]:
    return [p.fields for m in call.output_messages for p in m.parts if isinstance(p, GenericPart)]


@pytest.mark.parametrize("name", TAVILY)
def test_tavily_searches_as_recorded(name: str) -> None:
    path = CORPUS / name
    found = retrieval_calls(path)
    wanted = recorded(path, "/search")
    assert len(found) == len(wanted) > 0
    for call, (sent, body) in zip(found, wanted, strict=True):
        assert (call.api, call.operation, call.complete) == ("tavily.search", "retrieval", True)
        assert call.extras["retrieval"]["queries"] == [{"text": sent["query"]}]
        assert call.extras["retrieval"].get("top_k") == sent.get("max_results")
        got = docs(call)
        assert [d["rank"] for d in got] == list(range(1, len(body["results"]) + 1))
        for doc, result in zip(got, body["results"], strict=True):
            assert (doc["url"], doc["title"], doc["score"]) == (
                result["url"],
                result["title"],
                result["score"],
            )
            assert doc["content"] == result["content"][:2048]


@pytest.mark.parametrize("name", sorted(RERANK))
def test_reranks_as_recorded(name: str) -> None:
    path = CORPUS / name
    found = retrieval_calls(path)
    wanted = recorded(path, "/rerank")
    assert len(found) == len(wanted) > 0
    for call, (sent, body) in zip(found, wanted, strict=True):
        assert (call.api, call.operation) == (RERANK[name], "rerank")
        assert call.extras["retrieval"]["queries"] == [{"text": sent["query"]}]
        results = body.get("results") or body.get("data")
        got = docs(call)
        assert [(d["id"], d["score"]) for d in got] == [
            (r["index"], r["relevance_score"]) for r in results
        ]
        for doc, result in zip(got, results, strict=True):
            given = sent["documents"][result["index"]]
            text = given.get("text") if isinstance(given, dict) else given
            assert isinstance(text, str) and doc["content"] == text[:2048]
