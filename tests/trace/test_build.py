"""Calls -> traces: grouping evidence, span trees, tool spans and their executions, on real
calls (corpus cassettes, the MCP captures) and on copies of them with one thing changed."""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
from pathlib import Path

from agentshark.apis.model import Call, Json, ToolCallPart
from agentshark.pipeline import Options, run
from agentshark.trace.build import build_traces
from agentshark.trace.collect import Analysis
from agentshark.trace.history import link_history
from agentshark.trace.model import Span, Trace
from agentshark.trace.spans import HttpRequest
from tests.helpers import CAPTURES as SHARED_CAPTURES
from tests.helpers import CORPUS, ROOT, Collected

DBOS = (
    CORPUS
    / "pydantic__pydantic-ai/tests/cassettes/test_dbos/test_complex_agent_run_in_workflow.yaml"
)
CAPTURES = ROOT / "tests/data/captures"
TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-{}-01"


@functools.cache
def _dbos() -> tuple[Call, ...]:
    return tuple(Collected([str(DBOS)], Options(calls=True)).calls)


def dbos() -> list[Call]:
    return copy.deepcopy(list(_dbos()))


def traces_of(calls: list[Call], http: tuple[HttpRequest, ...] = ()) -> list[Trace]:
    return build_traces(calls, link_history(calls), http)


def kinds(trace: Trace) -> list[tuple[str, str | None]]:
    return [(s.kind, s.call_id or s.tool_call_id) for s in trace.spans]


def test_history_run_is_one_trace_in_loop_order() -> None:
    calls = dbos()
    (trace,) = traces_of(calls)
    assert trace.origin == "history" and trace.trace_id_source == "generated"
    assert trace.calls == [c.id for c in calls]
    agent = trace.spans[0]
    assert agent.kind == "agent" and agent.synthesized and agent.parent_id is None
    assert all(s.parent_id == agent.span_id for s in trace.spans[1:])
    asked = [
        [p.id for m in c.output_messages for p in m.parts if isinstance(p, ToolCallPart)]
        for c in calls
    ]
    expected: list[tuple[str, str | None]] = [("agent", None)]
    for call, ids in zip(calls, asked, strict=True):
        expected.append(("model", call.id))
        expected.extend(("tool", i) for i in ids)
    assert kinds(trace) == expected
    tools = [s for s in trace.spans if s.kind == "tool"]
    assert [t.requested_by for t in tools] == [calls[0].id, calls[0].id, calls[1].id, calls[2].id]
    assert [t.result_in for t in tools] == [calls[1].id, calls[1].id, calls[2].id, None]
    assert all(t.inferred and t.execution is None for t in tools)
    assert tools[2].attributes["arguments"] == {"city": "Mexico City"}
    assert tools[2].attributes["result"] == "sunny"
    assert tools[2].name == "execute_tool get_weather"
    assert trace.spans[1].name == "chat gpt-4o-2024-08-06"
    assert trace.spans[1].attributes["finish_reasons"] == ["tool_calls"]


def another_run() -> list[Call]:
    """The dbos run again as another agent run: other call ids and tool call ids."""
    calls = dbos()
    for call in calls:
        call.id, call.exchange_id = "b" + call.id, "b" + call.exchange_id
        for message in (*call.input_messages, *call.output_messages):
            for part in message.parts:
                if getattr(part, "id", None):
                    part.id = "b" + str(part.id)  # type: ignore[union-attr]
    return calls


def test_two_runs_are_two_traces() -> None:
    traces = traces_of([*dbos(), *another_run()])
    assert [len(t.calls) for t in traces] == [3, 3]
    assert traces[1].calls == ["bcall1", "bcall2", "bcall3"]


def test_lone_call_is_a_single_trace() -> None:
    (trace,) = traces_of(dbos()[:1])
    assert trace.origin == "single" and trace.evidence == []


def test_traceparent_joins_and_names_the_trace() -> None:
    calls = [*dbos(), *another_run()]
    for n, call in enumerate(calls):
        call.ids["traceparent"] = TP.format(f"{n + 1:016x}")
    (trace,) = traces_of(calls)
    assert trace.origin == "traceparent" and trace.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert trace.trace_id_source == "traceparent"
    models = [s for s in trace.spans if s.kind == "model"]
    # one parent-id per request: each request's own client span
    assert [s.span_id for s in models] == [f"{n + 1:016x}" for n in range(6)]
    assert all(s.span_id_source.startswith("traceparent parent-id of") for s in models)


