# ruff: noqa: RUF001 - the seeds are Chinese: fullwidth punctuation is their text
"""The agent runs of tests/data/runs (an openai-SDK agent loop, a scripted model stub, a weather
REST API or MCP server, on loopback; made by scripts/make_agent_runs.py) against the agent's
own record, truth.json: one trace per run, its origin, the span tree of seed 004 0x02 (agent
span -> model span -> tool span -> model span), the tool spans' links and the model spans'
attributes, and the incident of the deliberately wrong agent. tests/data/runs/README.md says
what each run holds.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import agentshark.pipeline
from agentshark.apis.model import Call, TextPart, ToolCallPart, ToolCallResponsePart
from agentshark.model import Exchange
from agentshark.trace.collect import Analysis
from agentshark.trace.model import Span, Trace
from tests.helpers import ROOT

Json = Any
RUNS = ROOT / "tests" / "data" / "runs"
NAMES = (
    "seed000_chat_http_traceparent",
    "seed000_chat_mcp_stream",
    "seed000_responses_http",
    "seed004_shenzhen",
    "parallel_tools_unanswered",
)
ORIGINS = {
    "seed000_chat_http_traceparent": "traceparent",
    "seed000_chat_mcp_stream": "history",
    "seed000_responses_http": "previous_response_id",
    "seed004_shenzhen": "history",
    "parallel_tools_unanswered": "history",
}
CLOCK_SLACK = 0.002  # s: the agent's clock (rounded to 1 µs) against the capture's timestamps


@dataclass(frozen=True, slots=True)
class Run:
    truth: dict[str, Json]
    analysis: Analysis
    exchanges: list[Exchange]
    model_calls: list[Call]  # in the order of truth["model_requests"]

    @property
    def trace(self) -> Trace:
        assert len(self.analysis.traces) == 1, [t.calls for t in self.analysis.traces]
        return self.analysis.traces[0]

    def spans(self, kind: str) -> list[Span]:
        return [s for s in self.trace.spans if s.kind == kind]


def folder(name: str) -> Path:
    return RUNS / name


@functools.cache
def run(name: str) -> Run:
    truth: dict[str, Json] = json.loads((folder(name) / "truth.json").read_text())
    analysis = Analysis()
    options = agentshark.pipeline.Options(calls=True)
    items = list(
        analysis.watch(agentshark.pipeline.run([str(folder(name) / "capture.pcap")], options))
    )
    analysis.finish()
    exchanges = [i for i in items if type(i) is Exchange]
    by_response = {c.response_id: c for c in analysis.calls if c.response_id is not None}
    model_calls = [by_response[r["response_id"]] for r in truth["model_requests"]]
    return Run(truth, analysis, exchanges, model_calls)


def execution_id(r: Run, execution: dict[str, Json]) -> str:
    """The id the trace should name as a tool execution: the captured HTTP exchange with the
    agent's method and URL, or the MCP tools/call call of that tool."""
    if execution["transport"] == "http":
        found = [
            x.id
            for x in r.exchanges
            if x.request is not None
            and (x.request.method, x.request.url) == (execution["method"], execution["url"])
        ]
    else:
        found = [
            c.id
            for c in r.analysis.calls
            if c.api == "mcp"
            and c.operation == "tools/call"
            and any(
                isinstance(p, ToolCallPart) and p.name == execution["mcp_tool"]
                for m in c.input_messages
                for p in m.parts
            )
        ]
    assert len(found) == 1, (execution, found)
    return found[0]


def sent_tool_message(truth: dict[str, Json], tool_call_id: str) -> Json:
    """What the agent sent the model as the result of ``tool_call_id``: the content of the
    Chat ``tool`` message or the ``output`` of the Responses ``function_call_output`` item."""
    for req in truth["model_requests"]:
        for m in req.get("messages", []):
            if m.get("role") == "tool" and m["tool_call_id"] == tool_call_id:
                return m["content"]
        for item in req.get("input", []):
            if item.get("type") == "function_call_output" and item["call_id"] == tool_call_id:
                return item["output"]
    raise AssertionError(f"the agent sent no result for {tool_call_id}")


# -- one trace, its origin, its spans ----------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_one_trace_holds_every_call_of_the_run(name: str) -> None:
    r = run(name)
    trace = r.trace  # exactly one
    model_ids = [c.id for c in r.model_calls]
    assert [c.id for c in r.analysis.calls if c.api.startswith("openai.")] == model_ids
    assert set(model_ids) <= set(trace.calls)
    for execution in r.truth["tool_executions"]:
        assert execution_id(r, execution) in trace.calls
    # every call of the capture is the run's: MCP session calls included
    assert {c.id for c in r.analysis.calls} <= set(trace.calls)


