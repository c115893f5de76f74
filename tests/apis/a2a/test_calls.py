"""A2A (0.3 and 1.0): the a2a-sdk loopback capture against its truth, hand-written 1.0 JSON-RPC
and REST exchanges (shapes from ``../shared/reference/standards.md`` §7.4), what is not ours,
and a fuzz invariant.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshark.apis.a2a.calls import FAMILIES, part_from
from agentshark.apis.model import BlobPart, Call, GenericPart, TextPart, UriPart
from agentshark.apis.registry import families, recognize
from agentshark.apis.view import ExchangeView
from agentshark.model import Body, Exchange
from tests.helpers import CAPTURES, Collected, http_exchange

CAPTURE = CAPTURES / "a2a_jsonrpc_v03"
BASE = "http://agent.test"
RPC_URL = BASE + "/a2a/jsonrpc"
V10 = (("content-type", "application/json"), ("A2A-Version", "1.0"))


def exchange(
    request: bytes | dict[str, Any] | None,
    response: bytes | dict[str, Any] | None,
    *,
    url: str = RPC_URL,
    method: str = "POST",
    status: int = 200,
    content_type: str = "application/json",
    request_headers: Sequence[tuple[str, str]] = V10,
    response_complete: bool = True,
) -> Exchange:
    body = orjson.dumps(request) if isinstance(request, dict) else request or b""
    resp = orjson.dumps(response) if isinstance(response, dict) else response
    return http_exchange(
        method=method,
        url=url,
        target=url.split("/", 3)[-1],
        request_body=body,
        request_headers=list(request_headers),
        response_pieces=None
        if resp is None
        else [(1.0 + i / 10, p) for i, p in enumerate(_pieces(resp))],
        status=status,
        response_headers=[("content-type", content_type)],
        response_complete=response_complete,
        response_started=1.0,
        response_ended=2.0,
    )


def _pieces(body: bytes) -> list[bytes]:
    """An SSE body one event per piece (first_token then has a time to find); else whole."""
    if body.startswith((b"data:", b"event:")):
        return [e + b"\n\n" for e in body.split(b"\n\n") if e]
    return [body]


def parse(ex: Exchange) -> Call:
    call = recognize(ex, "c1", registry=FAMILIES)
    assert call is not None
    assert call.api == "a2a"
    return call


def sse(*docs: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + orjson.dumps(d) + b"\n\n" for d in docs)


def rpc(method: str, params: dict[str, Any], rid: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def result(value: Any, rid: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": value}


# -- the a2a-sdk 0.3 capture ----------------------------------------------------------------


@pytest.fixture(scope="module")
def capture_calls() -> list[Call]:
    collected = Collected([str(CAPTURE / "capture.pcap")])
    calls = [recognize(ex, ex.id, registry=FAMILIES) for ex in collected.exchanges]
    assert all(c is not None for c in calls)
    return [c for c in calls if c is not None]


@pytest.fixture(scope="module")
def truth() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((CAPTURE / "truth.json").read_text())
    return loaded


def _wire_state(truth: dict[str, Any], number: int) -> str:
    """The truth's enum number as 0.3 spells it on the wire (3 -> "completed")."""
    names = {v: k for k, v in truth["task_state_enum"].items()}
    return str(names[number]).removeprefix("TASK_STATE_").lower().replace("_", "-")


def test_capture_methods_and_jsonrpc_ids(capture_calls: list[Call], truth: dict[str, Any]) -> None:
    assert [c.operation for c in capture_calls] == [
        "GetAgentCard",
        *(r["method"] for r in truth["jsonrpc_requests"]),
    ]
    rpc_calls = capture_calls[1:]
    assert [c.ids["jsonrpc_id"] for c in rpc_calls] == [r["id"] for r in truth["jsonrpc_requests"]]
    assert all(c.id_sources["jsonrpc_id"] == "request $.id" for c in rpc_calls)
    assert all(c.extras["a2a_version"] == "0.3" for c in rpc_calls)
    assert all(c.complete for c in capture_calls)
    assert all(c.api == "a2a" for c in capture_calls)