def test_shared_parent_id_is_the_agent_span() -> None:
    calls = dbos()
    for call in calls:
        call.ids["traceparent"] = TP.format("00f067aa0ba902b7")
    (trace,) = traces_of(calls)
    assert trace.spans[0].span_id == "00f067aa0ba902b7"
    assert "shared by 3 requests" in trace.spans[0].span_id_source
    assert len({s.span_id for s in trace.spans}) == len(trace.spans)


def test_invalid_traceparent_joins_nothing() -> None:
    calls = [*dbos(), *another_run()]
    for call in calls:
        call.ids["traceparent"] = "00-00000000000000000000000000000000-00f067aa0ba902b7-01"
    traces = traces_of(calls)
    assert len(traces) == 2 and all(t.trace_id_source == "generated" for t in traces)


def test_application_session_id_joins() -> None:
    calls = [*dbos(), *another_run()]
    for call in calls:
        call.ids["x-session-id"] = "s-42"
        call.id_sources["x-session-id"] = "request header x-session-id"
    (trace,) = traces_of(calls)
    joins = [e for e in trace.evidence if e["origin"] == "app_id"]
    assert joins and joins[0]["id"] == {"x-session-id": "s-42"}
    assert joins[0]["where"] == "request header x-session-id"


def test_user_id_alone_joins_nothing() -> None:
    calls = [*dbos(), *another_run()]
    for call in calls:
        call.ids["user_id"] = "u-1"  # a user has many runs
    assert len(traces_of(calls)) == 2


def test_http_request_holding_the_arguments_is_the_execution() -> None:
    calls = dbos()
    t0 = 100.0
    for n, call in enumerate(calls):
        call.timing.started, call.timing.ended = t0 + 10 * n, t0 + 10 * n + 1
    weather = HttpRequest(
        exchange_id="e99",
        method="GET",
        url="http://127.0.0.1:9/weather?city=Mexico+City",
        body=b"",
        started=t0 + 12,
        ended=t0 + 13,
        status=200,
    )
    elsewhere = HttpRequest(
        exchange_id="e98",
        method="GET",
        url="http://127.0.0.1:9/weather?city=Mexico+City",
        body=b"",
        started=t0 + 25,  # after the result was sent: not this tool's execution
        ended=t0 + 26,
        status=200,
    )
    (trace,) = traces_of(calls, (weather, elsewhere))
    tool = next(s for s in trace.spans if s.name == "execute_tool get_weather")
    assert tool.execution == "e99" and not tool.inferred
    assert (tool.started, tool.ended) == (t0 + 12, t0 + 13)
    assert tool.attributes["confidence"] == 0.6
    assert "e99" in trace.calls and "e98" not in trace.calls


def analysis(path: Path, keylog: Path | None = None) -> Analysis:
    a = Analysis()
    opts = Options(calls=True, keylogs=[str(keylog)] if keylog else [])
    for _ in a.watch(run([str(path)], opts)):
        pass
    a.finish()
    return a


def test_mcp_session_across_connections_is_one_trace() -> None:
    a = analysis(CAPTURES / "mcp_streamable_sessions/capture.pcap")
    (trace,) = a.traces
    assert trace.origin == "mcp_session" and len(trace.calls) == 17
    tools = [s for s in trace.spans if s.kind == "tool"]
    assert [s.name for s in tools] == [
        "execute_tool echo",
        "execute_tool count",
        "execute_tool summarize",
        "execute_tool reserve",
        "execute_tool workspace",
        "execute_tool no_such_tool",
    ]
    assert all(s.execution == s.call_id and s.tool_call_id is None for s in tools)
    assert tools[0].attributes["arguments"] == {"text": "hello"}


def test_model_tool_call_executed_over_mcp(tmp_path: Path) -> None:
    """A model call asking for echo {"text": "hello"} just before the capture's MCP
    tools/call: the MCP call is the execution (same name and arguments, in the window)."""
    a = analysis(CAPTURES / "mcp_streamable_sessions/capture.pcap")
    mcp = next(c for c in a.calls if c.operation == "tools/call")
    model = dbos()[0]
    assert mcp.timing.started is not None
    model.timing.started, model.timing.ended = mcp.timing.started - 2, mcp.timing.started - 1
    part = model.output_messages[0].parts[0]
    assert isinstance(part, ToolCallPart)
    part.name, part.arguments = "mcp_echo", {"text": "hello"}
    calls = [model, *a.calls]
    traces = traces_of(calls)
    trace = next(t for t in traces if model.id in t.calls)
    assert mcp.id in trace.calls
    tool = next(s for s in trace.spans if s.tool_call_id == part.id)
    assert tool.execution == mcp.id and tool.call_id == mcp.id
    assert tool.attributes["confidence"] == 0.8  # "echo" is a suffix of "mcp_echo"
    assert any(e["origin"] == "tool_call" for e in trace.evidence)


