"""A2A's gRPC binding: the a2a-sdk loopback capture against the client's own records, the same
conversation over JSON-RPC giving the same calls, 0.3's service, errors, cuts and no protobuf.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format, message_factory

from agentshark.apis import protos
from agentshark.apis.a2a.calls import FAMILIES
from agentshark.apis.grpc_view import status_details
from agentshark.apis.model import Call, TextPart
from agentshark.apis.registry import families, recognize
from agentshark.apis.view import ExchangeView
from agentshark.model import Exchange
from tests.helpers import Collected, http_exchange

ROOT = Path(__file__).resolve().parents[2] / "data" / "captures"
GRPC = ROOT / "a2a_v1_grpc"
TWIN = ROOT / "a2a_v1_grpc_jsonrpc"


def _calls(folder: Path) -> list[Call]:
    collected = Collected([str(folder / "capture.pcap")])
    calls = [recognize(ex, ex.id) for ex in collected.exchanges]
    assert all(c is not None for c in calls)
    return [c for c in calls if c is not None]


@pytest.fixture(scope="module")
def grpc_calls() -> list[Call]:
    return _calls(GRPC)


@pytest.fixture(scope="module")
def truth() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((GRPC / "truth.json").read_text())
    return loaded


def test_every_rpc_is_one_a2a_call(grpc_calls: list[Call], truth: dict[str, Any]) -> None:
    rpcs = truth["rpcs"]
    assert len(grpc_calls) == len(rpcs) == 9
    for call, rpc in zip(grpc_calls, rpcs, strict=True):
        assert call.api == "a2a" and call.extras["binding"] == "grpc"
        assert call.extras["method_set"] == "1.0"
        assert "/lf.a2a.v1.A2AService/" + (call.operation or "") == rpc["method"]
        assert call.complete
        assert call.extras["a2a_version"] == dict(rpc["metadata"])["a2a-version"]
        if rpc["status"] == "OK":
            assert call.error is None
        else:
            assert call.error is not None and call.error.type == "grpc"
            assert (call.error.code, call.error.message) == (rpc["status"], rpc["details"])


def test_messages_as_the_client_got_them(grpc_calls: list[Call], truth: dict[str, Any]) -> None:
    for call, rpc in zip(grpc_calls, truth["rpcs"], strict=True):
        request = rpc["request"]
        if "message" in request:
            (sent,) = call.input_messages
            assert sent.role == request["message"]["role"]
            assert [p.content for p in sent.parts if isinstance(p, TextPart)] == [
                p["text"] for p in request["message"]["parts"]
            ]
            assert call.ids["a2a_message_id"] == request["message"]["messageId"]
        if call.stream:
            events = call.extras["stream_events"]
            assert len(events) == len(rpc["responses"]) == 9
            kinds = [next(iter(r)) for r in rpc["responses"]]
            names = {"task": "task", "statusUpdate": "status-update"}
            assert [e["kind"] for e in events] == [names.get(k, "artifact-update") for k in kinds]
            assert call.finish_reasons == ["TASK_STATE_COMPLETED"]
            assert call.timing.chunks == 9
            text = "".join(
                p.content
                for p in call.output_messages[0].parts
                if isinstance(p, TextPart) and p.provider_details.get("artifact_id") == "answer"
            )
            artifacts = [
                r["artifactUpdate"]["artifact"]["parts"][0]["text"]
                for r in rpc["responses"]
                if "artifactUpdate" in r
            ]
            assert text == "".join(artifacts) == "packets on loopback are still packets"
        elif rpc["responses"] and "message" in rpc["responses"][0]:
            (got,) = call.output_messages
            reply = rpc["responses"][0]["message"]
            assert [p.content for p in got.parts if isinstance(p, TextPart)] == [
                p["text"] for p in reply["parts"]
            ]


def test_errors_name_the_a2a_error(grpc_calls: list[Call]) -> None:
    failed = [c for c in grpc_calls if c.error is not None]
    assert [c.extras["error_name"] for c in failed] == [
        "TaskNotCancelableError",
        "TaskNotFoundError",
    ]
    assert all(
        c.extras["error_data"][0]["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
        for c in failed
    )


def _drop_empty(value: Any) -> Any:
    """proto3 JSON omits empty maps, a2a-sdk's JSON-RPC writer keeps them."""
    if isinstance(value, dict):
        return {k: _drop_empty(v) for k, v in value.items() if v not in ({}, [])}
    if isinstance(value, list):
        return [_drop_empty(v) for v in value]
    return value


def _comparable(call: Call) -> dict[str, Any]:
    doc = call.to_json()
    for key in ("id", "exchange_id", "timing", "id_sources", "error"):
        doc.pop(key)
    doc["ids"].pop("jsonrpc_id", None)
    doc["extras"].pop("binding")
    if "error_data" in doc["extras"]:
        doc["extras"]["error_data"] = _drop_empty(doc["extras"]["error_data"])
    return doc