@pytest.mark.parametrize("name", NAMES)
def test_trace_origin(name: str) -> None:
    r = run(name)
    trace = r.trace
    assert trace.origin == ORIGINS[name]
    sent = r.truth["traceparent"]
    if sent["trace_id"] is not None:
        assert trace.trace_id == sent["trace_id"]
        assert trace.trace_id_source == "traceparent"
        assert all(s["trace_id"] == sent["trace_id"] for s in sent["sent"])
    else:
        assert trace.trace_id_source == "generated"
        assert all(not c.ids.get("traceparent") for c in r.analysis.calls)
    if name == "seed000_responses_http":
        first, second = r.model_calls
        assert second.ids["previous_response_id"] == first.response_id
        assert r.analysis.links[second.id].previous == first.id


@pytest.mark.parametrize("name", NAMES)
def test_span_tree_is_the_seed_004_tree(name: str) -> None:
    r = run(name)
    spans = r.trace.spans
    agent = spans[0]
    assert agent.kind == "agent" and agent.synthesized and agent.parent_id is None
    assert all(s.parent_id == agent.span_id for s in spans[1:])
    execution_kind = {t["tool_call_id"]: t["transport"] for t in r.truth["tool_executions"]}
    got: list[dict[str, Json]] = []
    for span in spans[1:]:
        if span.kind == "model":
            index = [c.id for c in r.model_calls].index(str(span.call_id))
            got.append({"kind": "model", "call_index": index})
        else:
            assert span.kind == "tool"
            assert span.tool_call_id is not None
            got.append(
                {
                    "kind": "tool",
                    "tool_call_id": span.tool_call_id,
                    "execution": execution_kind.get(span.tool_call_id) if span.execution else None,
                }
            )
    assert got == r.truth["expected_spans"]


@pytest.mark.parametrize("name", NAMES)
def test_tool_spans_link_request_execution_and_result(name: str) -> None:
    r = run(name)
    executions = {t["tool_call_id"]: t for t in r.truth["tool_executions"]}
    answered = {
        m["tool_call_id"]
        for m in r.truth["model_requests"][-1].get("messages", [])
        if m.get("role") == "tool"
    } | {
        i["call_id"]
        for i in r.truth["model_requests"][-1].get("input", [])
        if i.get("type") == "function_call_output"
    }
    first, second = r.model_calls
    tools = r.spans("tool")
    assert [s.tool_call_id for s in tools] == list(executions)
    for span in tools:
        truth = executions[span.tool_call_id]
        assert span.requested_by == first.id
        assert span.execution == execution_id(r, truth)
        assert span.inferred is False
        assert span.attributes["arguments"] == truth["arguments"]
        # the observed execution lies inside the agent's own start and end of it
        assert span.started is not None and span.ended is not None
        assert truth["started"] - CLOCK_SLACK <= span.started <= span.ended
        assert span.ended <= truth["ended"] + CLOCK_SLACK
        if span.tool_call_id in answered:
            assert span.tool_call_id is not None
            assert span.result_in == second.id
            # The result as the model received it: the tool message's content, a JSON text
            # (Chat's tool message and Responses' function_call_output carry strings), which
            # is what the tool returned.
            sent = sent_tool_message(r.truth, span.tool_call_id)
            assert span.attributes["result"] == sent
            assert json.loads(span.attributes["result"]) == truth["result"]
        else:
            assert span.result_in is None
            assert "result" not in span.attributes


@pytest.mark.parametrize("name", NAMES)
def test_model_span_attributes(name: str) -> None:
    r = run(name)
    models = r.spans("model")
    assert [s.call_id for s in models] == [c.id for c in r.model_calls]
    for span, req in zip(models, r.truth["model_requests"], strict=True):
        a = span.attributes
        assert a["model"] == req["response_model"] == req["model"]
        assert a["finish_reasons"] == [req["finish_reason"]]
        assert a["stream"] is req["stream"]
        assert a["complete"] is True
        usage = req["usage"]
        if req["endpoint"] == "POST /v1/chat/completions":
            tokens = (usage["prompt_tokens"], usage["completion_tokens"])
        else:
            tokens = (usage["input_tokens"], usage["output_tokens"])
        assert (a["input_tokens"], a["output_tokens"]) == tokens
        assert req["started"] - CLOCK_SLACK <= span.started
        assert span.ended is not None and span.ended <= req["ended"] + CLOCK_SLACK
        if req["stream"]:
            # from the request's first byte to the first content or tool-call delta: no later
            # than the agent saw its first delta, counted from before it sent the request
            agent_ttft = req["first_token_at"] - req["started"]
            assert 0 < a["time_to_first_token"] <= agent_ttft + CLOCK_SLACK
        else:
            assert "time_to_first_token" not in a


@pytest.mark.parametrize("name", [n for n in NAMES if n != "parallel_tools_unanswered"])
def test_correct_runs_have_no_incident(name: str) -> None:
    assert [i.rule for i in run(name).analysis.incidents] == []