def span_names(spans: list[Span]) -> list[str]:
    return [s.name for s in spans]


def test_json_report_has_traces_and_incidents(tmp_path: Path) -> None:
    from agentshark.cli import main

    out = tmp_path / "report.json"
    assert main(["analyze", str(DBOS), "--format", "json", "-o", str(out), "--no-progress"]) == 0
    import json

    report = json.loads(out.read_text())
    assert {"schema", "exchanges", "calls", "traces", "incidents", "sources"} <= set(report)
    (trace,) = report["traces"]
    tool = next(s for s in trace["spans"] if s["kind"] == "tool")
    assert set(tool) >= {"tool_call_id", "requested_by", "result_in", "execution", "inferred"}


def test_generated_ids_differ_between_inputs() -> None:
    """call1 of one capture and call1 of another do not share derived ids."""
    runs = [
        analysis(ROOT / "examples/agent_chat.pcap"),
        analysis(DBOS),
        analysis(CAPTURES / "mcp_legacy_sse/capture.pcap"),
    ]
    firsts = [a.traces[0] for a in runs]
    assert len({t.trace_id for t in firsts}) == 3
    assert len({t.spans[0].span_id for t in firsts}) == 3


def test_slim_calls_keep_what_traces_need() -> None:
    """Analysis keeps slim copies: long strings cut with their digest, tool definitions by
    name; the traces are the ones the whole calls give."""
    from agentshark.trace.collect import KEPT_CHARS, slim

    whole = dbos()
    a = analysis(DBOS)
    assert [t.to_json() for t in a.traces] == [t.to_json() for t in traces_of(whole)]
    slimmed = slim(whole[2])
    assert [d["function"]["name"] for d in slimmed.tool_definitions] == [
        d["function"]["name"] for d in whole[2].tool_definitions
    ]
    assert "parameters" not in slimmed.tool_definitions[0]["function"]
    long = "x" * (KEPT_CHARS * 4)
    call = dbos()[0]
    call.extras["big"] = {"text": long}
    small = slim(call).extras["big"]["text"]
    assert len(small) < KEPT_CHARS and small.startswith("x" * 16)
    assert f"{len(long)} chars" in small
    assert slim(call).extras["big"] == slim(copy.deepcopy(call)).extras["big"]


def weather_request(exchange_id: str, url: str, body: bytes = b"") -> HttpRequest:
    return HttpRequest(
        exchange_id=exchange_id,
        method="POST" if body else "GET",
        url=url,
        body=body,
        started=None,
        ended=None,
        status=200,
    )


def test_http_on_the_model_host_or_naming_the_call_id_is_no_execution() -> None:
    calls = dbos()
    telemetry = weather_request(
        "e97",
        "https://api.openai.com/v1/traces/ingest",
        b'{"span": {"tool_call_id": "call_Vz0Sie91Ap56nH0ThKGrZXT7", "city": "Mexico City"}}',
    )
    (trace,) = build_traces(calls, link_history(calls), (telemetry,))
    tool = next(s for s in trace.spans if s.name == "execute_tool get_weather")
    assert tool.inferred and tool.execution is None  # it names the model's call id
    other_tool_api = weather_request("e96", "https://api.openai.com/weather?city=Mexico+City")
    (trace,) = build_traces(calls, link_history(calls), (other_tool_api,), {"api.openai.com"})
    tool = next(s for s in trace.spans if s.name == "execute_tool get_weather")
    assert tool.inferred  # the model API's own host
    (trace,) = build_traces(calls, link_history(calls), (other_tool_api,))
    tool = next(s for s in trace.spans if s.name == "execute_tool get_weather")
    assert tool.execution == "e96"


def test_mcp_session_whose_tools_were_offered_joins_the_run() -> None:
    """pydantic-ai lists an MCP server's tools in one session and calls them in another:
    the listing session joins the run because every tool it listed is offered to the model."""
    a = analysis(
        CORPUS / "pydantic__pydantic-ai/tests/cassettes/test_dbos/test_fastmcp_toolset.yaml"
    )
    (trace,) = a.traces
    joins = [e for e in trace.evidence if e["origin"] == "tool_definitions"]
    assert joins and "tools/list" in joins[0]["detail"]
    listing = {c.id for c in a.calls if c.operation == "tools/list"}
    assert listing <= set(trace.calls)


