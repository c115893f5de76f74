"""MCP over Streamable HTTP: the loopback capture against the client's own record, the corpus
cassettes (pydantic-ai against mcp.deepwiki.com), hand-made exchanges for what those lack, and
the fuzz invariant."""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Sequence
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshark.apis.mcp.calls import FAMILIES, MCP_HTTP, content_part, message_kind
from agentshark.apis.model import (
    BlobPart,
    Call,
    GenericPart,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
    UriPart,
)
from agentshark.apis.registry import recognize
from agentshark.apis.view import ExchangeView
from agentshark.errors import InputError
from agentshark.model import Exchange
from agentshark.sources.detect import SNIFF_BYTES, classify_document, sniff_format
from agentshark.sources.har import read_har
from agentshark.sources.vcr import read_vcr
from tests.helpers import CAPTURES, CORPUS, Collected, http_exchange

PLAIN = CAPTURES / "mcp_http_plain"
MANIFEST = CORPUS / "manifest.jsonl"
URL = "http://127.0.0.1:18080/mcp"
SESSION = ("Mcp-Session-Id", "s-1")
VERSION = ("MCP-Protocol-Version", "2025-11-25")


def exchange(
    request: Any,
    response: bytes | Sequence[tuple[float, bytes]] | None,
    *,
    method: str = "POST",
    status: int = 200,
    content_type: str = "application/json",
    request_headers: Sequence[tuple[str, str]] = (SESSION, VERSION),
    response_headers: Sequence[tuple[str, str]] = (),
    response_complete: bool = True,
) -> Exchange:
    body = (
        request if isinstance(request, bytes) else b"" if request is None else orjson.dumps(request)
    )
    pieces = [(1.0, response)] if isinstance(response, bytes) else list(response or [])
    return http_exchange(
        method=method,
        url=URL,
        target="/mcp",
        request_body=body,
        request_headers=list(request_headers),
        response_pieces=None if response is None else pieces,
        status=status,
        response_headers=[("content-type", content_type), *response_headers],
        response_complete=response_complete,
    )


def sse(*messages: Any, event: str = "message") -> bytes:
    return b"".join(
        b"event: "
        + event.encode()
        + b"\nid: "
        + str(i).encode()
        + b"\ndata: "
        + orjson.dumps(m)
        + b"\n\n"
        for i, m in enumerate(messages)
    )


def parse(x: Exchange) -> Call:
    call = recognize(x, "c1", registry=FAMILIES)
    assert call is not None
    orjson.dumps(call.to_json())  # the report can always be written
    return call


def rpc(method: str, params: Any = None, id: Any = 1) -> dict[str, Any]:  # noqa: A002  # JSON-RPC's own name
    out: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if id is not None:
        out["id"] = id
    if params is not None:
        out["params"] = params
    return out


# -- the loopback capture ---------------------------------------------------------------------


@functools.cache
def plain_calls() -> list[tuple[Exchange, Call]]:
    from agentshark.pipeline import Options

    collected = Collected([str(PLAIN / "capture.pcap")], Options(calls=True))
    out = []
    for x in collected.exchanges:
        call = recognize(x, "k", registry=FAMILIES)
        assert call is not None, f"{x.id} not recognized"
        out.append((x, call))
    return out


needs_plain = pytest.mark.skipif(
    not (PLAIN / "capture.pcap").exists(), reason="shared captures absent"
)


def by_id(jsonrpc_id: Any) -> Call:
    found = [c for _, c in plain_calls() if c.ids.get("jsonrpc_id") == str(jsonrpc_id)]
    assert len(found) == 1, jsonrpc_id
    return found[0]


def result_of(call: Call) -> Any:
    """The JSON-RPC result as the server sent it, rebuilt from the call."""
    if call.operation == "tools/list":
        return {**call.extras["result"], "tools": call.tool_definitions}
    if call.operation != "tools/call":
        return call.extras["result"]
    part = call.output_messages[0].parts[0]
    assert isinstance(part, ToolCallResponsePart)
    details = dict(part.provider_details)
    out: dict[str, Any] = {"content": part.response}
    if "is_error" in details:
        out["isError"] = details.pop("is_error")
    if "structured_content" in details:
        out["structuredContent"] = details.pop("structured_content")
    return {**out, **details}