def test_capture_agent_card(capture_calls: list[Call], truth: dict[str, Any]) -> None:
    step = truth["steps"][0]
    card = capture_calls[0].extras["agent_card"]
    assert card["name"] == step["name"]
    assert card["interfaces"] == step["interfaces"]
    assert card["protocol_version"] == truth["protocol_version"]
    assert [s["id"] for s in card["skills"]] == ["weather"]
    assert capture_calls[0].error is None


def test_capture_send_message(capture_calls: list[Call], truth: dict[str, Any]) -> None:
    step, call = truth["steps"][1], capture_calls[1]
    assert call.ids["a2a_message_id"] == step["message_id"]
    assert call.ids["a2a_context_id"] == step["context_id"]
    assert call.ids["a2a_task_id"] == step["task_id"]
    assert call.id_sources["a2a_task_id"] == "response $.result.id"
    assert call.input_messages[0].role == "user"
    assert call.input_messages[0].parts == [TextPart(content=step["text"])]
    state = _wire_state(truth, step["events"][0]["state"])
    assert call.finish_reasons == [state]
    assert call.extras["task"]["state"] == state
    out = call.output_messages[0]
    assert out.finish_reason == state
    text = "".join(p.content for p in out.parts if isinstance(p, TextPart))
    assert text == "The weather in Paris is 18C and cloudy."
    assert not call.stream and call.error is None


def test_capture_stream(capture_calls: list[Call], truth: dict[str, Any]) -> None:
    step, call = truth["steps"][2], capture_calls[2]
    assert call.stream and call.complete
    assert call.ids["a2a_message_id"] == step["message_id"]
    assert call.ids["a2a_context_id"] == step["context_id"]
    assert call.ids["a2a_task_id"] == step["task_id"]
    events = call.extras["stream_events"]
    assert len(events) == step["n_events"]
    for got, want in zip(events, step["events"], strict=True):
        assert got["kind"] == want["kind"].replace("_", "-")
        if "state" in want:
            assert got["state"] == _wire_state(truth, want["state"])
        if "artifact_id" in want:
            assert got["artifact_id"] == want["artifact_id"]
            assert got["append"] == want["append"]
            assert got["last_chunk"] == want["last_chunk"]
    assert events[-1]["final"] is True
    out = call.output_messages[0]
    text = "".join(p.content for p in out.parts if isinstance(p, TextPart))
    assert text == "".join(e["text"] for e in step["events"] if "text" in e)
    # the chunks of the artifact are one part: "The weather in Toky" + "o is 24C and sunny."
    (part,) = [
        p for p in out.parts if isinstance(p, TextPart) and p.provider_details.get("artifact_id")
    ]
    assert part.content == text and part.provider_details["artifact_id"] == "forecast"
    assert call.finish_reasons == [_wire_state(truth, step["events"][-1]["state"])]
    assert call.timing.first_token is not None
    assert call.timing.first_byte is not None
    assert call.timing.first_token >= call.timing.first_byte


def test_capture_get_task(capture_calls: list[Call], truth: dict[str, Any]) -> None:
    step, call = truth["steps"][3], capture_calls[3]
    assert call.ids["a2a_task_id"] == step["task_id"]
    assert call.id_sources["a2a_task_id"] == "request $.params.id"
    assert call.finish_reasons == [_wire_state(truth, step["state"])]
    assert call.extras["task"]["history"] == step["history_len"]
    assert len(call.extras["task"]["artifacts"]) == step["artifacts"]


def test_capture_unknown_task_is_an_error(capture_calls: list[Call], truth: dict[str, Any]) -> None:
    step, call = truth["steps"][4], capture_calls[4]
    assert call.ids["a2a_task_id"] == step["task_id"]
    assert call.error is not None
    assert call.error.type == "jsonrpc"
    assert call.error.code == "-32001"
    assert call.error.message == step["detail"]
    assert call.extras["error_name"] == step["raised"]
    assert call.output_messages == [] and call.finish_reasons == []


