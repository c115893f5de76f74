"""A tool call executed as a vector search: the agent capture (openai SDK, a model stub that
asks for ``search_docs``, the tool run as a Chroma query whose embedding function calls the
stub's embeddings endpoint; scripts/make_retrieval_captures.py) against the agent's own
record, truth.json; in the trace and the OTLP export; and :func:`tool_work`'s rules by hand."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

import agentshark.pipeline
from agentshark.apis.documents import same_vector
from agentshark.apis.model import Call, GenericPart, Timing, ToolCallPart
from agentshark.trace.collect import Analysis
from agentshark.trace.retrieval import tool_work
from tests.helpers import CORPUS, ROOT
from tests.output.otlp.helpers import export, spans_of_lines

Json = Any
AGENT = ROOT / "tests" / "data" / "captures" / "retrieval_agent_chroma"


@functools.cache
def analysis() -> Analysis:
    out = Analysis()
    options = agentshark.pipeline.Options(calls=True)
    for _ in out.watch(agentshark.pipeline.run([str(AGENT / "capture.pcap")], options)):
        pass
    out.finish()
    return out


def truth() -> dict[str, Json]:
    out: dict[str, Json] = json.loads((AGENT / "truth.json").read_text())
    return out


def test_agent_run_links_the_search_and_its_embedding_to_the_tool_call() -> None:
    a, t = analysis(), truth()
    assert [c.api for c in a.calls] == [
        "openai.chat",
        "openai.embeddings",
        "chroma.query",
        "openai.chat",
    ]
    first, embedding, search, second = a.calls
    assert [first.response_id, second.response_id] == [r["id"] for r in t["sdk_responses"]]
    (trace,) = a.traces
    assert set(trace.calls) == {c.id for c in a.calls}
    assert [s.kind for s in trace.spans] == ["agent", "model", "tool", "model"]
    tool = trace.spans[2]
    assert tool.name == "execute_tool " + t["tool_call"]["name"]
    assert (tool.tool_call_id, tool.requested_by, tool.result_in) == (
        t["tool_call"]["id"],
        first.id,
        second.id,
    )
    assert (tool.execution, tool.inferred) == (search.id, False)
    assert tool.attributes["arguments"] == t["tool_call"]["arguments"]
    assert tool.attributes["confidence"] == 0.8  # the embedding's input is the query argument
    assert (
        f"its query vector is the one {embedding.id} returned"
        in tool.attributes["execution_evidence"]
    )
    assert tool.attributes["work"] == [
        {
            "call_id": embedding.id,
            "api": "openai.embeddings",
            "operation": "embeddings",
            "evidence": "openai.embeddings embeddings: its input holds every argument value",
            "confidence": 0.8,
        }
    ]
    assert tool.attributes["retrieval"] == {
        "role": "vector_store",
        "service": "chroma",
        "data_source": t["collection_id"],
        "namespace": "default_tenant/default_database",
        "top_k": t["tool_call"]["arguments"]["k"],
        "documents": len(t["chroma_result"]["ids"][0]),
        "operation": "retrieval",
    }
    assert (tool.started, tool.ended) == (search.timing.started, search.timing.ended)
    evidence = [e for e in trace.evidence if e["origin"] == "tool_call"]
    assert {tuple(e["calls"]) for e in evidence} >= {
        (first.id, search.id),
        (first.id, embedding.id),
    }


def test_the_search_as_the_client_saw_it() -> None:
    a, t = analysis(), truth()
    embedding, search = a.calls[1], a.calls[2]
    assert embedding.extras["embeddings"]["texts"] == [t["tool_call"]["arguments"]["query"]]
    (head,) = embedding.extras["embeddings"]["vector_heads"]
    assert same_vector(head, t["query_vector"][:8])
    (query,) = search.extras["retrieval"]["queries"]
    assert same_vector(query["vector_head"], t["query_vector"][:8])
    parts = search.output_messages[0].parts
    docs = [p.fields for p in parts if isinstance(p, GenericPart)]
    result = t["chroma_result"]
    assert [d["id"] for d in docs] == result["ids"][0]
    assert [d["content"] for d in docs] == result["documents"][0]
    assert [d["score"] for d in docs] == result["distances"][0]
    assert [{"id": d["id"], "text": d["content"]} for d in docs] == t["tool_result"]


def test_otlp_retrieval_and_embeddings_spans_under_the_tool_span(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "spans.jsonl"
    code, _ = export(capsys, str(AGENT / "capture.pcap"), "-o", str(out), "--openinference")
    assert code == 0
    spans = spans_of_lines(out.read_text())
    (tool,) = [s for s in spans if s["name"].startswith("execute_tool")]
    assert tool["kind"] == 1  # INTERNAL: the search is its child CLIENT span
    children = [s for s in spans if s.get("parentSpanId") == tool["spanId"]]
    t = truth()
    assert [s["name"] for s in children] == [
        "embeddings text-embedding-stub",
        "retrieval " + t["collection_id"],
    ]
    embedding, search = children
    assert embedding["kind"] == search["kind"] == 3
    assert embedding["attributes"]["gen_ai.operation.name"] == "embeddings"
    attrs = search["attributes"]
    assert attrs["gen_ai.operation.name"] == "retrieval"
    assert attrs["gen_ai.data_source.id"] == t["collection_id"]
    assert attrs["gen_ai.request.top_k"] == t["tool_call"]["arguments"]["k"]
    assert attrs["openinference.span.kind"] == "RETRIEVER"
    for n, doc_id in enumerate(t["chroma_result"]["ids"][0]):
        assert attrs[f"retrieval.documents.{n}.document.id"] == doc_id
        assert (
            attrs[f"retrieval.documents.{n}.document.content"]
            == t["chroma_result"]["documents"][0][n]
        )
    assert (
        json.loads(attrs["agentshark.retrieval.documents"])[0]["id"]
        == t["chroma_result"]["ids"][0][0]
    )


def test_analyze_tree_names_the_search_and_its_embedding(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from agentshark.cli import main

    assert main(["analyze", str(AGENT / "capture.pcap"), "--no-progress"]) == 0
    assert "[ran as call3, with call2]" in capsys.readouterr().out


# -- tool_work by hand ------------------------------------------------------------------------


def _call(cid: str, started: float, *, operation: str, extras: dict[str, Json]) -> Call:
    return Call(
        id=cid,
        exchange_id=cid,
        api="x",
        operation=operation,
        extras=extras,
        timing=Timing(started=started, ended=started + 0.1),
    )


def _search(cid: str, started: float, text: str | None, head: list[float] | None) -> Call:
    query: dict[str, Json] = (
        {"text": text} if text else {"vector_dimensions": 2, "vector_head": head}
    )
    return _call(
        cid,
        started,
        operation="retrieval",
        extras={"retrieval": {"role": "vector_store", "queries": [query], "top_k": 3}},
    )


def test_tool_work_rules() -> None:
    part = ToolCallPart(id="t1", name="search_docs", arguments={"query": "matcha", "k": 3})
    embed = _call(
        "e1",
        1.0,
        operation="embeddings",
        extras={"embeddings": {"texts": ["matcha"], "vector_heads": [[0.5, 0.25]]}},
    )
    by_vector = _search("s1", 1.2, None, [0.5, 0.25])
    by_text = _search("s2", 1.3, "matcha tea", None)
    other = _search("s3", 1.4, None, [0.1, 0.2])  # a vector no embedding of the tool returned
    late = _search("s4", 9.0, "matcha", None)  # after the window
    window = lambda t: t is not None and 0.9 <= t <= 2.0  # noqa: E731
    found = tool_work(part, window, [embed, by_vector, other, late], set())
    assert [(c.id, p) for c, _, p in found] == [("e1", 0.8), ("s1", 0.8)]
    again = _search("s5", 1.5, "matcha", None)  # the same query again: the next tool call's
    found = tool_work(part, window, [by_text, again, late], set())
    assert [(c.id, p) for c, _, p in found] == [("s2", 0.6)]
    assert tool_work(part, window, [embed], {"e1"}) == []  # already another tool's
    numbers = ToolCallPart(id="t2", name="f", arguments={"k": 3})
    assert tool_work(numbers, window, [by_text], set()) == []  # a number alone says nothing


def test_cassette_agents_each_tool_call_its_own_search() -> None:
    """openllmetry's LangChain agent cassette: four runs, each asks tavily_search_results_json
    with the same query; each run's tool call ran as its own Tavily search (no times in a
    cassette: the order decides)."""
    out = Analysis()
    path = CORPUS / "traceloop__openllmetry/packages/opentelemetry-instrumentation-langchain"
    cassette = path / "tests/cassettes/test_agents/test_agents.yaml"
    options = agentshark.pipeline.Options(calls=True)
    for _ in out.watch(agentshark.pipeline.run([str(cassette)], options)):
        pass
    out.finish()
    searches = [c.id for c in out.calls if c.api == "tavily.search"]
    tools = [s for t in out.traces for s in t.spans if s.kind == "tool"]
    assert len(searches) == len(tools) == 4
    assert [s.execution for s in tools] == searches
    assert all(s.attributes["arguments"] == {"query": "OpenLLMetry"} for s in tools)
    for trace in out.traces:  # each search in its own run
        assert len([c for c in trace.calls if c in searches]) == 1