@needs_plain
def test_plain_capture_matches_truth() -> None:
    truth = json.loads((PLAIN / "truth.json").read_text())
    session_ids = {c.ids.get("mcp_session_id") for _, c in plain_calls()}
    assert len(session_ids) == 1 and None not in session_ids  # one session, on every call
    for expected in truth["jsonrpc"]["calls"]:
        call = by_id(expected["id"])
        assert call.api == "mcp"
        assert call.operation == expected["method"]
        assert call.id_sources["jsonrpc_id"] == "request body id (JSON number)"
        assert call.complete
        if expected["outcome"] == "jsonrpc_error":
            assert call.error is not None
            assert call.error.type == "jsonrpc"
            assert call.error.code == str(expected["error_code"])
            assert call.error.message == expected["error_message"]
        else:
            assert call.error is None
        if expected["method"] == "tools/call":
            (tool_call,) = call.input_messages[0].parts
            assert isinstance(tool_call, ToolCallPart)
            assert tool_call.name == expected["tool"]
            assert tool_call.arguments == expected["arguments"]
            assert tool_call.id == str(expected["id"])
            response = call.output_messages[0].parts[0]
            assert isinstance(response, ToolCallResponsePart)
            assert response.id == tool_call.id
            assert response.provider_details["is_error"] is expected["is_error"]
            if "progress_token" in expected:
                assert call.ids["mcp_progress_token"] == str(expected["progress_token"])
        if expected["method"] == "tools/list":
            assert [t["name"] for t in call.tool_definitions] == expected["tools"]
            assert all("inputSchema" in t for t in call.tool_definitions)
        if expected["method"] == "initialize":
            assert call.extras["server_info"] == expected["server_info"]
            assert call.ids["mcp_protocol_version"] == expected["protocol_version"]
            assert call.id_sources["mcp_session_id"] == "response header Mcp-Session-Id"
            assert call.request_params["clientInfo"]["name"] == "capture-workshop-client"