def test_capture_with_the_whole_registry(capture_calls: list[Call]) -> None:
    """No other family outbids A2A on its own traffic."""
    collected = Collected([str(CAPTURE / "capture.pcap")])
    for ex in collected.exchanges:
        call = recognize(ex, ex.id, registry=(*families(), *FAMILIES))
        assert call is not None and call.api == "a2a"


# -- 1.0 JSON-RPC ---------------------------------------------------------------------------

USER_1_0 = {
    "messageId": "m-1",
    "contextId": "ctx-1",
    "role": "ROLE_USER",
    "parts": [
        {"text": "Summarize this", "mediaType": "text/plain"},
        {"raw": "aGVsbG8=", "mediaType": "image/png", "filename": "a.png"},
        {"url": "https://example.test/report.pdf", "mediaType": "application/pdf"},
        {"data": {"city": "Paris"}, "mediaType": "application/json"},
    ],
}
TASK_1_0 = {
    "id": "task-1",
    "contextId": "ctx-1",
    "status": {
        "state": "TASK_STATE_COMPLETED",
        "message": {
            "messageId": "m-2",
            "role": "ROLE_AGENT",
            "parts": [{"text": "Done."}],
        },
    },
    "artifacts": [{"artifactId": "a-1", "parts": [{"text": "Summary: hello"}]}],
}


def test_send_message_1_0_with_a_task() -> None:
    call = parse(
        exchange(
            rpc("SendMessage", {"message": USER_1_0}, rid=7),
            result({"task": TASK_1_0}, rid=7),
        )
    )
    assert call.operation == "SendMessage"
    assert call.extras["method_set"] == "1.0"
    assert call.extras["a2a_version"] == "1.0"
    assert call.ids == {
        "jsonrpc_id": "7",
        "a2a_message_id": "m-1",
        "a2a_context_id": "ctx-1",
        "a2a_task_id": "task-1",
    }
    assert call.id_sources["a2a_task_id"] == "response $.result.task.id"
    (inp,) = call.input_messages
    assert inp.role == "ROLE_USER"
    text, blob, uri, data = inp.parts
    assert text == TextPart(content="Summarize this", provider_details={"media_type": "text/plain"})
    assert blob == BlobPart(
        mime_type="image/png",
        modality="image",
        content="aGVsbG8=",
        provider_details={"filename": "a.png"},
    )
    assert uri == UriPart(
        uri="https://example.test/report.pdf", mime_type="application/pdf", modality=None
    )
    assert data == GenericPart(
        type="data", fields={"data": {"city": "Paris"}, "mediaType": "application/json"}
    )
    (out,) = call.output_messages
    assert out.role == "ROLE_AGENT"
    assert [p.content for p in out.parts if isinstance(p, TextPart)] == ["Done.", "Summary: hello"]
    assert out.finish_reason == "TASK_STATE_COMPLETED"
    assert call.finish_reasons == ["TASK_STATE_COMPLETED"]
    assert call.complete and call.error is None


def test_send_message_1_0_with_a_message() -> None:
    reply = {
        "messageId": "m-3",
        "contextId": "ctx-1",
        "role": "ROLE_AGENT",
        "parts": [{"text": "Hi"}],
    }
    call = parse(exchange(rpc("SendMessage", {"message": USER_1_0}), result({"message": reply})))
    (out,) = call.output_messages
    assert out.role == "ROLE_AGENT" and out.parts == [TextPart(content="Hi")]
    assert out.finish_reason is None and call.finish_reasons == []
    assert "a2a_task_id" not in call.ids


