"""MCP across exchanges: 2024-11-05 responses on the GET stream, server requests answered by
later POSTs, the 2026-07-28 stateless fields; hand-built exchanges for the rules (the
captures made by the real SDK are checked in tests/test_agent_captures.py)."""

from __future__ import annotations

from typing import Any

import orjson

from agentshark.apis.mcp.calls import FAMILIES
from agentshark.apis.mcp.sessions import MAX_HELD, McpSessions
from agentshark.apis.model import Call, ToolCallResponsePart
from agentshark.apis.registry import recognize
from agentshark.model import Exchange
from tests.apis.mcp.test_calls import SESSION, VERSION, exchange, rpc, sse

LEGACY_SESSION = "0f3c"
ENDPOINT = f"/messages/?session_id={LEGACY_SESSION}"


def call_of(x: Exchange, call_id: str) -> Call:
    call = recognize(x, call_id, registry=FAMILIES)
    assert call is not None
    return call


def legacy_post(message: dict[str, Any], call_id: str) -> Call:
    x = exchange(message, b"Accepted", status=202, content_type="text/plain", request_headers=())
    assert x.request is not None
    x.request.target = ENDPOINT
    x.request.url = "http://127.0.0.1:8000" + ENDPOINT
    return call_of(x, call_id)


def legacy_stream(*messages: Any) -> Call:
    body = b"event: endpoint\ndata: " + ENDPOINT.encode() + b"\n\n" + sse(*messages)
    x = exchange(None, body, method="GET", content_type="text/event-stream", request_headers=())
    return call_of(x, "stream")


def released(stage: McpSessions, *calls: Call) -> list[str]:
    out: list[str] = []
    for call in calls:
        out.extend(c.id for c in stage.feed(call))
    return out


def test_legacy_requests_wait_for_the_stream() -> None:
    stage = McpSessions()
    init = legacy_post(rpc("initialize", {"protocolVersion": "2024-11-05"}, id=0), "a")
    assert init.extras["response_via"] == "session stream"
    assert init.ids["mcp_session_id"] == LEGACY_SESSION
    assert init.id_sources["mcp_session_id"] == "request URL query session_id"
    note = legacy_post(rpc("notifications/initialized", id=None), "b")
    tool = legacy_post(rpc("tools/call", {"name": "echo", "arguments": {"x": 1}}, id=1), "c")
    assert not init.complete and not tool.complete
    assert released(stage, init, note, tool) == ["b"]  # notifications need nothing
    stream = legacy_stream(
        {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2024-11-05"}},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}},
        {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "1"}]}},
    )
    assert stream.extras["mcp_transport"] == "http+sse"
    assert stream.extras["endpoint"] == ENDPOINT
    assert stream.ids["mcp_session_id"] == LEGACY_SESSION
    assert released(stage, stream) == ["a", "c", "stream"]
    assert init.complete and init.extras["result"] == {"protocolVersion": "2024-11-05"}
    assert init.ids["mcp_protocol_version"] == "2024-11-05"
    assert init.extras["response_via"] == "x1 response stream event 1"  # 0: endpoint
    assert tool.complete and tool.error is None
    part = tool.output_messages[0].parts[0]
    assert isinstance(part, ToolCallResponsePart) and part.id == "1"
    kinds = [(m["kind"], m.get("answers")) for m in stream.extras["stream_messages"]]
    assert kinds == [("response", "a"), ("notification", None), ("response", "c")]
    assert "result" not in stream.extras["stream_messages"][0]  # not reported twice
    assert stage.close() == []


def test_legacy_request_without_stream_is_released_at_the_end() -> None:
    stage = McpSessions()
    tool = legacy_post(rpc("tools/call", {"name": "echo"}, id=5), "a")
    assert released(stage, tool) == []
    out = stage.close()
    assert [c.id for c in out] == ["a"]
    assert not tool.complete
    assert [d.code for d in tool.diagnostics] == ["mcp.response_not_seen"]