@needs_plain
def test_plain_capture_matches_client_messages() -> None:
    lines = (PLAIN / "client_messages.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    calls = [c for _, c in plain_calls()]
    streamed = [m for c in calls for m in c.extras.get("stream_messages", ())]
    for record in records:
        msg = record["msg"]
        kind = message_kind(msg)
        if record["dir"] == "send" and kind == "request":
            call = by_id(msg["id"])
            assert call.operation == msg["method"]
            if msg["method"] not in ("tools/call",) and "params" in msg:
                params = {k: v for k, v in msg["params"].items() if k != "_meta"}
                assert call.request_params == params
        elif record["dir"] == "send" and kind == "notification":
            assert any(
                c.operation == msg["method"] and "jsonrpc_id" not in c.ids and c.complete
                for c in calls
            )
        elif record["dir"] == "recv" and kind == "response":
            assert result_of(by_id(msg["id"])) == msg["result"]
        elif record["dir"] == "recv" and kind == "error":
            error = by_id(msg["id"]).error
            assert error is not None
            assert (error.code, error.message) == (
                str(msg["error"]["code"]),
                msg["error"]["message"],
            )
            assert by_id(msg["id"]).extras["error_data"] == msg["error"]["data"]
        elif record["dir"] == "recv" and kind == "notification":
            assert {"kind": "notification", "method": msg["method"], "params": msg["params"]} in [
                {k: v for k, v in m.items() if k not in ("event_id", "at")} for m in streamed
            ]
        else:
            pytest.fail(f"unexpected record {record}")
    # every notification the client received is in some call's stream, in order
    received = [r["msg"]["method"] for r in records if r["dir"] == "recv" and "method" in r["msg"]]
    assert [m["method"] for m in streamed] == received


@needs_plain
def test_plain_capture_cut_replies_are_usable_and_said_so() -> None:
    cut = [(x, c) for x, c in plain_calls() if not x.complete]
    assert cut, "the capture has SSE replies cut before their final chunk"
    for _, call in cut:
        assert call.complete  # the JSON-RPC response arrived whole, no byte was lost
        codes = [(d.code, d.severity) for d in call.diagnostics]
        assert ("mcp.http_unfinished", "info") in codes
        assert "call.evidence_incomplete" not in [code for code, _ in codes]
    for x, call in plain_calls():
        if x.complete:
            assert "mcp.http_unfinished" not in [d.code for d in call.diagnostics]


@needs_plain
def test_plain_capture_get_and_delete() -> None:
    operations = {c.operation: c for _, c in plain_calls()}
    for name in ("session.stream", "session.delete"):
        call = operations[name]
        assert call.error is None and call.complete
        assert call.ids["mcp_session_id"]
        assert "jsonrpc_id" not in call.ids
    assert operations["session.stream"].stream


# -- the corpus -------------------------------------------------------------------------------


def _ids() -> Any:
    counter = itertools.count()
    return lambda: f"e{next(counter)}"


@functools.cache
def corpus(family: str, max_files: int = 1000) -> list[tuple[str, Exchange]]:
    """(file, exchange) of the cassettes and HAR files (the first ``max_files``) whose
    manifest entry lists ``family``."""
    if not MANIFEST.exists():
        return []
    out: list[tuple[str, Exchange]] = []
    files = 0
    for line in MANIFEST.read_text().splitlines():
        entry = json.loads(line)
        if family not in (entry.get("api_families") or {}) or files >= max_files:
            continue
        files += 1
        data = (CORPUS / entry["file"]).read_bytes()
        if sniff_format(data[:SNIFF_BYTES]) in ("pcap", "pcapng"):
            continue
        try:
            kind, doc = classify_document(data, entry["file"])
        except InputError:
            continue  # stdio transcripts, response-only fixtures
        reader = read_har if kind == "har" else read_vcr
        out.extend(
            (entry["file"], x)
            for x in reader(doc, entry["file"], 0, _ids())
            if isinstance(x, Exchange)
        )
    return out


def test_corpus_mcp_cassettes() -> None:
    exchanges = corpus("mcp")
    if not exchanges:
        pytest.skip("corpus absent")
    seen: set[str | None] = set()
    refused = 0
    for name, x in exchanges:
        view = ExchangeView(x)
        if not view.host.startswith("mcp."):
            assert MCP_HTTP.match(view) <= 0, (name, x.id)
            continue
        call = parse(x)
        assert call.api == "mcp", (name, x.id)
        seen.add(call.operation)
        if view.method in ("GET", "DELETE"):
            assert call.operation == (
                "session.stream" if view.method == "GET" else "session.delete"
            )
            if view.status == 405:
                refused += 1
                assert call.error is not None
                assert (call.error.status, call.error.type, call.error.code) == (
                    405,
                    "jsonrpc",
                    "-32000",
                )
        elif call.operation is not None and not call.operation.startswith("notifications/"):
            assert call.complete, (name, x.id)
            assert "jsonrpc_id" in call.ids
            assert call.error is None, (name, x.id, call.error)
            if call.operation == "tools/call":
                assert isinstance(call.input_messages[0].parts[0], ToolCallPart)
                assert isinstance(call.output_messages[0].parts[0], ToolCallResponsePart)
            if call.operation == "tools/list":
                assert call.tool_definitions
        else:
            assert view.status == 202 and call.complete and call.error is None
    assert refused > 0
    assert {"initialize", "tools/list", "tools/call", "session.stream", "session.delete"} <= seen


@pytest.mark.parametrize(
    "family",
    ["openai-chat", "openai-responses", "anthropic-messages", "gemini", "bedrock-converse"],
)
def test_corpus_llm_exchanges_are_not_claimed(family: str) -> None:
    exchanges = [
        (n, x) for n, x in corpus(family, 60) if not ExchangeView(x).host.startswith("mcp.")
    ]
    if not exchanges:
        pytest.skip("corpus absent")
    for name, x in exchanges:
        assert MCP_HTTP.match(ExchangeView(x)) <= 0, (name, x.id)


# -- hand-made exchanges ----------------------------------------------------------------------


def test_json_reply_with_every_content_kind() -> None:
    result = {
        "content": [
            {"type": "text", "text": "hi", "annotations": {"audience": ["user"]}},
            {"type": "image", "data": "iVBO", "mimeType": "image/png"},
            {"type": "audio", "data": "UklG", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "file:///a.png", "name": "a", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///b.txt", "text": "b"}},
            {"type": "video_of_the_future", "x": 1},
        ],
        "structuredContent": {"ok": True},
        "isError": False,
        "_meta": {"m": 1},
    }
    request = rpc("tools/call", {"name": "t", "arguments": {"a": 1}}, id="abc")
    call = parse(exchange(request, orjson.dumps({"jsonrpc": "2.0", "id": "abc", "result": result})))
    assert call.ids["jsonrpc_id"] == "abc"
    assert call.id_sources["jsonrpc_id"] == "request body id (JSON string)"
    assert not call.stream and call.complete and call.error is None
    response, text, image, audio, link, resource, other = call.output_messages[0].parts
    assert isinstance(response, ToolCallResponsePart) and response.id == "abc"
    assert response.response == result["content"]
    assert response.provider_details == {
        "is_error": False,
        "structured_content": {"ok": True},
        "_meta": {"m": 1},
    }
    assert text == TextPart(content="hi", provider_details={"annotations": {"audience": ["user"]}})
    assert image == BlobPart(mime_type="image/png", modality="image", content="iVBO")
    assert audio == BlobPart(mime_type="audio/wav", modality="audio", content="UklG")
    assert link == UriPart(
        uri="file:///a.png", mime_type="image/png", modality="image", provider_details={"name": "a"}
    )
    assert resource == GenericPart(
        type="resource", fields={"resource": {"uri": "file:///b.txt", "text": "b"}}
    )
    assert other == GenericPart(type="video_of_the_future", fields={"x": 1})
    assert content_part("junk") == GenericPart(type="unknown", fields={"value": "junk"})


def test_tool_error_and_jsonrpc_error_stay_distinct() -> None:
    request = rpc("tools/call", {"name": "t", "arguments": {}}, id=7)
    tool_error = parse(
        exchange(
            request,
            orjson.dumps({"jsonrpc": "2.0", "id": 7, "result": {"content": [], "isError": True}}),
        )
    )
    assert tool_error.error is None
    part = tool_error.output_messages[0].parts[0]
    assert isinstance(part, ToolCallResponsePart) and part.provider_details["is_error"] is True
    assert tool_error.finish_reasons == [] and tool_error.output_messages[0].finish_reason is None
    rpc_error = parse(
        exchange(
            request,
            orjson.dumps({"jsonrpc": "2.0", "id": 7, "error": {"code": -32601, "message": "nope"}}),
        )
    )
    assert rpc_error.error is not None
    assert (rpc_error.error.type, rpc_error.error.code, rpc_error.error.message) == (
        "jsonrpc",
        "-32601",
        "nope",
    )
    assert rpc_error.error.status == 200 and rpc_error.output_messages == []
    assert rpc_error.complete


def test_sse_server_request_and_notifications_before_the_response() -> None:
    request = rpc(
        "tools/call",
        {
            "name": "ask",
            "arguments": {},
            "_meta": {
                "progressToken": "p1",
                "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                "tracestate": "k=v",
            },
        },
        id=2,
    )
    body = (
        sse(
            rpc("notifications/progress", {"progressToken": "p1", "progress": 1}, id=None),
            rpc("sampling/createMessage", {"messages": [], "maxTokens": 5}, id=0),
            {"jsonrpc": "2.0", "id": 1, "result": {}},  # another id: not our response
            {"jsonrpc": "2.0", "id": "2", "result": {}},  # a string "2" is not the number 2
            {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "ok"}]}},
        )
        + b"event: ping\ndata: ping\n\n"
    )
    call = parse(
        exchange(
            request,
            body,
            content_type="text/event-stream",
            request_headers=(SESSION, VERSION, ("traceparent", "00-aa-bb-01")),
        )
    )
    assert call.stream and call.complete
    assert call.ids["traceparent"] == "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    assert call.id_sources["traceparent"] == "params._meta.traceparent"
    assert call.extras["http_trace_context"] == {"traceparent": "00-aa-bb-01"}
    assert call.ids["tracestate"] == "k=v"
    assert call.ids["mcp_progress_token"] == "p1"
    assert call.extras["response_event_id"] == "4"
    kinds = [(m["kind"], m.get("method"), m.get("id")) for m in call.extras["stream_messages"]]
    assert kinds == [
        ("notification", "notifications/progress", None),
        ("request", "sampling/createMessage", 0),
        ("response", None, 1),
        ("response", None, "2"),
    ]
    assert call.extras["sse_other_events"] == {"ping": 1}
    assert [p.content for p in call.output_messages[0].parts if isinstance(p, TextPart)] == ["ok"]


