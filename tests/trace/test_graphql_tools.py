"""A tool call executed as a GraphQL request: the agent capture (openai SDK, a model stub that
asks for ``get_weather``, the tool run as a GraphQL query; scripts/make_graphql_captures.py)
against the agent's own record, truth.json; in the trace, the JSON report and the OTLP export;
and :func:`graphql_match`'s levels by hand."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

import agentshark.pipeline
from agentshark.trace.collect import Analysis
from agentshark.trace.tool_match import graphql_match
from tests.helpers import ROOT
from tests.output.otlp.helpers import export, spans_of_lines

Json = Any
CAPTURES = ROOT / "tests" / "data" / "captures"
AGENT = CAPTURES / "graphql_agent_openai"
STRAWBERRY = CAPTURES / "graphql_strawberry"


@functools.cache
def analysis(folder: Path) -> Analysis:
    out = Analysis()
    options = agentshark.pipeline.Options(calls=True)
    for _ in out.watch(agentshark.pipeline.run([str(folder / "capture.pcap")], options)):
        pass
    out.finish()
    return out


def truth(folder: Path) -> dict[str, Json]:
    out: dict[str, Json] = json.loads((folder / "truth.json").read_text())
    return out


def test_agent_run_is_one_trace_with_the_graphql_execution() -> None:
    a, t = analysis(AGENT), truth(AGENT)
    assert [c.api for c in a.calls] == ["openai.chat", "graphql", "openai.chat"]
    first, gql, second = a.calls
    assert [first.response_id, second.response_id] == [r["id"] for r in t["sdk_responses"]]
    (trace,) = a.traces
    assert set(trace.calls) == {first.id, gql.id, second.id}
    assert [s.kind for s in trace.spans] == ["agent", "model", "tool", "model"]
    tool = trace.spans[2]
    assert tool.name == "execute_tool " + t["tool_call"]["name"]
    assert tool.tool_call_id == t["tool_call"]["id"]
    assert (tool.requested_by, tool.result_in) == (first.id, second.id)
    assert (tool.execution, tool.call_id, tool.inferred) == (gql.id, gql.id, False)
    assert tool.attributes["arguments"] == t["tool_call"]["arguments"]
    assert tool.attributes["confidence"] == 1.0
    assert "variables are the tool call's arguments" in tool.attributes["execution_evidence"]
    assert tool.attributes["graphql"] == [
        {
            "type": "query",
            "name": "Weather",
            "root_fields": ["weather"],
            "errors": 0,
            "partial": False,
        }
    ]
    # the span lasts as the GraphQL exchange did, between the two model calls
    assert (tool.started, tool.ended) == (gql.timing.started, gql.timing.ended)
    assert first.timing.ended is not None and tool.started is not None
    assert first.timing.ended <= tool.started
    assert tool.ended is not None and second.timing.started is not None
    assert tool.ended <= second.timing.started
    (sent,) = [x for x in t["exchanges"] if x["path"] == "/graphql"]
    assert gql.extras["graphql"]["operations"][0]["variables"] == sent["request_json"]["variables"]
    assert gql.extras["graphql"]["operations"][0]["data"] == t["tool_result"]


def test_unasked_graphql_calls_are_tool_spans_of_their_own() -> None:
    a = analysis(STRAWBERRY)
    tools = [s for tr in a.traces for s in tr.spans if s.kind == "tool"]
    assert len(tools) == len(a.calls) == len(truth(STRAWBERRY)["exchanges"])
    assert all(s.tool_call_id is None and s.execution == s.call_id for s in tools)
    by_call = {s.call_id: s for s in tools}
    for call in a.calls:
        span = by_call[call.id]
        ops = call.extras["graphql"]["operations"]
        if call.operation == "batch":
            assert span.name == f"execute_tool graphql batch of {len(ops)}"
            assert span.attributes["arguments"] == [op.get("variables") for op in ops]
        else:
            assert span.attributes["arguments"] == ops[0].get("variables")
            assert span.attributes["result"] == {
                k: ops[0][k] for k in ("data", "errors") if k in ops[0]
            }
    partial = [s for s in tools if s.attributes["graphql"][0]["partial"]]
    assert [s.attributes["graphql"][0]["error_paths"] for s in partial] == [[["alerts"]]]


def test_analyze_tree_shows_the_link(capsys: pytest.CaptureFixture[str]) -> None:
    from agentshark.cli import main

    assert main(["analyze", str(AGENT / "capture.pcap"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "execute_tool get_weather" in out and "[ran as call2]" in out
    assert main(["analyze", str(STRAWBERRY / "capture.pcap"), "--no-progress"]) == 0
    assert "PARTIAL (data, errors at alerts)" in capsys.readouterr().out


def test_otlp_tool_span_is_the_graphql_client_span(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "spans.jsonl"
    code, _ = export(capsys, str(AGENT / "capture.pcap"), "-o", str(out))
    assert code == 0
    spans = spans_of_lines(out.read_text())
    (tool,) = [s for s in spans if s["name"].startswith("execute_tool")]
    attrs = tool["attributes"]
    assert tool["kind"] == 3  # SPAN_KIND_CLIENT
    assert attrs["gen_ai.operation.name"] == "execute_tool"
    assert attrs["gen_ai.tool.call.id"] == truth(AGENT)["tool_call"]["id"]
    assert json.loads(attrs["gen_ai.tool.call.arguments"]) == truth(AGENT)["tool_call"]["arguments"]
    assert attrs["graphql.operation.type"] == "query"
    assert attrs["graphql.operation.name"] == "Weather"
    assert attrs["graphql.document"].startswith("query Weather($city: String!)")
    assert attrs["agentshark.api"] == "graphql"
    assert attrs["agentshark.graphql.partial"] is False
    assert tool.get("status", {}).get("code") in (None, 0, "STATUS_CODE_UNSET")


def test_graphql_match_levels() -> None:
    ops: list[dict[str, Json]] = [
        {"type": "query", "name": "W", "variables": {"city": "Paris"}, "document": "query W"},
        {"type": "query", "name": "X", "variables": {"c": "Paris", "days": 3}},
        {"type": "query", "document": '{ weather(city: "Oslo") { t } }', "variables": None},
    ]
    assert graphql_match({"city": "Paris"}, ops) == (
        "GraphQL query W: its variables are the tool call's arguments",
        1.0,
    )
    assert graphql_match({"where": "Paris", "n": 3}, ops[1:]) == (
        "GraphQL query X: every argument value is one of its variables",
        0.8,
    )
    assert graphql_match({"city": "Oslo"}, ops) == (
        "GraphQL query: its document and variables hold every argument value",
        0.6,
    )
    assert graphql_match({"city": "Rome"}, ops) is None
    assert graphql_match({}, ops[1:]) is None  # nothing to look for
