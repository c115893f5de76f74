"""``export otlp -o``: the OTLP JSON Lines file, read two ways.

The proto way: each line, its hex ids turned back into proto3 JSON's base64, parses with
``google.protobuf.json_format`` into the official ``ExportTraceServiceRequest`` (unknown
fields refused). The plain way (an independent reader of the OTLP JSON rules: hex ids,
integer enums, int64 as decimal strings, KeyValue lists): :mod:`tests.output.otlp.helpers`.
What the spans say is checked against the runs' ``truth.json`` (the agent's own records).
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from tests.output.otlp.helpers import (
    MCP_LOOP,
    SEED000,
    SHENZHEN,
    TOOL_LOOP,
    export,
    spans_of_lines,
    truth,
)

HEX32 = re.compile(r"^[0-9a-f]{32}$")
HEX16 = re.compile(r"^[0-9a-f]{16}$")
OI = "openinference.span.kind"


def jsonl(capsys: pytest.CaptureFixture[str], tmp_path: Path, *argv: str) -> str:
    out = tmp_path / "traces.jsonl"
    code, said = export(capsys, *argv, "-o", str(out))
    assert code == 0, said
    assert re.search(r"\d+ traces?, \d+ spans? written to", said)
    return out.read_text(encoding="utf-8")


def proto(line: str) -> ExportTraceServiceRequest:
    data = json.loads(line)
    for rs in data["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for item in [span, *span.get("links", [])]:
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if key in item:
                            item[key] = base64.b64encode(bytes.fromhex(item[key])).decode()
    message = ExportTraceServiceRequest()
    json_format.ParseDict(data, message)  # unknown fields are an error
    return message


def by_name(spans: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for s in spans:
        out.setdefault(s["name"], []).append(s)
    return out


def test_shenzhen_lines_parse_as_the_proto_and_follow_the_json_rules(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = jsonl(capsys, tmp_path, str(SHENZHEN))
    lines = text.splitlines()
    assert len(lines) == 1 and text.endswith("\n")
    message = proto(lines[0])
    (rs,) = message.resource_spans
    resource = {kv.key: kv.value for kv in rs.resource.attributes}
    assert resource["service.name"].string_value == "agentshark"
    assert resource["agentshark.semconv.version"].string_value == "1.41.1"
    assert [v.string_value for v in resource["agentshark.capture.files"].array_value.values] == [
        str(SHENZHEN)
    ]
    (ss,) = rs.scope_spans
    assert ss.scope.name == "agentshark"
    assert ss.schema_url == "https://opentelemetry.io/schemas/1.41.0"
    kinds = [s.kind for s in ss.spans]
    assert kinds == [
        Span.SPAN_KIND_INTERNAL,
        Span.SPAN_KIND_CLIENT,
        Span.SPAN_KIND_INTERNAL,
        Span.SPAN_KIND_CLIENT,
    ]
    # the plain reader: hex ids, integer enums, int64 as strings
    raw = json.loads(lines[0])["resourceSpans"][0]["scopeSpans"][0]["spans"]
    for span, parsed in zip(raw, ss.spans, strict=True):
        assert HEX32.match(span["traceId"]) and bytes.fromhex(span["traceId"]) == parsed.trace_id
        assert HEX16.match(span["spanId"]) and bytes.fromhex(span["spanId"]) == parsed.span_id
        assert isinstance(span["kind"], int)
        assert re.fullmatch(r"\d+", span["startTimeUnixNano"])
        assert int(span["startTimeUnixNano"]) == parsed.start_time_unix_nano
        tokens = [kv for kv in span["attributes"] if kv["key"].startswith("gen_ai.usage.")]
        assert all(isinstance(kv["value"]["intValue"], str) for kv in tokens)


def test_shenzhen_spans_say_what_the_agent_did(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    t = truth("seed004_shenzhen")
    spans = spans_of_lines(jsonl(capsys, tmp_path, str(SHENZHEN)))
    agent, first, tool, second = spans
    assert agent["name"] == "invoke_agent" and "parentSpanId" not in agent
    assert {s["parentSpanId"] for s in (first, tool, second)} == {agent["spanId"]}
    assert len({s["traceId"] for s in spans}) == 1
    assert [first["name"], tool["name"], second["name"]] == [
        "chat gpt-4.1",
        "execute_tool get_weather",
        "chat gpt-4.1",
    ]
    for span, req in zip((first, second), t["model_requests"], strict=True):
        at = span["attributes"]
        assert at["gen_ai.operation.name"] == "chat"
        assert at["gen_ai.request.model"] == req["model"]
        assert at["gen_ai.response.model"] == req["response_model"]
        assert at["gen_ai.response.id"] == req["response_id"]
        assert at["gen_ai.response.finish_reasons"] == [req["finish_reason"]]
        assert at["gen_ai.usage.input_tokens"] == req["usage"]["prompt_tokens"]
        assert at["gen_ai.usage.output_tokens"] == req["usage"]["completion_tokens"]
        system = json.loads(at["gen_ai.system_instructions"])
        assert system == [{"type": "text", "content": req["messages"][0]["content"]}]
        sent = json.loads(at["gen_ai.input.messages"])
        assert [m["role"] for m in sent] == [m["role"] for m in req["messages"][1:]]
        assert int(span["startTimeUnixNano"]) <= int(span["endTimeUnixNano"])
        assert "gen_ai.request.stream" not in at  # only when streaming
    out = json.loads(first["attributes"]["gen_ai.output.messages"])
    asked = t["model_requests"][0]["tool_calls_asked"][0]
    assert out == [
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": t["model_requests"][0]["output_text"]},
                {
                    "type": "tool_call",
                    "id": asked["id"],
                    "name": asked["name"],
                    "arguments": json.loads(asked["arguments"]),
                },
            ],
            "finish_reason": "tool_calls",
        }
    ]
    replayed = json.loads(second["attributes"]["gen_ai.input.messages"])
    assert replayed[-1] == {
        "role": "tool",
        "parts": [
            {
                "type": "tool_call_response",
                "id": asked["id"],
                "response": t["model_requests"][1]["messages"][3]["content"],
            }
        ],
    }
    answer = json.loads(second["attributes"]["gen_ai.output.messages"])
    assert answer[0]["parts"] == [{"type": "text", "content": t["final_answer"]}]
    execution = t["tool_executions"][0]
    at = tool["attributes"]
    assert at["gen_ai.operation.name"] == "execute_tool"
    assert at["gen_ai.tool.name"] == execution["name"]
    assert at["gen_ai.tool.call.id"] == execution["tool_call_id"]
    assert json.loads(at["gen_ai.tool.call.arguments"]) == execution["arguments"]
    assert json.loads(at["gen_ai.tool.call.result"]) == execution["result"]
    assert at["url.full"] == execution["url"] and at["http.response.status_code"] == 200
    # wire times: the tool ran between the two model calls
    assert int(first["endTimeUnixNano"]) <= int(tool["startTimeUnixNano"])
    assert int(tool["endTimeUnixNano"]) <= int(second["startTimeUnixNano"])
    assert "openinference.span.kind" not in first["attributes"]


def test_traceparent_ids_are_the_wire_ones(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    t = truth("seed000_chat_http_traceparent")["traceparent"]
    spans = spans_of_lines(jsonl(capsys, tmp_path, str(SEED000["seed000_chat_http_traceparent"])))
    assert {s["traceId"] for s in spans} == {t["trace_id"]}
    sent = [hop["client_span_id"] for hop in t["sent"]]
    assert [s["spanId"] for s in spans[1:]] == sent
    sources = [s["attributes"]["agentshark.span_id.source"] for s in spans[1:]]
    assert all(src.startswith("traceparent parent-id") for src in sources)


def test_mcp_tools_call_is_folded_into_the_tool_span(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spans = spans_of_lines(jsonl(capsys, tmp_path, str(SEED000["seed000_chat_mcp_stream"])))
    names = by_name(spans)
    (tool,) = names["execute_tool get_weather"]
    at = tool["attributes"]
    assert at["mcp.method.name"] == "tools/call"
    assert at["jsonrpc.request.id"] == "3"
    assert at["mcp.session.id"] == "a71103f5d95348159ab230f490f38940"
    assert at["network.transport"] == "tcp"
    assert at["gen_ai.tool.call.id"] == "call-stream-001"
    assert json.loads(at["gen_ai.tool.call.arguments"]) == {"city": "Shanghai"}
    assert "tools/call get_weather" not in names  # one span, not two
    for method in ("initialize", "notifications/initialized", "tools/list"):
        (span,) = names[method]
        assert span["kind"] == 3 and span["attributes"]["mcp.method.name"] == method
        assert span["parentSpanId"] == spans[0]["spanId"]
    # the second model call continues the first (history): a link, not a parent
    first, second = names["chat gpt-4.1"]
    (link,) = second["links"]
    assert link["spanId"] == first["spanId"] and link["traceId"] == first["traceId"]
    assert {kv["key"]: kv["value"]["stringValue"] for kv in link["attributes"]} == {
        "agentshark.link.origin": "history"
    }
    assert first["attributes"]["gen_ai.request.stream"] is True
    assert first["attributes"]["gen_ai.response.time_to_first_chunk"] > 0


def test_responses_previous_response_id_is_a_link(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spans = spans_of_lines(jsonl(capsys, tmp_path, str(SEED000["seed000_responses_http"])))
    models = [s for s in spans if s["attributes"].get("gen_ai.operation.name") == "chat"]
    assert len(models) == 2
    (link,) = models[1]["links"]
    assert link["spanId"] == models[0]["spanId"]
    assert link["attributes"][0]["value"]["stringValue"] == "previous_response_id"


def test_a2a_calls_are_client_spans_and_errors_set_the_status(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from tests.helpers import ROOT

    capture = ROOT / "tests" / "data" / "captures" / "a2a_v1_jsonrpc" / "capture.pcap"
    text = jsonl(capsys, tmp_path, str(capture))
    spans = spans_of_lines(text)
    a2a = [s for s in spans if "a2a.method.name" in s["attributes"]]
    assert a2a and all(s["kind"] == Span.SPAN_KIND_CLIENT for s in a2a)
    assert all(s["name"] == s["attributes"]["a2a.method.name"] for s in a2a)
    failed = [s for s in a2a if s.get("status")]
    assert {s["attributes"]["error.type"] for s in failed} == {"-32001", "-32002"}
    assert all(s["status"]["code"] == Status.STATUS_CODE_ERROR for s in failed)
    assert {s["status"]["message"] for s in failed} == {"Task not found", "Task cannot be canceled"}


def test_a_provider_error_is_error_type_and_status(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from tests.helpers import ROOT

    d = ROOT / "tests" / "data" / "captures" / "bedrock_errors_tls13"
    spans = spans_of_lines(
        jsonl(capsys, tmp_path, str(d / "capture.pcap"), "--keylog", str(d / "keys.log"))
    )
    failed = [s for s in spans if "error.type" in s["attributes"]]
    assert failed
    for s in failed:
        assert s["attributes"]["gen_ai.provider.name"] == "aws.bedrock"
        assert s["attributes"]["error.type"] == "ValidationException"
        assert s["status"] == {
            "code": Status.STATUS_CODE_ERROR,
            "message": "The provided model identifier is invalid.",
        }


def test_a_cassette_tool_loop_without_times_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spans = spans_of_lines(jsonl(capsys, tmp_path, str(TOOL_LOOP)))
    assert [s["name"] for s in spans].count("chat gpt-4o-2024-08-06") == 3
    tools = [s for s in spans if s["name"].startswith("execute_tool")]
    assert [s["attributes"]["gen_ai.tool.name"] for s in tools] == [
        "get_country",
        "get_product_name",
        "get_weather",
        "final_result",
    ]
    assert all(s["attributes"]["agentshark.tool.inferred"] is True for s in tools)
    assert all(s["attributes"].get("agentshark.times_unknown") is True for s in spans)
    assert all(s.get("startTimeUnixNano", "0") == "0" for s in spans)  # proto3 JSON omits 0


def test_openinference_attributes_are_derived_from_the_genai_ones(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spans = spans_of_lines(jsonl(capsys, tmp_path, str(MCP_LOOP), "--openinference"))
    kinds = [s["attributes"][OI] for s in spans]
    assert kinds[0] == "AGENT" and kinds.count("LLM") == 2 and kinds.count("TOOL") == 1
    assert set(kinds) == {"AGENT", "LLM", "TOOL", "CHAIN"}  # MCP initialize, tools/list...
    of = {kind: [s["attributes"] for s in spans if s["attributes"][OI] == kind] for kind in kinds}
    llm = of["LLM"][0]
    assert llm["llm.model_name"] == llm["gen_ai.response.model"]
    assert llm["llm.token_count.prompt"] == llm["gen_ai.usage.input_tokens"]
    assert llm["llm.token_count.total"] == (
        llm["gen_ai.usage.input_tokens"] + llm["gen_ai.usage.output_tokens"]
    )
    calls = json.loads(llm["gen_ai.output.messages"])[0]["parts"]
    (asked,) = [p for p in calls if p["type"] == "tool_call"]
    prefix = "llm.output_messages.0.message.tool_calls.0.tool_call."
    assert llm[prefix + "id"] == asked["id"]
    assert llm[prefix + "function.name"] == asked["name"]
    assert json.loads(llm[prefix + "function.arguments"]) == asked["arguments"]
    (tool,) = of["TOOL"]
    assert tool["tool.name"] == "ask_question"
    assert tool["input.value"] == tool["gen_ai.tool.call.arguments"]
    assert tool["session.id"] == tool["mcp.session.id"]


def test_mcp_over_stdio_is_a_pipe_and_tool_errors_are_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from tests.helpers import CAPTURES

    transcript = CAPTURES / "mcp_stdio_time" / "transcript.jsonl"
    spans = spans_of_lines(jsonl(capsys, tmp_path, str(transcript)))
    mcp = [s for s in spans if "mcp.method.name" in s["attributes"]]
    assert len(mcp) == len(spans) - 1  # all but the agent span
    assert {s["attributes"]["network.transport"] for s in mcp} == {"pipe"}
    assert all(s["kind"] == Span.SPAN_KIND_CLIENT for s in mcp)
    calls = [s for s in mcp if s["attributes"]["mcp.method.name"] == "tools/call"]
    assert [s["name"] for s in calls] == [
        "tools/call get_current_time",
        "tools/call convert_time",
        "tools/call get_current_time",
        "tools/call no_such_tool",
    ]
    failed = {s["name"]: s for s in calls if s.get("status")}
    tool_error = failed["tools/call get_current_time"]
    assert tool_error["attributes"]["error.type"] == "tool_error"
    assert tool_error["status"]["message"].startswith("Error executing tool get_current_time")
    unknown = failed["tools/call no_such_tool"]
    assert unknown["attributes"]["error.type"] == "-32602"
    assert unknown["attributes"]["rpc.response.status_code"] == "-32602"
    assert unknown["status"] == {
        "code": Status.STATUS_CODE_ERROR,
        "message": "Unknown tool: no_such_tool",
    }


def test_tool_type_only_for_the_functions_the_model_was_offered(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from tests.helpers import CORPUS

    cassette = (
        CORPUS / "pydantic__pydantic-ai/tests/models/google/cassettes/test_structured_output"
        "/test_auto_mode_with_function_and_builtin_tools.yaml"
    )
    spans = spans_of_lines(jsonl(capsys, tmp_path, str(cassette)))
    types = {
        s["attributes"]["gen_ai.tool.name"]: s["attributes"].get("gen_ai.tool.type")
        for s in spans
        if s["name"].startswith("execute_tool")
    }
    # GOOGLE_SEARCH_WEB is Gemini's own search tool, not a function of the agent
    assert types == {
        "get_user_country": "function",
        "GOOGLE_SEARCH_WEB": None,
        "final_result": "function",
    }


def test_a_connection_hint_is_a_link_between_roots(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from tests.helpers import ROOT

    spans = spans_of_lines(jsonl(capsys, tmp_path, str(ROOT / "examples" / "agent_chat.pcap")))
    roots = {s["traceId"]: s for s in spans if "parentSpanId" not in s}
    assert len(roots) == 5
    hinted = [s for s in roots.values() if s.get("links")]
    assert hinted
    for root in hinted:
        for link in root["links"]:
            assert link["traceId"] != root["traceId"]
            assert link["spanId"] == roots[link["traceId"]]["spanId"]  # the other run's root
            assert link["attributes"][0]["value"]["stringValue"] == "connection"


def test_semconv_genai_dev_renames_through_the_one_table(tmp_path: Path) -> None:
    """--semconv genai-dev: the genai repository's cache_write name, from names.RENAMES."""
    from agentshark.cli import main
    from tests.helpers import CORPUS

    cassette = (
        CORPUS / "traceloop__openllmetry/packages/opentelemetry-instrumentation-anthropic/"
        "tests/cassettes/test_prompt_caching/test_anthropic_prompt_caching_stream_legacy.yaml"
    )
    texts = {}
    for version in ("1.41.1", "genai-dev"):
        out = tmp_path / f"{version}.jsonl"
        assert main(["export", "otlp", str(cassette), "-o", str(out), "--semconv", version]) == 0
        texts[version] = out.read_text()
    assert "gen_ai.usage.cache_creation.input_tokens" in texts["1.41.1"]
    assert "cache_write" not in texts["1.41.1"]
    dev = texts["genai-dev"]
    assert "gen_ai.usage.cache_write.input_tokens" in dev and "cache_creation" not in dev
    assert '"stringValue":"genai-dev"' in dev.replace(" ", "")
    # nothing else changed: the two files differ only in those names and the version
    same = dev.replace("cache_write", "cache_creation").replace("genai-dev", "1.41.1")
    assert same == texts["1.41.1"]