def test_reply_cut_before_the_response() -> None:
    body = sse(rpc("notifications/message", {"level": "info", "data": "x"}, id=None))
    body += b'event: message\ndata: {"jsonrpc":"2.0","id":1,"res'
    call = parse(
        exchange(rpc("tools/list"), body, content_type="text/event-stream", response_complete=False)
    )
    assert not call.complete
    assert call.error is None and call.tool_definitions == []
    assert "mcp.http_unfinished" not in [d.code for d in call.diagnostics]
    assert len(call.extras["stream_messages"]) == 1


def test_no_response_at_all() -> None:
    call = parse(exchange(rpc("ping"), None))
    assert call.operation == "ping" and not call.complete and call.error is None


def test_notification_202_and_http_errors() -> None:
    call = parse(exchange(rpc("notifications/initialized", id=None), b"", status=202))
    assert call.operation == "notifications/initialized" and call.complete
    assert "jsonrpc_id" not in call.ids and call.error is None
    call = parse(
        exchange(
            rpc("tools/list"), b"Bad Request: no session", status=400, content_type="text/plain"
        )
    )
    assert call.error is not None
    assert (call.error.status, call.error.type, call.error.source) == (400, None, "http")
    assert call.error.message == "Bad Request: no session"
    assert not call.complete