STREAM_1_0 = [
    result(
        {"task": {"id": "t-9", "contextId": "c-9", "status": {"state": "TASK_STATE_SUBMITTED"}}}
    ),
    result(
        {
            "statusUpdate": {
                "taskId": "t-9",
                "contextId": "c-9",
                "status": {"state": "TASK_STATE_WORKING"},
            }
        }
    ),
    result(
        {
            "artifactUpdate": {
                "taskId": "t-9",
                "contextId": "c-9",
                "artifact": {"artifactId": "out", "parts": [{"text": "Hello, "}]},
            }
        }
    ),
    result(
        {
            "artifactUpdate": {
                "taskId": "t-9",
                "contextId": "c-9",
                "append": True,
                "lastChunk": True,
                "artifact": {"artifactId": "out", "parts": [{"text": "world"}]},
            }
        }
    ),
    result(
        {
            "statusUpdate": {
                "taskId": "t-9",
                "contextId": "c-9",
                "status": {"state": "TASK_STATE_COMPLETED"},
            }
        }
    ),
]


def test_streaming_message_1_0() -> None:
    call = parse(
        exchange(
            rpc("SendStreamingMessage", {"message": USER_1_0}),
            sse(*STREAM_1_0),
            content_type="text/event-stream",
        )
    )
    assert call.stream and call.complete
    assert [e["kind"] for e in call.extras["stream_events"]] == [
        "task",
        "status-update",
        "artifact-update",
        "artifact-update",
        "status-update",
    ]
    assert call.extras["stream_events"][-1]["state"] == "TASK_STATE_COMPLETED"
    (out,) = call.output_messages
    # two chunks of one artifact ("append": true): one text, joined as sent
    assert [p.content for p in out.parts if isinstance(p, TextPart)] == ["Hello, world"]
    assert call.finish_reasons == ["TASK_STATE_COMPLETED"]
    assert call.ids["a2a_task_id"] == "t-9"
    assert call.id_sources["a2a_task_id"] == "response event 0 $.result.task.id"
    assert call.timing.first_token == pytest.approx(1.2)


def test_stream_without_a_final_status_is_incomplete() -> None:
    call = parse(
        exchange(
            rpc("SendStreamingMessage", {"message": USER_1_0}),
            sse(*STREAM_1_0[:-1]),
            content_type="text/event-stream",
        )
    )
    assert call.stream and not call.complete
    assert call.finish_reasons == ["TASK_STATE_WORKING"]
    assert any(d.code == "a2a.stream_unfinished" for d in call.diagnostics)


def test_stream_cut_mid_event_is_incomplete() -> None:
    body = sse(*STREAM_1_0)
    call = parse(
        exchange(
            rpc("message/stream", {"message": USER_1_0}),
            body[:-20],
            content_type="text/event-stream",
            response_complete=False,
        )
    )
    assert not call.complete
    assert len(call.extras["stream_events"]) == 4


def test_stream_replaced_artifact_and_input_required_ends() -> None:
    events = [
        result(
            {
                "kind": "artifact-update",
                "taskId": "t",
                "artifact": {"artifactId": "a", "parts": [{"kind": "text", "text": "old"}]},
            }
        ),
        result(
            {
                "kind": "artifact-update",
                "taskId": "t",
                "artifact": {"artifactId": "a", "parts": [{"kind": "text", "text": "new"}]},
            }
        ),
        result(
            {
                "kind": "status-update",
                "taskId": "t",
                "final": False,
                "status": {"state": "input-required"},
            }
        ),
    ]
    call = parse(
        exchange(rpc("message/stream", {}), sse(*events), content_type="text/event-stream")
    )
    assert call.complete
    assert call.output_messages[0].parts == [
        TextPart(content="new", provider_details={"artifact_id": "a"})
    ]
    assert call.finish_reasons == ["input-required"]


def test_stream_error_event() -> None:
    events = [{"jsonrpc": "2.0", "id": 1, "error": {"code": -32004, "message": "nope"}}]
    call = parse(
        exchange(
            rpc("tasks/resubscribe", {"id": "t1"}), sse(*events), content_type="text/event-stream"
        )
    )
    assert call.error is not None and call.error.code == "-32004"
    assert call.extras["error_name"] == "UnsupportedOperationError"
    assert call.complete