def test_legacy_error_on_the_stream() -> None:
    stage = McpSessions()
    tool = legacy_post(rpc("tools/call", {"name": "nope"}, id=2), "a")
    stage.feed(tool)
    stream = legacy_stream(
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32602, "message": "unknown tool"}}
    )
    stage.feed(stream)
    assert tool.error is not None and tool.error.code == "-32602"
    assert tool.error.message == "unknown tool" and tool.complete
    assert stream.error is None  # the stream itself did not fail


def test_same_id_in_another_session_is_not_an_answer() -> None:
    stage = McpSessions()
    tool = legacy_post(rpc("tools/call", {"name": "echo"}, id=1), "a")
    stage.feed(tool)
    other = exchange(
        None,
        b"event: endpoint\ndata: /messages/?session_id=other\n\n"
        + sse({"jsonrpc": "2.0", "id": 1, "result": {"content": []}}),
        method="GET",
        content_type="text/event-stream",
        request_headers=(),
    )
    assert [c.id for c in stage.feed(call_of(other, "s"))] == ["s"]
    assert not tool.complete
    assert [c.id for c in stage.close()] == ["a"]


def sampling_reply(request_id: Any = 0) -> Exchange:
    """The POST that carried a tools/call whose SSE reply holds a sampling request."""
    return exchange(
        rpc("tools/call", {"name": "summarize", "arguments": {}}, id=7),
        sse(
            rpc(
                "sampling/createMessage",
                {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]},
                id=request_id,
            ),
            {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "ok"}]}},
        ),
        content_type="text/event-stream",
    )


def posted_answer(request_id: Any = 0, error: bool = False) -> Exchange:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
    if error:
        message["error"] = {"code": -1, "message": "user declined"}
    else:
        message["result"] = {"role": "assistant", "content": {"type": "text", "text": "hello"}}
    return exchange(message, b"", status=202)


def test_server_request_answered_by_a_later_post() -> None:
    stage = McpSessions()
    tool, answer = call_of(sampling_reply(), "t"), call_of(posted_answer(), "r")
    assert answer.operation is None and "client_response" in answer.extras
    assert released(stage, tool, answer) == ["t", "r"]
    assert answer.operation == "sampling/createMessage"
    assert answer.extras["direction"] == "server_to_client"
    assert answer.extras["server_request_in"] == {
        "call_id": "t",
        "at": "x1 response stream event 0",
    }
    assert answer.request_params["messages"][0]["role"] == "user"
    assert answer.extras["result"]["content"]["text"] == "hello"
    assert "client_response" not in answer.extras


def test_answer_before_its_request_is_held() -> None:
    stage = McpSessions()
    answer = call_of(posted_answer(error=True), "r")
    assert released(stage, answer) == []
    assert released(stage, call_of(sampling_reply(), "t")) == ["r", "t"]
    assert answer.operation == "sampling/createMessage"
    assert answer.error is not None and answer.error.message == "user declined"


def test_string_and_number_ids_differ() -> None:
    stage = McpSessions()
    released(stage, call_of(sampling_reply(request_id="0"), "t"))
    answer = call_of(posted_answer(request_id=0), "r")
    assert released(stage, answer) == []
    assert [c.id for c in stage.close()] == ["r"]
    assert [d.code for d in answer.diagnostics] == ["mcp.server_request_not_seen"]
    assert not answer.complete  # which method it answers is unknown


def test_a_cut_request_stays_incomplete_when_its_response_comes() -> None:
    """A 202-answered request whose own body lost bytes to a capture gap: the response on
    the stream is kept, but the call is not whole evidence of what was asked."""
    stage = McpSessions()
    message = rpc("tools/call", {"name": "echo", "arguments": {"x": 1}}, id=1)
    x = exchange(message, b"Accepted", status=202, content_type="text/plain", request_headers=())
    assert x.request is not None
    x.request.target = ENDPOINT
    x.request.url = "http://127.0.0.1:8000" + ENDPOINT
    x.request.complete = False
    x.request.body.gap_bytes = 3
    tool = call_of(x, "c")
    assert tool.cut and tool.operation == "tools/call"
    stream = legacy_stream(
        {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "1"}]}}
    )
    assert released(stage, tool, stream) == ["c", "stream"]
    assert tool.output_messages and not tool.complete
    assert [d.code for d in tool.diagnostics].count("call.evidence_incomplete") == 1