def test_client_response_posted_to_the_server() -> None:
    answer = {"jsonrpc": "2.0", "id": 0, "result": {"role": "assistant", "content": {}}}
    call = parse(exchange(answer, b"", status=202))
    assert call.operation is None
    assert call.ids["jsonrpc_id"] == "0"
    assert call.extras["client_response"] == answer
    assert call.complete


def test_batch() -> None:
    batch = [rpc("tools/list", id=1), rpc("notifications/initialized", id=None), rpc("ping", id=2)]
    reply = [
        {"jsonrpc": "2.0", "id": 2, "result": {}},
        {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "t", "inputSchema": {}}]}},
    ]
    call = parse(exchange(batch, orjson.dumps(reply)))
    assert call.operation == "tools/list" and call.ids["jsonrpc_id"] == "1"
    assert call.tool_definitions == [{"name": "t", "inputSchema": {}}]
    assert [m.get("method") for m in call.extras["batch"]] == [
        "tools/list",
        "notifications/initialized",
        "ping",
    ]
    assert call.extras["stream_messages"] == [
        {"kind": "response", "id": 2, "result": {}, "at": "body"}
    ]


def test_initialize_with_json_reply() -> None:
    params = {
        "protocolVersion": "2025-06-18",
        "capabilities": {"roots": {}},
        "clientInfo": {"name": "c", "version": "1"},
    }
    result = {
        "protocolVersion": "2025-03-26",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "s", "version": "2"},
    }
    call = parse(
        exchange(
            rpc("initialize", params, id=0),
            orjson.dumps({"jsonrpc": "2.0", "id": 0, "result": result}),
            request_headers=(),
            response_headers=(("mcp-session-id", "new"),),
        )
    )
    assert call.request_params == params
    assert call.extras["result"] == result
    assert call.ids["mcp_session_id"] == "new"
    assert call.id_sources["mcp_session_id"] == "response header Mcp-Session-Id"
    assert call.ids["mcp_protocol_version"] == "2025-03-26"
    assert call.id_sources["mcp_protocol_version"] == "result.protocolVersion"


def test_recognition() -> None:
    def score(x: Exchange) -> float:
        return MCP_HTTP.match(ExchangeView(x))

    assert score(exchange(rpc("tools/list"), None, request_headers=())) > 0
    assert score(exchange(rpc("eth_call"), None, request_headers=())) <= 0  # plain JSON-RPC
    assert score(exchange(rpc("eth_call"), None)) > 0  # ... with MCP headers
    assert score(exchange(None, None, method="GET")) > 0
    assert score(exchange(None, None, method="GET", request_headers=())) <= 0
    assert score(exchange(None, None, method="DELETE", request_headers=())) <= 0
    assert score(exchange(None, None, method="PUT")) <= 0
    chat = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    assert score(exchange(chat, None, request_headers=())) <= 0
    assert score(exchange({"jsonrpc": "1.0", "method": "ping", "id": 1}, None)) <= 0
    assert score(exchange({"jsonrpc": "2.0", "method": 5, "id": 1}, None)) <= 0