@pytest.mark.parametrize(
    ("method", "params", "task"),
    [
        ("GetTask", {"id": "t1"}, "t1"),
        ("CancelTask", {"id": "t1"}, "t1"),
        ("SubscribeToTask", {"id": "t1"}, "t1"),
        ("GetTaskPushNotificationConfig", {"taskId": "t1", "id": "cfg"}, "t1"),
        ("GetTask", {"name": "tasks/t1"}, "t1"),
        ("ListTasks", {}, None),
        ("GetExtendedAgentCard", {}, None),
        ("tasks/cancel", {"id": "t1"}, "t1"),
        ("tasks/pushNotificationConfig/set", {"taskId": "t1"}, "t1"),
        ("agent/getAuthenticatedExtendedCard", {}, None),
    ],
)
def test_every_method_is_recognized(method: str, params: dict[str, Any], task: str | None) -> None:
    call = parse(exchange(rpc(method, params), result({})))
    assert call.operation == method
    assert call.ids.get("a2a_task_id") == task


def test_list_tasks_and_extended_card() -> None:
    tasks = {"tasks": [TASK_1_0], "nextPageToken": ""}
    call = parse(exchange(rpc("ListTasks", {}), result(tasks)))
    assert call.extras["tasks"] == [
        {"id": "task-1", "context_id": "ctx-1", "state": "TASK_STATE_COMPLETED"}
    ]
    card = {"name": "X", "skills": [{"id": "s", "name": "S"}], "supportedInterfaces": []}
    call = parse(exchange(rpc("GetExtendedAgentCard", {}), result(card)))
    assert call.extras["agent_card"]["name"] == "X"


def test_http_error_without_jsonrpc_body() -> None:
    call = parse(
        exchange(rpc("GetTask", {"id": "t"}), b"Bad gateway", status=502, content_type="text/plain")
    )
    assert call.error is not None
    assert (call.error.status, call.error.type, call.error.message) == (502, "http", "Bad gateway")
    assert not call.complete


def test_parts_0_3_file_forms() -> None:
    blob = part_from(
        {"kind": "file", "file": {"bytes": "QQ==", "mimeType": "audio/wav", "name": "a.wav"}}
    )
    assert blob == BlobPart(
        mime_type="audio/wav",
        modality="audio",
        content="QQ==",
        provider_details={"filename": "a.wav"},
    )
    uri = part_from({"kind": "file", "file": {"uri": "s3://b/k", "mimeType": "video/mp4"}})
    assert uri == UriPart(uri="s3://b/k", mime_type="video/mp4", modality="video")
    data = part_from({"kind": "data", "data": {"x": 1}, "metadata": {"m": 2}})
    assert data == GenericPart(type="data", fields={"data": {"x": 1}, "metadata": {"m": 2}})
    assert part_from({"kind": "weird", "z": 1}) == GenericPart(type="weird", fields={"z": 1})
    assert part_from({"type": "odd", "z": 1}) == GenericPart(type="odd", fields={"z": 1})
    assert part_from({"z": 1}) == GenericPart(type="a2a.part", fields={"z": 1})
    assert part_from("text") == GenericPart(type="unknown", fields={"value": "text"})


# -- agent cards ----------------------------------------------------------------------------


def test_old_agent_card_path_and_0_3_card() -> None:
    card = {
        "name": "Old",
        "url": "http://a/rpc",
        "preferredTransport": "JSONRPC",
        "protocolVersion": "0.2.5",
        "additionalInterfaces": [{"transport": "GRPC", "url": "http://a/grpc"}],
        "skills": [],
    }
    call = parse(
        exchange(None, card, method="GET", url=BASE + "/.well-known/agent.json", request_headers=())
    )
    assert call.operation == "GetAgentCard"
    assert call.extras["agent_card"]["interfaces"] == [
        ["JSONRPC", "0.2.5", "http://a/rpc"],
        ["GRPC", "0.2.5", "http://a/grpc"],
    ]


def test_missing_agent_card() -> None:
    call = parse(
        exchange(
            None,
            b"not found",
            method="GET",
            url=BASE + "/.well-known/agent-card.json",
            status=404,
            content_type="text/plain",
            request_headers=(),
        )
    )
    assert call.error is not None and call.error.status == 404
    assert "agent_card" not in call.extras