def test_connection_hint_never_joins() -> None:
    a = analysis(ROOT / "examples/agent_chat.pcap")
    assert len(a.traces) == 5
    hinted = [t for t in a.traces if t.hints]
    assert hinted
    hint = hinted[0].hints[0]
    assert hint["origin"] == "connection" and 0 <= hint["gap"] <= 5.0
    assert hint["trace_id"] in {t.trace_id for t in a.traces} - {hinted[0].trace_id}


def test_compressed_request_body_is_matched_decoded() -> None:
    import gzip

    from agentshark.trace.collect import _request
    from tests.helpers import http_exchange

    body = gzip.compress(b'{"city": "Mexico City", "units": "metric"}')
    x = http_exchange(
        method="POST",
        url="http://127.0.0.1:9/weather",
        target="/weather",
        request_body=body,
        request_headers=[("Content-Encoding", "gzip"), ("Content-Type", "application/json")],
        response_pieces=[(1.0, b"{}")],
    )
    req = _request(x)
    assert req is not None and b"Mexico City" in req.body
    req = dataclasses.replace(req, started=None, ended=None)  # the cassette has no times
    calls = dbos()
    (trace,) = build_traces(calls, link_history(calls), (req,))
    tool = next(s for s in trace.spans if s.name == "execute_tool get_weather")
    assert tool.execution == x.id


def _results(a: Analysis) -> dict[str | None, Json]:
    return {
        s.name: s.attributes.get("result")
        for t in a.traces
        for s in t.spans
        if s.kind == "tool" and "result" in s.attributes
    }


def test_a2a_streamed_chunks_are_the_result_as_sent() -> None:
    """a2a-sdk 0.3: the artifact arrives as "The weather in Toky" then "o is 24C and sunny."
    (append: true); the tool span's result is that text, with nothing put between."""
    truth = json.loads((SHARED_CAPTURES / "a2a_jsonrpc_v03/truth.json").read_text())
    (step,) = [s for s in truth["steps"] if s["step"] == "send_streaming_message"]
    sent = "".join(e["text"] for e in step["events"] if "text" in e)
    results = _results(analysis(SHARED_CAPTURES / "a2a_jsonrpc_v03/capture.pcap"))
    assert results["execute_tool message/stream"] == sent
    # the non-streamed reply holds the same artifact's two stored parts: one text too
    assert results["execute_tool message/send"] == "The weather in Paris is 18C and cloudy."


def test_a2a_1_0_chunks_keep_their_spaces() -> None:
    """a2a-sdk 1.0: " on", " loopback"... keep their leading space in the analysis's copy;
    the final status message ("done") is a text of its own."""
    root = CAPTURES / "a2a_v1_jsonrpc"
    truth = json.loads((root / "truth.json").read_text())
    (step,) = [s for s in truth["steps"] if s["label"].startswith("SendStreamingMessage")]
    sent = "".join(t for e in step["events"] for t in e.get("artifact_text", []))
    results = _results(analysis(root / "capture.pcap"))
    assert results["execute_tool SendStreamingMessage"] == "done\n" + sent


GOOSE = CORPUS / "block__goose/crates/goose/tests/mcp_replays"


def _stdio_traces(*paths: Path) -> tuple[list[Trace], list[Call]]:
    a = Analysis()
    for _ in a.watch(run([str(p) for p in paths], Options(calls=True))):
        pass
    a.finish()
    return a.traces, a.calls


def test_mcp_stdio_session_is_one_trace() -> None:
    """An MCP stdio transcript is one session (one server process), as an HTTP session with
    its Mcp-Session-Id is: the merged transcript, and its two one-direction files."""
    stdio = SHARED_CAPTURES / "mcp_stdio_time"
    for paths in ((stdio / "transcript.jsonl",), (stdio / "c2s.jsonl", stdio / "s2c.jsonl")):
        traces, calls = _stdio_traces(*paths)
        (trace,) = traces
        assert trace.origin == "mcp_session" and set(trace.calls) == {c.id for c in calls}
        assert len(calls) == 10
        (conn,) = {e["connection"] for e in trace.evidence}
        assert isinstance(conn, str) and conn.endswith("stdio1")
        tools = [s for s in trace.spans if s.kind == "tool"]
        assert len(tools) == 4 and all(s.execution == s.call_id for s in tools)


def test_goose_replays_are_one_trace_each() -> None:
    paths = sorted(GOOSE.iterdir())
    traces, calls = _stdio_traces(*paths)
    assert len(paths) == 3 and len(traces) == 3
    assert all(t.origin == "mcp_session" for t in traces)
    assert sum(len(t.calls) for t in traces) == len(calls)