# -- traceparent: one span per hop (seed 000 §6.1.2) -------------------------------------------


def sent_span(r: Run, hop: str) -> str:
    found: list[str] = [
        s["client_span_id"] for s in r.truth["traceparent"]["sent"] if s["hop"] == hop
    ]
    assert len(found) == 1, hop
    return found[0]


def test_traceparent_model_spans_are_the_agents_client_spans() -> None:
    """Each model request carried its own parent-id (the agent's client span for that hop),
    so the model span's id is that parent-id; the agent span itself never went on the wire
    (only as the parent of the client spans, in the agent's memory): it is synthesized."""
    r = run("seed000_chat_http_traceparent")
    models = r.spans("model")
    for n, (span, call) in enumerate(zip(models, r.model_calls, strict=True)):
        hop = f"model {n}"
        sent = next(s for s in r.truth["traceparent"]["sent"] if s["hop"] == hop)
        assert call.ids["traceparent"] == sent["traceparent"]
        assert span.span_id == sent_span(r, hop)
        assert span.span_id_source == f"traceparent parent-id of {call.id}"
    agent = r.trace.spans[0]
    assert agent.synthesized
    assert agent.span_id != r.truth["traceparent"]["agent_span_id"]  # not observable


def test_traceparent_tool_span_is_the_agents_client_span() -> None:
    r = run("seed000_chat_http_traceparent")
    (tool,) = r.spans("tool")
    assert tool.span_id == sent_span(r, f"tool {tool.tool_call_id}")


# -- seed 004: the parts of messages -----------------------------------------------------------


def test_seed004_parts_as_the_seed_numbers_them() -> None:
    r = run("seed004_shenzhen")
    a, c = r.model_calls
    # Span A's output message [0]: part [0] the text, part [1] the tool call.
    (out,) = a.output_messages
    assert out.role == "assistant"
    text, call = out.parts
    assert isinstance(text, TextPart) and text.content == "我先查询一下天气。"
    assert isinstance(call, ToolCallPart)
    assert (call.id, call.name) == ("call-shenzhen-001", "get_weather")
    assert call.arguments == {"city": "深圳", "date": "明天"}
    assert out.finish_reason == "tool_calls"
    # Seed 004 counts the system instruction as input message [0], so the tool message is
    # message [3]. The Chat family moves the leading system message out of input_messages
    # into system_instructions (as the OTel GenAI contract and the other families have it),
    # so in agentshark's numbering seed message [n] is input_messages[n - 1].
    for call_ in (a, c):
        (system,) = call_.system_instructions
        assert isinstance(system, TextPart) and system.content == "你是天气助手。"
    seed = [None, *c.input_messages]  # seed numbering: [0] system, [1] user, [2] model, [3] tool
    assert [m.role for m in c.input_messages] == ["user", "assistant", "tool"]
    user = seed[1]
    assert user is not None and user.parts == [TextPart(content="深圳明天天气怎么样，需要带伞吗？")]
    replayed = seed[2]
    assert replayed is not None
    assert [p.type for p in replayed.parts] == ["text", "tool_call"]
    assert replayed.parts[0] == text and isinstance(replayed.parts[1], ToolCallPart)
    assert replayed.parts[1].arguments == call.arguments
    result = seed[3]
    assert result is not None
    part = result.parts[0]
    assert isinstance(part, ToolCallResponsePart) and part.id == "call-shenzhen-001"
    assert json.loads(part.response) == {"weather": "雨", "rain_probability": 0.9}
    (answer,) = c.output_messages
    assert answer.parts == [TextPart(content="预计有雨，建议带伞。")]


# -- the wrong agent ---------------------------------------------------------------------------


def test_parallel_tool_call_left_unanswered_is_an_incident() -> None:
    r = run("parallel_tools_unanswered")
    first, second = r.model_calls
    asked = [t["id"] for t in r.truth["model_requests"][0]["tool_calls_asked"]]
    sent = [
        m["tool_call_id"] for m in r.truth["model_requests"][1]["messages"] if m["role"] == "tool"
    ]
    missing = [i for i in asked if i not in sent]
    assert missing == ["call-weather-bj"]
    found = [i for i in r.analysis.incidents if i.rule == "tool_call.unanswered"]
    assert len(found) == 1
    (incident,) = found
    assert incident.severity == "error"
    assert incident.call_id == second.id
    assert incident.trace_id == r.trace.trace_id
    assert incident.evidence["tool_call_id"] == "call-weather-bj"
    assert incident.evidence["previous_call"] == first.id
    assert incident.evidence["answered_ids"] == sent
    assert "call-weather-bj" in incident.message
    assert [i.rule for i in r.analysis.incidents] == ["tool_call.unanswered"]