# -- 1.0 REST -------------------------------------------------------------------------------

REST = BASE + "/a2a/rest"


def test_rest_send_message() -> None:
    call = parse(exchange({"message": USER_1_0}, {"task": TASK_1_0}, url=REST + "/message:send"))
    assert call.operation == "SendMessage"
    assert call.extras["binding"] == "rest"
    assert call.ids["a2a_task_id"] == "task-1"
    assert call.id_sources["a2a_message_id"] == "request $.message.messageId"
    assert call.finish_reasons == ["TASK_STATE_COMPLETED"]
    assert call.complete


def test_rest_stream() -> None:
    body = sse(*(d["result"] for d in STREAM_1_0))
    call = parse(
        exchange(
            {"message": USER_1_0},
            body,
            url=REST + "/message:stream",
            content_type="text/event-stream",
        )
    )
    assert call.operation == "SendStreamingMessage"
    assert call.stream and call.complete
    assert len(call.extras["stream_events"]) == 5


@pytest.mark.parametrize(
    ("method", "path", "operation"),
    [
        ("GET", "/v1/tasks/t-5", "GetTask"),
        ("POST", "/tasks/t-5:cancel", "CancelTask"),
        ("POST", "/tasks/t-5:subscribe", "SubscribeToTask"),
        ("POST", "/tasks/t-5/pushNotificationConfigs", "CreateTaskPushNotificationConfig"),
        ("GET", "/tasks/t-5/pushNotificationConfigs/c1", "GetTaskPushNotificationConfig"),
        ("DELETE", "/tasks/t-5/pushNotificationConfigs/c1", "DeleteTaskPushNotificationConfig"),
    ],
)
def test_rest_task_paths(method: str, path: str, operation: str) -> None:
    body = {"id": "t-5", "contextId": "c", "status": {"state": "TASK_STATE_CANCELED"}}
    call = parse(exchange(None, body, url=REST + path, method=method))
    assert call.operation == operation
    assert call.ids["a2a_task_id"] == "t-5"
    assert call.id_sources["a2a_task_id"] == "request url path"


def test_rest_list_tasks_and_errors() -> None:
    call = parse(exchange(None, {"tasks": [TASK_1_0]}, url=REST + "/tasks", method="GET"))
    assert call.operation == "ListTasks"
    error = {"error": {"code": 404, "status": "NOT_FOUND", "message": "Task not found"}}
    call = parse(exchange(None, error, url=REST + "/tasks/zz", method="GET", status=404))
    assert call.error is not None
    assert (call.error.type, call.error.code, call.error.message) == (
        "http",
        "NOT_FOUND",
        "Task not found",
    )


def test_generic_task_paths_need_corroboration() -> None:
    """``GET /tasks/1`` of some todo API is not A2A."""
    ex = exchange(
        None,
        {"id": 1, "title": "buy milk"},
        url=BASE + "/tasks/1",
        method="GET",
        request_headers=(),
    )
    assert recognize(ex, "c", registry=FAMILIES) is None


# -- not ours -------------------------------------------------------------------------------

NOT_A2A: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    (
        "https://api.openai.com/v1/chat/completions",
        {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
        {"id": "c", "object": "chat.completion", "choices": []},
    ),
    (
        "https://api.anthropic.com/v1/messages",
        {"model": "claude", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]},
        {"id": "m", "type": "message", "role": "assistant", "content": []},
    ),
    (
        "http://mcp.test/mcp",
        rpc("tools/call", {"name": "get_weather", "arguments": {"city": "Paris"}}),
        result({"content": [{"type": "text", "text": "18C"}], "isError": False}),
    ),
    (
        "http://mcp.test/mcp",
        rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}}),
        result({"protocolVersion": "2025-06-18", "serverInfo": {"name": "s"}}),
    ),
    ("http://mcp.test/mcp", rpc("tasks/result", {"taskId": "t"}), result({})),
    # MCP 2025-11-25 tasks share three method names with A2A 0.3
    (
        "http://mcp.test/mcp",
        rpc("tasks/get", {"taskId": "t"}),
        result({"taskId": "t", "status": "working", "createdAt": "2025-11-25T00:00:00Z"}),
    ),
    ("http://mcp.test/mcp", rpc("tasks/list", {}), result({"tasks": []})),
    (
        "http://mcp.test/mcp",
        rpc("tasks/cancel", {"taskId": "t"}),
        result({"taskId": "t", "status": "cancelled"}),
    ),
]