def test_holding_is_bounded() -> None:
    stage = McpSessions()
    out: list[str] = []
    for n in range(MAX_HELD + 3):
        out.extend(c.id for c in stage.feed(legacy_post(rpc("ping", id=n), f"p{n}")))
    assert out == ["p0", "p1", "p2"]
    assert len(stage.close()) == MAX_HELD


def test_stateless_2026_fields() -> None:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
        "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    }
    request = rpc("tools/call", {"name": "book", "arguments": {"n": 2}, "_meta": meta}, id=3)
    asked = {
        "resultType": "input_required",
        "inputRequests": {"r1": rpc("elicitation/create", {"message": "confirm?"}, id=None)},
        "requestState": "opaque",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "2"}},
    }
    x = exchange(
        request,
        orjson.dumps({"jsonrpc": "2.0", "id": 3, "result": asked}),
        request_headers=[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "book"),
        ],
    )
    call = call_of(x, "c")
    assert call.ids["mcp_protocol_version"] == "2026-07-28"
    assert call.id_sources["mcp_protocol_version"] == "request header MCP-Protocol-Version"
    assert call.extras["client_info"] == {"name": "c", "version": "1"}
    assert call.extras["server_info"] == {"name": "s", "version": "2"}
    assert call.extras["result_type"] == "input_required"
    assert call.extras["result"]["requestState"] == "opaque"
    assert call.output_messages == []  # asking for input is not the tool's result
    assert call.extras["mcp_headers"] == {"Mcp-Method": "tools/call", "Mcp-Name": "book"}
    assert "mcp_session_id" not in call.ids and call.complete and call.diagnostics == []
    assert call.ids["traceparent"] == meta["traceparent"]
    retry = dict(request)
    retry["params"] = {**request["params"], "inputResponses": {"r1": {"action": "accept"}}}
    retry["params"]["requestState"] = "opaque"
    done = {"resultType": "complete", "content": [{"type": "text", "text": "booked"}]}
    second = call_of(
        exchange(retry, orjson.dumps({"jsonrpc": "2.0", "id": 3, "result": done})), "d"
    )
    assert second.request_params["requestState"] == "opaque"
    assert second.request_params["inputResponses"] == {"r1": {"action": "accept"}}
    assert second.extras["result_type"] == "complete"
    assert second.output_messages[0].parts[1].type == "text"


def test_mcp_method_header_mismatch_is_a_warning() -> None:
    x = exchange(rpc("tools/list", id=1), b"", request_headers=[("Mcp-Method", "tools/call")])
    call = call_of(x, "c")
    assert [d.code for d in call.diagnostics] == ["mcp.header_mismatch"]


def test_legacy_without_session_id_pairs_by_endpoint() -> None:
    stage = McpSessions()
    x = exchange(rpc("ping", id=1), b"Accepted", status=202, request_headers=())
    assert x.request is not None
    x.request.target = "/messages"
    ping = call_of(x, "p")
    assert ping.extras["response_via"] == "session stream" and "mcp_session_id" not in ping.ids
    assert released(stage, ping) == []
    stream = exchange(
        None,
        b"event: endpoint\ndata: /messages\n\n" + sse({"jsonrpc": "2.0", "id": 1, "result": {}}),
        method="GET",
        content_type="text/event-stream",
        request_headers=(),
    )
    assert released(stage, call_of(stream, "s")) == ["p", "s"]
    assert ping.complete and ping.extras["result"] == {}