def test_grpc_and_jsonrpc_give_the_same_calls(grpc_calls: list[Call]) -> None:
    """Field by field, except the transport's own: binding, JSON-RPC id, JSON paths of the
    ids, times, and the error's namespace (gRPC status vs JSON-RPC code)."""
    twin = _calls(TWIN)
    assert [c.extras["binding"] for c in twin] == ["jsonrpc"] * 9
    for g, j in zip(grpc_calls, twin, strict=True):
        assert _comparable(g) == _comparable(j)
        assert g.timing.chunks == j.timing.chunks
        assert (g.error is None) == (j.error is None)
        assert g.id_sources.keys() - {"jsonrpc_id"} == j.id_sources.keys() - {"jsonrpc_id"}


def test_no_other_family_outbids_a2a() -> None:
    collected = Collected([str(GRPC / "capture.pcap")])
    for ex in collected.exchanges:
        call = recognize(ex, ex.id, registry=(*families(), *FAMILIES))
        assert call is not None and call.api == "a2a"


# -- hand-made exchanges ----------------------------------------------------------------------


def _frame(payload: bytes) -> bytes:
    return b"\x00" + len(payload).to_bytes(4, "big") + payload


def _message(path: str, type_name: str, doc: dict[str, Any]) -> bytes:
    schemas = protos.schemas_for(path)
    assert schemas is not None
    cls = message_factory.GetMessageClass(schemas._pool.FindMessageTypeByName(type_name))
    parsed = json_format.ParseDict(doc, cls(), descriptor_pool=schemas._pool)
    return bytes(parsed.SerializeToString())


def _grpc_exchange(
    path: str,
    request: bytes,
    responses: list[bytes],
    *,
    trailers: list[tuple[str, str]] | None = None,
    complete: bool = True,
    tail: bytes = b"",
) -> Exchange:
    """A gRPC exchange of framed ``responses``, then ``tail`` as sent (a cut frame)."""
    pieces = [(1.0 + i / 10, _frame(r)) for i, r in enumerate(responses)] + [(2.0, tail)]
    ex = http_exchange(
        method="POST",
        url="http://agent.test" + path,
        target=path,
        request_body=_frame(request),
        request_headers=[("content-type", "application/grpc")],
        response_pieces=pieces,
        response_headers=[("content-type", "application/grpc")],
        response_complete=complete,
    )
    assert ex.response is not None
    ex.response = dataclasses.replace(
        ex.response, trailers=trailers if trailers is not None else [("grpc-status", "0")]
    )
    return ex


V03 = "/a2a.v1.A2AService/"


def test_a2a_0_3_service_reads_content_and_update() -> None:
    """0.3's proto names a Message's parts ``content`` and a status's message ``update``."""
    request = _message(
        V03 + "SendMessage",
        "a2a.v1.SendMessageRequest",
        {"request": {"messageId": "m1", "role": "ROLE_USER", "content": [{"text": "hi"}]}},
    )
    response = _message(
        V03 + "SendMessage",
        "a2a.v1.SendMessageResponse",
        {
            "task": {
                "id": "t1",
                "contextId": "c1",
                "status": {
                    "state": "TASK_STATE_COMPLETED",
                    "update": {
                        "messageId": "m2",
                        "role": "ROLE_AGENT",
                        "content": [{"text": "ok"}],
                    },
                },
            }
        },
    )
    call = recognize(_grpc_exchange(V03 + "SendMessage", request, [response]), "c")
    assert call is not None and call.api == "a2a" and call.complete
    assert call.extras["method_set"] == "0.3"
    assert [p.content for p in call.input_messages[0].parts if isinstance(p, TextPart)] == ["hi"]
    (out,) = call.output_messages
    assert [p.content for p in out.parts if isinstance(p, TextPart)] == ["ok"]
    assert out.role == "ROLE_AGENT" and call.finish_reasons == ["TASK_STATE_COMPLETED"]
    assert call.ids["a2a_task_id"] == "t1"


def test_a2a_0_3_task_subscription_streams() -> None:
    path = V03 + "TaskSubscription"
    request = _message(path, "a2a.v1.TaskSubscriptionRequest", {"name": "tasks/t1"})
    events = [
        _message(
            path,
            "a2a.v1.StreamResponse",
            {
                "artifactUpdate": {
                    "taskId": "t1",
                    "artifact": {"artifactId": "a", "parts": [{"text": "x"}]},
                }
            },
        ),
        _message(
            path,
            "a2a.v1.StreamResponse",
            {
                "statusUpdate": {
                    "taskId": "t1",
                    "status": {"state": "TASK_STATE_COMPLETED"},
                    "final": True,
                }
            },
        ),
    ]
    call = recognize(_grpc_exchange(path, request, events), "c")
    assert call is not None and call.stream and call.complete
    assert [e["kind"] for e in call.extras["stream_events"]] == ["artifact-update", "status-update"]
    assert call.ids["a2a_task_id"] == "t1"