def test_mcp_headers_disclaim_shared_task_methods() -> None:
    headers = (("content-type", "application/json"), ("Mcp-Session-Id", "s1"))
    view = ExchangeView(
        exchange(rpc("tasks/get", {"id": "t"}), result({}), request_headers=headers)
    )
    assert all(f.match(view) <= 0 for f in FAMILIES)


def test_shared_task_methods_without_a2a_version_header() -> None:
    """0.3 clients may send no A2A-Version: the task-shaped result or ``id`` param decides."""
    plain = (("content-type", "application/json"),)
    task = {"kind": "task", "id": "t", "contextId": "c", "status": {"state": "canceled"}}
    call = parse(exchange(rpc("tasks/cancel", {"id": "t"}), result(task), request_headers=plain))
    assert call.finish_reasons == ["canceled"]
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "Task not found"}}
    call = parse(exchange(rpc("tasks/get", {"id": "t"}), error, request_headers=plain))
    assert call.error is not None and call.error.code == "-32001"


@pytest.mark.parametrize(("url", "request_body", "response_body"), NOT_A2A)
def test_other_apis_are_not_claimed(
    url: str, request_body: dict[str, Any], response_body: dict[str, Any]
) -> None:
    view = ExchangeView(exchange(request_body, response_body, url=url, request_headers=()))
    assert all(f.match(view) <= 0 for f in FAMILIES)


# -- fuzz -----------------------------------------------------------------------------------

INTS = st.integers(-(2**53), 2**53)  # orjson writes 64-bit integers only
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | INTS | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)
KEYS = [
    "kind", "task", "message", "statusUpdate", "artifactUpdate", "status", "state", "artifact",
    "artifactId", "parts", "append", "final", "taskId", "contextId", "id", "messageId", "role",
    "text", "raw", "url", "data", "file", "error", "code", "result", "tasks", "name", "skills",
]  # fmt: skip
SHAPED = st.recursive(
    st.none()
    | st.booleans()
    | INTS
    | st.sampled_from(["task", "status-update", "artifact-update", "message", "completed", "x"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)
    ),
    max_leaves=25,
)
METHODS = st.sampled_from(
    ["SendMessage", "message/stream", "tasks/get", "ListTasks", "GetExtendedAgentCard"]
)


@settings(max_examples=300, deadline=None)
@given(
    method=METHODS,
    params=SHAPED,
    results=st.lists(SHAPED | JSON_VALUES, max_size=6),
    stream=st.booleans(),
    junk=st.binary(max_size=30),
    status=st.sampled_from([200, 400, 500]),
)
def test_fuzzed_bodies_never_raise(
    method: str, params: Any, results: list[Any], stream: bool, junk: bytes, status: int
) -> None:
    request = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    if stream:
        body = b"".join(b"data: " + orjson.dumps(r) + b"\n\n" for r in results) + junk
        ctype = "text/event-stream"
    else:
        body = orjson.dumps(results[0] if results else None) + junk
        ctype = "application/json"
    for ex in (
        exchange(request, body, content_type=ctype, status=status),
        exchange(
            params if isinstance(params, dict) else {},
            body,
            url=REST + "/message:stream",
            content_type=ctype,
            status=status,
        ),
        exchange(
            None, body, url=REST + "/tasks/x", method="GET", content_type=ctype, status=status
        ),
        exchange(
            None,
            body,
            url=BASE + "/.well-known/agent-card.json",
            method="GET",
            content_type=ctype,
            status=status,
        ),
    ):
        call = recognize(ex, "c", registry=FAMILIES)
        if call is not None:
            orjson.dumps(call.to_json())  # the report can always be written