def test_message_kind() -> None:
    assert message_kind(rpc("a")) == "request"
    assert message_kind(rpc("a", id=None)) == "notification"
    assert message_kind({"jsonrpc": "2.0", "id": 1, "result": None}) == "response"
    assert message_kind({"jsonrpc": "2.0", "id": None, "error": {}}) == "error"
    assert message_kind({"jsonrpc": "2.0", "id": 1}) is None
    assert message_kind([rpc("a")]) is None


# -- fuzz -------------------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
IDS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.text(max_size=4),
    st.floats(allow_nan=False, allow_infinity=False),
)
MESSAGES = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "1.0", 2])},
    optional={
        "id": IDS,
        "method": st.one_of(
            st.sampled_from(["tools/call", "tools/list", "initialize", "notifications/x", "ping"]),
            JSON_VALUES,
        ),
        "params": st.one_of(
            JSON_VALUES,
            st.fixed_dictionaries(
                {},
                optional={"name": JSON_VALUES, "arguments": JSON_VALUES, "_meta": JSON_VALUES},
            ),
        ),
        "result": st.one_of(
            JSON_VALUES,
            st.fixed_dictionaries(
                {},
                optional={
                    "content": st.one_of(JSON_VALUES, st.lists(JSON_VALUES, max_size=3)),
                    "isError": JSON_VALUES,
                    "tools": JSON_VALUES,
                    "protocolVersion": JSON_VALUES,
                },
            ),
        ),
        "error": JSON_VALUES,
    },
)
BODIES = st.one_of(MESSAGES, st.lists(MESSAGES, max_size=3), JSON_VALUES)


@settings(max_examples=300, deadline=None)
@given(
    request=BODIES,
    replies=st.lists(BODIES, max_size=4),
    as_sse=st.booleans(),
    junk=st.binary(max_size=30),
    method=st.sampled_from(["POST", "GET", "DELETE"]),
    status=st.sampled_from([200, 202, 400, 405]),
    complete=st.booleans(),
)
def test_fuzzed_bodies_never_raise(
    request: Any,
    replies: list[Any],
    as_sse: bool,
    junk: bytes,
    method: str,
    status: int,
    complete: bool,
) -> None:
    if as_sse:
        body = sse(*replies) + junk
        content_type = "text/event-stream"
    else:
        body = (orjson.dumps(replies[0]) if replies else b"") + junk
        content_type = "application/json"
    x = exchange(
        request,
        body,
        method=method,
        status=status,
        content_type=content_type,
        response_complete=complete,
    )
    view = ExchangeView(x)
    if MCP_HTTP.match(view) > 0:
        call = Call(id="c", exchange_id=x.id, api="mcp")
        MCP_HTTP.parse(view, call)
        orjson.dumps(call.to_json())


def test_with_every_family_registered() -> None:
    """What the lead's registry line will give: MCP exchanges go to ``mcp``, the LLM calls of
    the same cassettes keep their own family."""
    from agentshark.apis.registry import families

    registry = (*families(), *FAMILIES)
    exchanges = corpus("mcp")
    if not exchanges:
        pytest.skip("corpus absent")
    for name, x in exchanges:
        alone = recognize(x, "c", registry=families())
        together = recognize(x, "c", registry=registry)
        assert together is not None, (name, x.id)
        if ExchangeView(x).host.startswith("mcp."):
            assert together.api == "mcp", (name, x.id)
        else:
            assert alone is not None and together.api == alone.api != "mcp", (name, x.id)


def test_tools_call_without_a_string_name_is_not_invented() -> None:
    for sent, details in ((None, {}), (42, {"raw_name": 42})):
        params: dict[str, Any] = {"arguments": {"a": 1}}
        if sent is not None:
            params["name"] = sent
        answer = {"jsonrpc": "2.0", "id": 1, "result": {"content": []}}
        call = parse(exchange(rpc("tools/call", params), orjson.dumps(answer)))
        (part,) = call.input_messages[0].parts
        assert isinstance(part, ToolCallPart)
        assert (part.name, part.provider_details, part.arguments) == (None, details, {"a": 1})