def test_a_cut_stream_is_incomplete() -> None:
    path = "/lf.a2a.v1.A2AService/SendStreamingMessage"
    request = _message(path, "lf.a2a.v1.SendMessageRequest", {"message": {"messageId": "m"}})
    working = _message(
        path,
        "lf.a2a.v1.StreamResponse",
        {"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_WORKING"}}},
    )
    ex = _grpc_exchange(
        path, request, [working], trailers=[], complete=False, tail=_frame(working)[:-3]
    )
    call = recognize(ex, "c")
    assert call is not None and not call.complete
    codes = {d.code for d in call.diagnostics}
    assert {"a2a.stream_unfinished", "grpc.truncated"} <= codes
    assert call.finish_reasons == ["TASK_STATE_WORKING"]


def _get_task(task: str) -> bytes:
    return _message("/lf.a2a.v1.A2AService/GetTask", "lf.a2a.v1.GetTaskRequest", {"id": task})


def test_a_message_the_schema_does_not_parse_is_said() -> None:
    path = "/lf.a2a.v1.A2AService/GetTask"
    call = recognize(_grpc_exchange(path, _get_task("t"), [b"\xff\xff\xff"]), "c")
    assert call is not None and not call.complete
    assert "a2a.grpc_bad_message" in {d.code for d in call.diagnostics}
    assert call.ids["a2a_task_id"] == "t"


def test_without_protobuf_the_call_keeps_what_the_headers_say(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    request = _get_task("t")
    monkeypatch.setattr(protos, "available", lambda: False)
    path = "/lf.a2a.v1.A2AService/GetTask"
    ex = _grpc_exchange(
        path,
        request,
        [],
        trailers=[("grpc-status", "5"), ("grpc-message", "Task%20not%20found")],
    )
    call = recognize(ex, "c")
    assert call is not None and call.operation == "GetTask"
    assert call.error is not None and (call.error.code, call.error.message) == (
        "NOT_FOUND",
        "Task not found",
    )
    assert "a2a.grpc_unread" in {d.code for d in call.diagnostics}
    assert "error_name" not in call.extras


def test_no_status_is_not_ok() -> None:
    path = "/lf.a2a.v1.A2AService/GetTask"
    task = _message(path, "lf.a2a.v1.Task", {"id": "t", "status": {"state": "TASK_STATE_WORKING"}})
    call = recognize(_grpc_exchange(path, _get_task("t"), [task], trailers=[]), "c")
    assert call is not None and call.error is None and not call.complete


@pytest.mark.parametrize("binary", [True, False])
def test_status_details_base64_or_true_binary(binary: bool) -> None:
    status = _message(
        "/lf.a2a.v1.A2AService/GetTask",
        "google.rpc.Status",
        {
            "code": 5,
            "details": [
                {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND"}
            ],
        },
    )
    value = (
        "\x00" + status.decode("latin-1")
        if binary
        else base64.b64encode(status).decode().rstrip("=")
    )
    path = "/lf.a2a.v1.A2AService/GetTask"
    ex = _grpc_exchange(
        path, b"", [], trailers=[("grpc-status", "5"), ("grpc-status-details-bin", value)]
    )
    assert status_details(ExchangeView(ex)) == status
    call = recognize(ex, "c")
    assert call is not None and call.extras["error_name"] == "TaskNotFoundError"


def test_only_a2a_grpc_posts_are_claimed() -> None:
    """Another service, or the A2A path without gRPC's POST and content type, is not A2A
    over gRPC."""
    assert recognize(_grpc_exchange("/helloworld.Greeter/SayHello", b"", []), "c") is None
    ex = _grpc_exchange("/lf.a2a.v1.A2AService/GetTask", _get_task("t"), [])
    assert recognize(ex, "c", registry=FAMILIES) is not None
    assert ex.request is not None
    ex.request.method = "GET"
    assert recognize(ex, "c", registry=FAMILIES) is None
    ex.request.method = "POST"
    ex.request.headers = [("content-type", "application/json")]
    assert recognize(ex, "c", registry=FAMILIES) is None


def test_report_events_name_the_messages_without_proto(truth: dict[str, Any]) -> None:
    """``--events`` reads an A2A gRPC message with the bundled schema when no ``--proto``
    has its method."""
    from agentshark.framing import decode_stream
    from agentshark.framing.events import GrpcMessage
    from agentshark.output.grpc import grpc_message_json, grpc_namer

    ex = Collected([str(GRPC / "capture.pcap")]).exchanges[0]
    named = grpc_namer(ex, None, request=False)
    assert named is not None and ex.response is not None
    (message,) = [
        e for e in decode_stream(ex.response.body.pieces, "grpc") if isinstance(e, GrpcMessage)
    ]
    event = grpc_message_json(message, named)
    assert event["type_name"] == "lf.a2a.v1.SendMessageResponse"
    assert event["message"] == truth["rpcs"][0]["responses"][0]
    assert grpc_namer(ex, None, request=True) is not None
