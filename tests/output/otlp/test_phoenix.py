"""The real consumer: the spans pushed into Arize Phoenix, read back through Phoenix's own REST
API (``/v1/projects/{name}/spans``), as Phoenix understood them.

Phoenix (since 15.10) converts the GenAI semconv attributes to OpenInference on ingest, so
the runs pushed without ``--openinference`` show what a GenAI-only export gives a Phoenix
user; one run is pushed with it. Each run goes to a project of its own
(``openinference.project.name``).
"""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

import pytest

from tests.output.otlp.conftest import Phoenix
from tests.output.otlp.helpers import MCP_LOOP, SEED000, SHENZHEN, TOOL_LOOP, export, truth

WAIT = 60.0  # seconds for pushed spans to be stored


def phoenix_spans(phoenix: Phoenix, project: str, expected: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + WAIT
    spans: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        try:
            url = f"{phoenix.url}/v1/projects/{project}/spans?limit=1000"
            with urllib.request.urlopen(url, timeout=10) as resp:
                spans = json.loads(resp.read())["data"]
        except urllib.error.HTTPError as exc:
            if exc.code != 404:  # no such project until its first span is stored
                raise
        if len(spans) >= expected:
            return spans
        time.sleep(0.5)
    raise AssertionError(f"Phoenix has {len(spans)} spans in {project}, not {expected}")


def push(
    capsys: pytest.CaptureFixture[str], phoenix: Phoenix, project: str, *argv: str, grpc: bool
) -> None:
    where = (
        ["--endpoint", phoenix.grpc, "--protocol", "grpc"]
        if grpc
        else [
            "--endpoint",
            phoenix.url + "/v1/traces",
        ]
    )
    code, said = export(capsys, *argv, *where, "--project", project)
    assert code == 0, said


def tree(spans: list[dict[str, Any]]) -> dict[str, list[str]]:
    """parent name -> its children's names, in start order (names as Phoenix has them)."""
    by_id = {s["context"]["span_id"]: s for s in spans}
    out: dict[str, list[str]] = {}
    for s in sorted(spans, key=lambda s: (s["start_time"], s["name"])):
        parent = by_id.get(s["parent_id"] or "")
        out.setdefault(parent["name"] if parent else "", []).append(s["name"])
    return out


def kinds(spans: list[dict[str, Any]]) -> dict[str, str]:
    return {s["name"]: s["span_kind"] for s in spans}


def test_shenzhen_in_phoenix(capsys: pytest.CaptureFixture[str], phoenix: Phoenix) -> None:
    t = truth("seed004_shenzhen")
    push(capsys, phoenix, "shenzhen", str(SHENZHEN), grpc=False)
    spans = phoenix_spans(phoenix, "shenzhen", 4)
    assert len(spans) == 4
    assert tree(spans) == {
        "": ["invoke_agent"],
        "invoke_agent": ["chat gpt-4.1", "execute_tool get_weather", "chat gpt-4.1"],
    }
    assert kinds(spans) == {
        "invoke_agent": "AGENT",
        "chat gpt-4.1": "LLM",
        "execute_tool get_weather": "TOOL",
    }
    llm = sorted((s for s in spans if s["span_kind"] == "LLM"), key=lambda s: s["start_time"])
    for span, req in zip(llm, t["model_requests"], strict=True):
        at = span["attributes"]
        assert at["llm.model_name"] == req["response_model"]
        assert at["llm.token_count.prompt"] == req["usage"]["prompt_tokens"]
        assert at["llm.token_count.completion"] == req["usage"]["completion_tokens"]
        assert at["llm.input_messages.0.message.role"] == "system"
        assert at["llm.input_messages.0.message.content"] == t["system"]
        assert at["llm.input_messages.1.message.content"] == t["user"]
    first, second = (s["attributes"] for s in llm)
    asked = t["model_requests"][0]["tool_calls_asked"][0]
    call = "llm.output_messages.0.message.tool_calls.0.tool_call."
    assert first[call + "id"] == asked["id"]
    assert first[call + "function.name"] == "get_weather"
    assert json.loads(first[call + "function.arguments"]) == json.loads(asked["arguments"])
    assert first["llm.output_messages.0.message.content"] == "我先查询一下天气。"
    assert second["llm.input_messages.3.message.role"] == "tool"
    assert second["llm.input_messages.3.message.tool_call_id"] == asked["id"]
    result = t["tool_executions"][0]["result"]
    assert json.loads(second["llm.input_messages.3.message.content"]) == result
    assert second["llm.output_messages.0.message.content"] == t["final_answer"]
    (tool,) = (s for s in spans if s["span_kind"] == "TOOL")
    assert tool["attributes"]["tool.name"] == "get_weather"
    assert json.loads(tool["attributes"]["gen_ai.tool.call.result"]) == result


def test_seed000_runs_in_phoenix(capsys: pytest.CaptureFixture[str], phoenix: Phoenix) -> None:
    # the traceparent run over HTTP, the MCP run over gRPC, the Responses run with OpenInference
    push(capsys, phoenix, "tp", str(SEED000["seed000_chat_http_traceparent"]), grpc=False)
    push(capsys, phoenix, "mcp", str(SEED000["seed000_chat_mcp_stream"]), grpc=True)
    push(
        capsys,
        phoenix,
        "responses",
        str(SEED000["seed000_responses_http"]),
        "--openinference",
        grpc=False,
    )
    tp = phoenix_spans(phoenix, "tp", 4)
    sent = truth("seed000_chat_http_traceparent")["traceparent"]
    assert {s["context"]["trace_id"] for s in tp} == {sent["trace_id"]}
    children = {s["context"]["span_id"] for s in tp if s["parent_id"] is not None}
    assert children == {hop["client_span_id"] for hop in sent["sent"]}
    mcp = phoenix_spans(phoenix, "mcp", 9)
    assert tree(mcp)["invoke_agent"] == [
        "initialize",
        "notifications/initialized",
        "session.stream",
        "tools/list",
        "chat gpt-4.1",
        "execute_tool get_weather",
        "chat gpt-4.1",
        "session.delete",
    ]
    (tool,) = (s for s in mcp if s["span_kind"] == "TOOL")
    assert tool["attributes"]["mcp.method.name"] == "tools/call"
    assert tool["attributes"]["tool.name"] == "get_weather"
    tokens = sorted(
        (s["attributes"]["llm.token_count.prompt"], s["attributes"]["llm.token_count.completion"])
        for s in mcp
        if s["span_kind"] == "LLM"
    )
    assert tokens == [(139, 5), (226, 8)]
    responses = phoenix_spans(phoenix, "responses", 4)
    assert sorted(kinds(responses).values()) == ["AGENT", "LLM", "TOOL"]
    llm = [s for s in responses if s["span_kind"] == "LLM"]
    assert len(llm) == 2
    # --openinference: its output.value (the output messages) wins over Phoenix's conversion
    for s in llm:
        (message,) = json.loads(s["attributes"]["output.value"])
        assert message["role"] == "assistant" and message["finish_reason"] == "completed"
    call = "llm.output_messages.0.message.tool_calls.0.tool_call."
    (asking,) = (s for s in llm if call + "id" in s["attributes"])
    assert asking["attributes"][call + "id"] == "call-weather-002"


def test_corpus_tool_loops_in_phoenix(capsys: pytest.CaptureFixture[str], phoenix: Phoenix) -> None:
    push(capsys, phoenix, "loop", str(TOOL_LOOP), grpc=False)
    push(capsys, phoenix, "mcploop", str(MCP_LOOP), grpc=True)
    loop = phoenix_spans(phoenix, "loop", 8)
    names = sorted(s["name"] for s in loop if s["span_kind"] == "TOOL")
    assert names == [
        "execute_tool final_result",
        "execute_tool get_country",
        "execute_tool get_product_name",
        "execute_tool get_weather",
    ]
    llm = [s["attributes"] for s in loop if s["span_kind"] == "LLM"]
    assert sorted(a["llm.token_count.prompt"] for a in llm) == [364, 423, 448]
    # Phoenix names the model the request asked for; the response's stays beside it
    assert {a["llm.model_name"] for a in llm} == {"gpt-4o"}
    assert {a["gen_ai.response.model"] for a in llm} == {"gpt-4o-2024-08-06"}
    mcploop = phoenix_spans(phoenix, "mcploop", 9)
    (tool,) = (s for s in mcploop if s["span_kind"] == "TOOL")
    assert tool["name"] == "execute_tool ask_question"
    arguments = json.loads(tool["attributes"]["gen_ai.tool.call.arguments"])
    assert arguments["repoName"] == "pydantic/pydantic-ai"
    assert {s["parent_id"] for s in mcploop if s["name"] != "invoke_agent"} == {
        next(s["context"]["span_id"] for s in mcploop if s["name"] == "invoke_agent")
    }