def test_streamable_calls_pass_through() -> None:
    stage = McpSessions()
    call = call_of(
        exchange(rpc("ping", id=1), orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": {}})), "p"
    )
    assert [c.id for c in stage.feed(call)] == ["p"] and call.complete


def test_cut_reply_answered_on_a_resumed_stream() -> None:
    """2025-03-26+: the POST's SSE reply ends before the response; the client resumes with a
    GET carrying Last-Event-ID and the server sends the response there."""
    stage = McpSessions()
    cut = exchange(
        rpc("tools/call", {"name": "slow", "arguments": {}}, id=4),
        sse(rpc("notifications/progress", {"progressToken": 4, "progress": 1}, id=None)),
        content_type="text/event-stream",
        response_complete=False,
    )
    tool = call_of(cut, "t")
    assert tool.extras["response_via"] == "resumed stream" and not tool.complete
    assert released(stage, tool) == []
    resumed = exchange(
        None,
        sse({"jsonrpc": "2.0", "id": 4, "result": {"content": [{"type": "text", "text": "ok"}]}}),
        method="GET",
        content_type="text/event-stream",
        request_headers=(SESSION, VERSION, ("Last-Event-ID", "0")),
    )
    stream = call_of(resumed, "g")
    assert stream.extras["last_event_id"] == "0"
    assert released(stage, stream) == ["t", "g"]
    assert tool.complete and tool.output_messages[0].parts[1].type == "text"
    assert tool.extras["response_via"] == "x1 response stream event 0"


def test_cut_reply_never_resumed_is_said() -> None:
    stage = McpSessions()
    cut = exchange(
        rpc("tools/call", {"name": "slow"}, id=4),
        b"",
        content_type="text/event-stream",
        response_complete=False,
    )
    released(stage, call_of(cut, "t"))
    (tool,) = stage.close()
    assert [d.code for d in tool.diagnostics] == ["mcp.response_not_seen"]
    assert "Last-Event-ID" in tool.diagnostics[0].message


def test_task_augmented_tool_call_and_its_result() -> None:
    """2025-11-25 tasks: tools/call with params.task gets a CreateTaskResult; tasks/get and
    tasks/result name the task; tasks/result carries the tool's result."""
    stage = McpSessions()
    created = {"task": {"taskId": "tk-1", "status": "working", "createdAt": "x"}}
    start = call_of(
        exchange(
            rpc("tools/call", {"name": "render", "arguments": {"n": 1}, "task": {"ttl": 60}}, id=1),
            orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": created}),
        ),
        "a",
    )
    assert start.ids["mcp_task_id"] == "tk-1" and start.id_sources["mcp_task_id"] == (
        "result.task.taskId"
    )
    assert start.output_messages == [] and start.extras["result"] == created
    assert start.request_params["task"] == {"ttl": 60}
    status = call_of(
        exchange(
            rpc("tasks/get", {"taskId": "tk-1"}, id=2),
            orjson.dumps(
                {"jsonrpc": "2.0", "id": 2, "result": {"taskId": "tk-1", "status": "completed"}}
            ),
        ),
        "b",
    )
    done = {"content": [{"type": "text", "text": "rendered"}], "isError": False}
    result = call_of(
        exchange(
            rpc("tasks/result", {"taskId": "tk-1"}, id=3),
            orjson.dumps({"jsonrpc": "2.0", "id": 3, "result": done}),
        ),
        "c",
    )
    assert released(stage, start, status, result) == ["a", "b", "c"]
    assert status.extras["task_of"] == "a" and result.extras["task_of"] == "a"
    assert status.extras["result"]["status"] == "completed"
    part = result.output_messages[0].parts[0]
    assert isinstance(part, ToolCallResponsePart) and part.response == done["content"]
    note = call_of(
        exchange(
            rpc(
                "notifications/message",
                {
                    "level": "info",
                    "data": "50%",
                    "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "tk-1"}},
                },
                id=None,
            ),
            b"",
            status=202,
        ),
        "d",
    )
    assert note.ids["mcp_task_id"] == "tk-1"
    assert released(stage, note) == ["d"] and note.extras["task_of"] == "a"
    from agentshark.trace.build import build_traces

    (trace,) = build_traces([start, status, result, note], {})
    (tool,) = [s for s in trace.spans if s.kind == "tool"]
    assert tool.execution == "a" and tool.attributes["result_from"] == "c"
    assert tool.attributes["result"] == done["content"]