def test_pre_0_2_methods_and_type_parts() -> None:
    """tasks/send with ``type``-tagged parts (seed 000 §5.2's shape) and a bare task result."""
    message = {"role": "user", "parts": [{"type": "text", "text": "查上海天气"}]}
    task = {
        "id": "task_123",
        "status": {
            "state": "completed",
            "message": {"role": "agent", "parts": [{"type": "text", "text": "上海 22°C"}]},
        },
        "artifacts": [],
    }
    call = parse(exchange(rpc("tasks/send", {"id": "task_123", "message": message}), result(task)))
    assert call.extras["method_set"] == "0.1"
    assert call.ids["a2a_task_id"] == "task_123"
    assert call.input_messages[0].parts == [TextPart(content="查上海天气")]
    (out,) = call.output_messages
    assert (out.role, out.parts, out.finish_reason) == (
        "agent",
        [TextPart(content="上海 22°C")],
        "completed",
    )


def test_hand_written_calls_with_the_whole_registry() -> None:
    """No LLM family outbids A2A on 1.0 JSON-RPC and REST traffic."""
    registry = (*families(), *FAMILIES)
    for ex in (
        exchange(rpc("SendMessage", {"message": USER_1_0}), result({"task": TASK_1_0})),
        exchange({"message": USER_1_0}, {"task": TASK_1_0}, url=REST + "/message:send"),
        exchange(None, TASK_1_0, url=REST + "/tasks/task-1", method="GET"),
        exchange(None, {"tasks": [TASK_1_0]}, url=REST + "/tasks", method="GET"),
    ):
        call = recognize(ex, "c", registry=registry)
        assert call is not None and call.api == "a2a"


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_rechunking_a_stream_gives_the_same_call(data: st.DataObject) -> None:
    body = sse(*STREAM_1_0)
    request = rpc("SendStreamingMessage", {"message": USER_1_0})
    cuts = sorted(data.draw(st.sets(st.integers(1, len(body) - 1), max_size=40)))
    bounds = [0, *cuts, len(body)]
    ex = exchange(request, b"", content_type="text/event-stream")
    assert ex.response is not None
    ex.response.body = Body(pieces=[(1.0, body[a:b]) for a, b in itertools.pairwise(bounds)])
    whole = parse(exchange(request, body, content_type="text/event-stream")).to_json()
    again = parse(ex).to_json()
    whole.pop("timing")
    again.pop("timing")
    assert again == whole


def test_rest_request_wrapped_as_request() -> None:
    call = parse(
        exchange({"request": USER_1_0}, {"message": USER_1_0}, url=REST + "/v1/message:send")
    )
    assert call.input_messages[0].role == "ROLE_USER"
    assert call.id_sources["a2a_message_id"] == "request $.request.messageId"


@pytest.mark.parametrize("binding", ["a2a_v1_jsonrpc", "a2a_v1_rest"])
def test_1_0_capture_stream_chunks_are_one_text(binding: str) -> None:
    """The a2a-sdk 1.0 captures: six artifact chunks ("packets", " on", " loopback"...)."""
    root = Path(__file__).parents[3] / "tests" / "data" / "captures" / binding
    truth = json.loads((root / "truth.json").read_text())
    (step,) = [s for s in truth["steps"] if s["label"].startswith("SendStreamingMessage")]
    chunks = [t for e in step["events"] for t in e.get("artifact_text", [])]
    collected = Collected([str(root / "capture.pcap")])
    calls = [recognize(ex, ex.id, registry=FAMILIES) for ex in collected.exchanges]
    (call,) = [c for c in calls if c is not None and c.operation == "SendStreamingMessage"]
    assert len(chunks) == 6 and call.complete
    (part,) = [
        p
        for p in call.output_messages[0].parts
        if isinstance(p, TextPart) and p.provider_details.get("artifact_id")
    ]
    assert part.content == "".join(chunks)
