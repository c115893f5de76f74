"""The MCP and A2A captures of tests/data/captures (real SDKs on loopback, made by
scripts/make_agent_captures.py) against the client's own record, truth.json.

Every HTTP exchange the client's HTTP library saw is paired with one captured exchange (same
client port, same place on its connection) and its call; every JSON-RPC message the client's
session wrote or read is then looked for in that call: requests by operation, id and params,
responses by result or error, notifications and server requests in the right call's
``stream_messages``. The README of the folder says what each capture holds.
"""

from __future__ import annotations

import functools
import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentshark.apis.model import Call, TextPart, ToolCallPart, ToolCallResponsePart
from agentshark.jsonrpc import message_kind
from agentshark.model import Exchange, header
from agentshark.pipeline import ConnectionReport, Options
from tests.helpers import ROOT, Collected

Json = Any
OWN = ROOT / "tests" / "data" / "captures"
MCP = ("mcp_legacy_sse", "mcp_streamable_sessions", "mcp_stateless_2026", "mcp_streamable_tls")
A2A = ("a2a_v1_jsonrpc", "a2a_v1_rest")
# What the session wrote but never posted: mcp_stateless_2026's closing notifications/cancelled
# for subscriptions/listen goes nowhere, the transport closes the stream (README).
NOT_POSTED = {"mcp_stateless_2026": [("notification", "notifications/cancelled", None)]}


# -- one pipeline run, paired with the truth ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class Run:
    truth: dict[str, Json]
    collected: Collected
    pairs: list[tuple[dict[str, Json], Exchange]]  # (truth exchange, captured one), truth order
    calls: dict[str, Call]  # by exchange id

    def call(self, exchange: Exchange) -> Call:
        return self.calls[exchange.id]


def folder(name: str) -> Path:
    return OWN / name


def collect(name: str, *, keys: bool = True) -> Collected:
    keylog = folder(name) / "keys.log"
    options = Options(calls=True, keylogs=[str(keylog)] if keys and keylog.exists() else [])
    return Collected([str(folder(name) / "capture.pcap")], options)


@functools.cache
def run(name: str) -> Run:
    collected = collect(name)
    truth: dict[str, Json] = json.loads((folder(name) / "truth.json").read_text())
    port = {c.connection.id: c.connection.client[1] for c in collected.connections}
    by_port: dict[int, list[Exchange]] = defaultdict(list)
    for x in sorted(collected.exchanges, key=lambda x: x.request.started or 0 if x.request else 0):
        assert x.connection is not None
        by_port[port[x.connection]].append(x)
    pairs = [(tx, by_port[tx["client_port"]].pop(0)) for tx in truth["http_exchanges"]]
    assert not any(by_port.values()), "captured exchanges the client did not make"
    calls = {c.exchange_id: c for c in collected.calls}
    assert len(calls) == len(collected.calls), "two calls for one exchange"
    return Run(truth, collected, pairs, calls)


def kind_key(m: dict[str, Json]) -> tuple[Json, Json, Json]:
    """(kind, method, id) of a truth summary or of a JSON-RPC message."""
    kind = m["kind"] if "kind" in m else message_kind(m)
    return kind, m.get("method"), m.get("id")


def id_text(value: Json) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def canonical(m: dict[str, Json]) -> str:
    return json.dumps(m, sort_keys=True)


# -- HTTP and TCP, every capture -------------------------------------------------------------


def connection_ports(connections: list[ConnectionReport]) -> list[int]:
    return sorted(c.connection.client[1] for c in connections)


@pytest.mark.parametrize("name", [*MCP, *A2A])
def test_exchanges_and_connections_are_the_clients(name: str) -> None:
    r = run(name)
    t = r.truth
    assert len(r.collected.connections) == t["tcp_connections"]
    assert connection_ports(r.collected.connections) == sorted(t["client_ports"])
    assert len(r.pairs) == t["http_exchange_count"] == len(r.collected.exchanges)
    for tx, x in r.pairs:
        assert x.request is not None and x.response is not None
        assert (x.request.method, x.request.target) == (tx["method"], tx["path"])
        assert x.response.status == tx["status"]
        assert x.response.version == tx["http_version"]
    assert len(r.calls) == len(r.pairs)  # one call per exchange
    assert not [d for s in r.collected.sources for d in s.diagnostics]
    assert not [d for c in r.collected.connections for d in c.diagnostics]
    for call in r.calls.values():
        assert [d for d in call.diagnostics if d.severity != "info"] == [], call.id


# -- MCP: the messages the client wrote and read ----------------------------------------------


@dataclass(frozen=True, slots=True)
class Posted:
    exchange: dict[str, Json]  # the truth exchange
    message: dict[str, Json]  # the JSON-RPC message it carried, whole
    call: Call


def posted(r: Run) -> list[Posted]:
    """Every message the client POSTed, with its call (one message per body here)."""
    sends = [m for m in r.truth["jsonrpc_messages"] if m["direction"] == "send"]
    out: list[Posted] = []
    for tx, x in r.pairs:
        summaries = tx["request_body"].get("jsonrpc", [])
        assert len(summaries) <= 1, "no batches in these captures"
        for summary in summaries:
            n = next(i for i, m in enumerate(sends) if kind_key(m) == kind_key(summary))
            out.append(Posted(tx, sends.pop(n)["message"], r.call(x)))
    assert [kind_key(m) for m in sends] == NOT_POSTED.get(r.truth["capture"], [])
    return out


def received(r: Run, *kinds: str) -> list[dict[str, Json]]:
    return [
        m["message"]
        for m in r.truth["jsonrpc_messages"]
        if m["direction"] == "recv" and m["kind"] in kinds
    ]


def result_of(call: Call) -> Json:
    """The JSON-RPC result as the server sent it, rebuilt from the call."""
    if call.operation == "tools/list":
        return {**call.extras["result"], "tools": call.tool_definitions}
    if call.operation != "tools/call" or call.extras.get("result_type") == "input_required":
        return call.extras["result"]
    response = call.output_messages[0].parts[0]
    assert isinstance(response, ToolCallResponsePart)
    details = dict(response.provider_details)
    out: dict[str, Json] = {"content": response.response}
    if "is_error" in details:
        out["isError"] = details.pop("is_error")
    if "structured_content" in details:
        out["structuredContent"] = details.pop("structured_content")
    return {**out, **details}


def check_params(call: Call, message: dict[str, Json]) -> None:
    params = message.get("params", {})
    meta = params.get("_meta")
    assert call.extras.get("request_meta") == meta
    if call.operation == "tools/call":
        (message_in,) = call.input_messages
        assert message_in.parts == [
            ToolCallPart(
                id=id_text(message["id"]), name=params["name"], arguments=params["arguments"]
            )
        ]
        rest = {k: v for k, v in params.items() if k not in ("name", "arguments", "_meta")}
        assert call.request_params == rest
    else:
        assert call.request_params == {k: v for k, v in params.items() if k != "_meta"}


def check_reply(call: Call, reply: dict[str, Json], status: int) -> None:
    assert call.complete
    if "error" in reply:
        error = reply["error"]
        assert call.error is not None
        assert (call.error.status, call.error.type, call.error.code, call.error.message) == (
            status,
            "jsonrpc",
            str(error["code"]),
            error["message"],
        )
        assert call.extras.get("error_data") == error.get("data")
        assert call.output_messages == []
        return
    result = reply["result"]
    assert call.error is None  # an isError tool result is a result, not an error
    assert result_of(call) == result
    if call.operation == "tools/call" and "content" in result:
        _, *parts = call.output_messages[0].parts
        assert parts == [TextPart(content=c["text"]) for c in result["content"]]
    elif call.operation == "tools/call":
        assert call.output_messages == []


@pytest.mark.parametrize("name", MCP)
def test_mcp_requests_and_their_replies(name: str) -> None:
    """One call per request the client sent: operation, id, params; its result or error."""
    r = run(name)
    replies = {id_text(m["id"]): m for m in received(r, "response", "error")}
    for p in posted(r):
        if message_kind(p.message) != "request":
            continue
        call, rpc_id = p.call, p.message["id"]
        assert call.api == "mcp"
        assert call.operation == p.message["method"]
        assert call.ids["jsonrpc_id"] == id_text(rpc_id)
        id_type = "string" if isinstance(rpc_id, str) else "number"
        assert call.id_sources["jsonrpc_id"] == f"request body id (JSON {id_type})"
        assert "direction" not in call.extras
        check_params(call, p.message)
        reply = replies.pop(id_text(rpc_id), None)
        if reply is None:  # subscriptions/listen: the client closed it, no response
            assert not call.complete and call.error is None and call.output_messages == []
            assert "result" not in call.extras
        else:
            check_reply(call, reply, p.exchange["status"])
    assert replies == {}  # every response the client read answered a request it posted


@pytest.mark.parametrize("name", MCP)
def test_mcp_notifications_sent(name: str) -> None:
    """Each notification the client posted is a call without a JSON-RPC id, answered 202."""
    found = [p for p in posted(run(name)) if message_kind(p.message) == "notification"]
    assert bool(found) == (name != "mcp_stateless_2026")  # 2026-07-28: no initialized
    for p in found:
        assert p.call.operation == p.message["method"]
        assert "jsonrpc_id" not in p.call.ids
        assert p.call.request_params == p.message.get("params", {})
        assert p.call.complete and p.call.error is None
        assert p.exchange["status"] == 202


def expected_stream(tx: dict[str, Json], own_id: Json) -> list[tuple[Json, ...]]:
    """(kind, method, id, at) of the reply's messages other than the response to ``own_id``."""
    body = tx["response_body"]
    if "sse_events" in body:
        events = [(f"stream event {n}", e.get("jsonrpc")) for n, e in enumerate(body["sse_events"])]
    else:
        events = [("body", m) for m in body.get("jsonrpc", [])]
    out: list[tuple[Json, ...]] = []
    answered = own_id is None
    for at, m in events:
        if m is None:
            continue  # not JSON-RPC: the legacy stream's endpoint event
        if not answered and m["kind"] in ("response", "error") and m["id"] == own_id:
            answered = True
            continue
        out.append((*kind_key(m), at))
    return out


@pytest.mark.parametrize("name", MCP)
def test_mcp_messages_received_are_in_the_right_stream(name: str) -> None:
    """Every notification and server request the client read is in the stream_messages of the
    call whose reply carried it, in order, with its params whole."""
    r = run(name)
    own = {p.call.id: p.message.get("id") for p in posted(r) if "method" in p.message}
    streamed: list[dict[str, Json]] = []
    for tx, x in r.pairs:
        call = r.call(x)
        entries = call.extras.get("stream_messages", [])
        got = [(*kind_key(e), e["at"]) for e in entries]
        assert got == expected_stream(tx, own.get(call.id)), call.id
        streamed += [e for e in entries if e["kind"] in ("notification", "request")]
        if tx["method"] == "GET":  # the session stream ends when the client closes it
            assert call.complete is tx["response_complete"]
    fields = ("kind", "method", "id", "params")
    want = [
        {"kind": message_kind(m), **{k: m[k] for k in fields[1:] if k in m}}
        for m in received(r, "notification", "request")
    ]
    have = [{k: e[k] for k in fields if k in e} for e in streamed]
    assert sorted(map(canonical, have)) == sorted(map(canonical, want))


@pytest.mark.parametrize("name", MCP)
def test_mcp_session_id(name: str) -> None:
    r = run(name)
    sessions = r.truth["mcp_session_ids"] or r.truth.get("sse_session_ids", [])
    assert len(sessions) <= 1
    for call in r.calls.values():
        assert call.ids.get("mcp_session_id") == (sessions[0] if sessions else None), call.id


# -- MCP: one capture at a time ---------------------------------------------------------------


def call_of(r: Run, operation: str, **ids: str) -> Call:
    found = [
        c
        for c in r.calls.values()
        if c.operation == operation and all(c.ids.get(k) == v for k, v in ids.items())
    ]
    assert len(found) == 1, (operation, ids)
    return found[0]


def sse_stream(r: Run) -> tuple[dict[str, Json], Exchange]:
    ((tx, x),) = [(tx, x) for tx, x in r.pairs if tx["method"] == "GET"]
    return tx, x


def test_legacy_sse_responses_come_from_the_stream() -> None:
    r = run("mcp_legacy_sse")
    tx, x = sse_stream(r)
    stream = r.call(x)
    endpoint = tx["response_body"]["sse_events"][0]
    assert endpoint["event"] == "endpoint"
    assert stream.operation == "session.stream" and stream.stream
    assert stream.extras["mcp_transport"] == "http+sse"
    assert stream.extras["endpoint"] == endpoint["data"]
    assert stream.extras["sse_other_events"] == {"endpoint": 1}
    assert stream.ids["mcp_session_id"] == r.truth["sse_session_ids"][0]
    assert stream.id_sources["mcp_session_id"] == "SSE endpoint event, URL query session_id"
    requests = {
        id_text(p.message["id"]): p for p in posted(r) if message_kind(p.message) == "request"
    }
    full = iter(received(r, "notification"))
    want: list[dict[str, Json]] = []
    for n, event in enumerate(tx["response_body"]["sse_events"][1:], 1):
        m = event["jsonrpc"]
        at = f"stream event {n}"
        if m["kind"] == "notification":
            message = next(full)
            assert message["method"] == m["method"]
            want.append({"kind": "notification", **message, "at": at})
            del want[-1]["jsonrpc"]  # the entry is the message's summary, not the message
            continue
        request = requests.pop(id_text(m["id"]))
        assert request.exchange["status"] == 202
        call = request.call
        assert call.complete
        assert call.extras["response_via"] == f"{x.id} response {at}"
        assert call.extras["mcp_transport"] == "http+sse"
        assert call.extras["endpoint"] == request.exchange["path"] == endpoint["data"]
        assert call.id_sources["mcp_session_id"] == "request URL query session_id"
        want.append({"kind": m["kind"], "id": m["id"], "answers": call.id, "at": at})
    assert requests == {}  # every POSTed request was answered on the stream
    assert stream.extras["stream_messages"] == want


def test_legacy_sse_notifications_name_the_transport() -> None:
    r = run("mcp_legacy_sse")
    found = [p for p in posted(r) if message_kind(p.message) == "notification"]
    assert [p.message["method"] for p in found] == ["notifications/initialized"]
    for p in found:
        assert p.call.id_sources["mcp_session_id"] == "request URL query session_id"
        assert p.call.extras["mcp_transport"] == "http+sse"
        assert p.call.extras["endpoint"] == p.exchange["path"]


def test_streamable_sessions_server_requests_answered_by_post() -> None:
    """sampling/createMessage and elicitation/create came in tools/call replies, roots/list on
    the GET stream; each client answer is a call named after the server's request."""
    r = run("mcp_streamable_sessions")
    carriers = {
        id_text(m["id"]): (r.call(x), f"{x.id} response stream event {n}")
        for tx, x in r.pairs
        for n, e in enumerate(tx["response_body"].get("sse_events", []))
        if (m := e["jsonrpc"])["kind"] == "request"
    }
    server_requests = {id_text(m["id"]): m for m in received(r, "request")}
    answers = [p for p in posted(r) if message_kind(p.message) == "response"]
    assert len(answers) == len(server_requests) == 3
    for p in answers:
        request = server_requests[id_text(p.message["id"])]
        carrier, at = carriers[id_text(p.message["id"])]
        call = p.call
        assert call.operation == request["method"]
        assert call.ids["jsonrpc_id"] == id_text(p.message["id"])
        assert call.extras["direction"] == "server_to_client"
        assert call.extras["server_request_in"] == {"call_id": carrier.id, "at": at}
        assert call.extras["result"] == p.message["result"]
        assert call.request_params == request.get("params", {})
        assert "client_response" not in call.extras
        assert call.complete and call.error is None and p.exchange["status"] == 202
    by_method = {m["method"]: carriers[id_text(m["id"])][0] for m in server_requests.values()}
    assert {k: (c.operation, tool_name(c)) for k, c in by_method.items()} == {
        "sampling/createMessage": ("tools/call", "summarize"),
        "elicitation/create": ("tools/call", "reserve"),
        "roots/list": ("session.stream", None),
    }


def tool_name(call: Call) -> str | None:
    if not call.input_messages:
        return None
    part = call.input_messages[0].parts[0]
    return part.name if isinstance(part, ToolCallPart) else None


def test_streamable_sessions_errors_get_and_delete() -> None:
    r = run("mcp_streamable_sessions")
    assert len(r.collected.connections) == 17
    assert all(tx["new_connection"] for tx, _ in r.pairs)  # one TCP connection per exchange
    set_level = call_of(r, "logging/setLevel")
    assert set_level.error is not None
    assert (set_level.error.code, set_level.error.message) == ("-32601", "Method not found")
    assert set_level.extras["error_data"] == "logging/setLevel"
    prompt = call_of(r, "prompts/get")
    assert prompt.error is not None
    assert (prompt.error.code, prompt.error.message) == ("0", "Unknown prompt: no_such_prompt")
    unknown_tool = next(c for c in r.calls.values() if tool_name(c) == "no_such_tool")
    assert unknown_tool.error is None
    response = unknown_tool.output_messages[0].parts[0]
    assert isinstance(response, ToolCallResponsePart)
    assert response.provider_details["is_error"] is True
    session = r.truth["mcp_session_ids"][0]
    delete = call_of(r, "session.delete")
    (tx,) = [tx for tx, x in r.pairs if r.call(x) is delete]
    assert (tx["method"], tx["status"]) == ("DELETE", 200)
    assert delete.complete and delete.error is None and delete.ids["mcp_session_id"] == session
    stream = call_of(r, "session.stream")
    assert stream.stream and stream.error is None and "jsonrpc_id" not in stream.ids
    initialize = call_of(r, "initialize")
    assert initialize.id_sources["mcp_session_id"] == "response header Mcp-Session-Id"


def test_stateless_2026_headers_meta_and_no_session() -> None:
    r = run("mcp_stateless_2026")
    assert not r.truth["mcp_session_ids"]
    for p in posted(r):
        call, params = p.call, p.message.get("params", {})
        assert "mcp_session_id" not in call.ids
        assert call.ids["mcp_protocol_version"] == "2026-07-28"
        assert call.id_sources["mcp_protocol_version"] == "request header MCP-Protocol-Version"
        headers = dict(p.exchange["request_headers"])
        want = {"Mcp-Method": headers["mcp-method"]}
        if "mcp-name" in headers:
            want["Mcp-Name"] = headers["mcp-name"]
        assert call.extras["mcp_headers"] == want
        assert want["Mcp-Method"] == p.message["method"]
        assert ("Mcp-Name" in want) == (p.message["method"] == "tools/call")
        if "Mcp-Name" in want:
            assert want["Mcp-Name"] == params["name"]
        assert call.extras["client_info"] == params["_meta"]["io.modelcontextprotocol/clientInfo"]
    replies = {id_text(m["id"]): m["result"] for m in received(r, "response")}
    for p in posted(r):
        result = replies.get(id_text(p.message["id"]))
        if result is None:
            assert "server_info" not in p.call.extras
            continue
        info = result["_meta"]["io.modelcontextprotocol/serverInfo"]
        assert p.call.extras["server_info"] == info
        assert p.call.extras["result_type"] == result["resultType"]


def test_stateless_2026_input_required_round() -> None:
    r = run("mcp_stateless_2026")
    first, retry = [p for p in posted(r) if p.message.get("params", {}).get("name") == "book_table"]
    replies = {id_text(m["id"]): m["result"] for m in received(r, "response")}
    asked = replies[id_text(first.message["id"])]
    assert asked["resultType"] == "input_required"
    assert first.call.extras["result_type"] == "input_required"
    assert first.call.output_messages == []
    assert first.call.extras["result"]["inputRequests"] == asked["inputRequests"]
    assert first.call.error is None and first.call.complete
    params = retry.message["params"]
    assert retry.call.ids["jsonrpc_id"] != first.call.ids["jsonrpc_id"]
    assert retry.call.request_params == {
        "inputResponses": params["inputResponses"],
        "requestState": asked["requestState"],
    }
    assert params["requestState"] == asked["requestState"]
    assert retry.call.extras["result_type"] == "complete"


def test_stateless_2026_subscriptions_listen() -> None:
    r = run("mcp_stateless_2026")
    listen = call_of(r, "subscriptions/listen")
    assert listen.ids["jsonrpc_id"] == "listen-1"
    assert listen.id_sources["jsonrpc_id"] == "request body id (JSON string)"
    (sent,) = [p.message for p in posted(r) if p.call is listen]
    assert listen.request_params == {"notifications": sent["params"]["notifications"]}
    listened = [
        {"kind": "notification", "method": m["method"], "params": m["params"]}
        for m in received(r, "notification")
        if "io.modelcontextprotocol/subscriptionId" in m["params"].get("_meta", {})
    ]
    assert [m["method"] for m in listened] == [
        "notifications/subscriptions/acknowledged",
        "notifications/tools/list_changed",
    ]
    assert [
        {k: e[k] for k in ("kind", "method", "params")} for e in listen.extras["stream_messages"]
    ] == listened
    assert not listen.complete and listen.error is None  # the client closed it unanswered


# -- MCP over TLS ----------------------------------------------------------------------------


def test_tls_connections_decrypt_with_the_key_log() -> None:
    r = run("mcp_streamable_tls")
    want = {c["client_port"]: c for c in r.truth["tls_connections"]}
    assert sorted(want) == connection_ports(r.collected.connections)
    for conn in r.collected.connections:
        tls = conn.tls
        expected = want[conn.connection.client[1]]
        assert tls is not None and tls["decrypted"] is True
        assert tls["version"] == expected["tls_version"].replace("TLSv", "TLS ")
        assert tls["cipher_suite"] == expected["cipher"]
        assert tls["alpn"] == expected["alpn"]  # negotiated: none (http/1.1 was offered)
        assert conn.protocol == "http/1.1"


def test_tls_without_the_key_log() -> None:
    collected = collect("mcp_streamable_tls", keys=False)
    assert collected.calls == [] and collected.exchanges == []
    truth = run("mcp_streamable_tls").truth
    assert connection_ports(collected.connections) == sorted(truth["client_ports"])
    assert len(collected.connections) == len(truth["tls_connections"])
    for conn in collected.connections:
        assert conn.protocol == "tls"
        assert [d.code for d in conn.diagnostics] == ["tls.no_keys"]


# -- A2A ---------------------------------------------------------------------------------------

# What the client sent (scripts/make_agent_captures.py client_a2a; the REST truth records it)
SENT_TEXT = {
    "SendMessage hello (message reply)": "hello agent",
    "SendStreamingMessage stream (task, status and artifact updates)": "stream a sentence",
    "SendMessage fail (task fails)": "fail please",
    "SendMessage slow (return_immediately)": "slow job",
}
UNKNOWN_TASK = "00000000-0000-0000-0000-000000000000"  # the client's GetTask of no task
ADDRESSED = {  # step -> the task its request names (truth task_ids key)
    "GetTask (the streamed task)": "streamed",
    "CancelTask (the working slow task)": "slow",
    "CancelTask (the completed task: error)": "streamed",
    "GetTask unknown id (error)": None,
}
STREAM_KIND = {
    "task": "task",
    "message": "message",
    "statusUpdate": "status-update",
    "artifactUpdate": "artifact-update",
}


def a2a_steps(r: Run) -> list[tuple[dict[str, Json], dict[str, Json], Call]]:
    """(step, truth exchange, call): each SDK call here made exactly one HTTP request."""
    assert len(r.truth["steps"]) == len(r.pairs)
    return [(s, tx, r.call(x)) for s, (tx, x) in zip(r.truth["steps"], r.pairs, strict=True)]


def operation_of(step: dict[str, Json]) -> str:
    return "GetAgentCard" if step["label"] == "agent card" else str(step["label"].split()[0])


def texts(call: Call, *, artifact: str | None) -> list[str]:
    """The output text parts from ``artifact`` (None: those of no artifact)."""
    return [
        p.content
        for m in call.output_messages
        for p in m.parts
        if isinstance(p, TextPart) and p.provider_details.get("artifact_id") == artifact
    ]


def final_states(r: Run) -> dict[str, str]:
    """Each task's last state the client saw."""
    out: dict[str, str] = {}
    for step in r.truth["steps"]:
        for ev in [*step.get("events", []), step.get("result", {})]:
            task = ev.get("id") or ev.get("taskId")
            if task and "state" in ev:
                out[task] = ev["state"]
    return out


@pytest.mark.parametrize("name", A2A)
def test_a2a_calls_match_truth(name: str) -> None:
    r = run(name)
    jsonrpc = name == "a2a_v1_jsonrpc"
    for step, tx, call in a2a_steps(r):
        operation = operation_of(step)
        assert call.api == "a2a"
        assert call.operation == operation
        assert call.complete
        if operation == "GetAgentCard":
            check_card(call, tx)
            continue
        assert call.extras["binding"] == ("jsonrpc" if jsonrpc else "rest")
        assert call.extras["a2a_version"] == header(tx["request_headers"], "a2a-version")
        if jsonrpc:
            (sent,) = tx["request_body"]["jsonrpc"]
            assert sent["method"] == operation
            assert call.ids["jsonrpc_id"] == sent["id"]
        else:
            assert "jsonrpc_id" not in call.ids
        if step["label"] in SENT_TEXT:
            check_sent(call, tx, SENT_TEXT[step["label"]], jsonrpc=jsonrpc)
        if step["label"] in ADDRESSED:
            key = ADDRESSED[step["label"]]
            task = r.truth["task_ids"][key] if key else UNKNOWN_TASK
            assert call.ids["a2a_task_id"] == task
            if not jsonrpc:
                assert tx["path"].split("?")[0].split("/")[-1].split(":")[0] == task
        if "error" in step:
            check_error(call, step, tx, jsonrpc=jsonrpc)
        elif operation == "ListTasks":
            states = final_states(r)
            assert [(t["id"], t["state"]) for t in call.extras["tasks"]] == [
                (task, states[task]) for task in step["result"]["task_ids"]
            ]
        elif "events" in step:
            check_events(call, step["events"], stream=operation == "SendStreamingMessage")
        else:
            check_events(call, [step["result"]], stream=False)


def check_card(call: Call, tx: dict[str, Json]) -> None:
    card = tx["response_body"]["agent_card"]
    assert call.extras["agent_card"]["name"] == card["name"]
    assert call.extras["agent_card"]["interfaces"] == [
        [i["protocolBinding"], i["protocolVersion"], i["url"]] for i in card["interfaces"]
    ]
    assert call.error is None and tx["status"] == 200


def check_sent(call: Call, tx: dict[str, Json], text: str, *, jsonrpc: bool) -> None:
    (message,) = call.input_messages
    assert message.role == "ROLE_USER"
    assert message.parts == [TextPart(content=text)]
    if not jsonrpc:  # the REST truth keeps the request's message
        sent = tx["request_body"]["a2a"]
        assert sent["text"] == [text]
        assert call.ids["a2a_message_id"] == sent["messageId"]


def check_error(call: Call, step: dict[str, Json], tx: dict[str, Json], *, jsonrpc: bool) -> None:
    assert call.error is not None
    assert call.output_messages == [] and call.finish_reasons == []
    if jsonrpc:
        (reply,) = tx["response_body"]["jsonrpc"]
        error = reply["error"]
        got = (call.error.status, call.error.type, call.error.code, call.error.message)
        assert got == (tx["status"], "jsonrpc", str(error["code"]), error["message"])
        assert call.extras["error_name"] == step["error"].split(":")[0]
    else:
        error = tx["response_body"]["error"]
        got = (call.error.status, call.error.type, call.error.code, call.error.message)
        assert got == (tx["status"], "http", error["status"], error["message"])
        assert tx["status"] == error["code"]


def check_events(call: Call, events: list[dict[str, Json]], *, stream: bool) -> None:
    """A Message or Task result, or a stream of task, status and artifact updates."""
    assert call.error is None
    assert call.stream is stream
    if stream:
        got = [
            (e["kind"], e.get("state"), e.get("artifact_id")) for e in call.extras["stream_events"]
        ]
        want = [(STREAM_KIND[e["a2a_kind"]], e.get("state"), e.get("artifactId")) for e in events]
        assert got == want
    artifacts: dict[str, list[str]] = defaultdict(list)
    for ev in events:
        if ev["a2a_kind"] == "artifactUpdate":
            artifacts[ev["artifactId"]] += ev["artifact_text"]
    for artifact, pieces in artifacts.items():
        # streamed chunks ("append": true) are one text, joined as sent; a task result holds
        # the parts the server stored
        assert texts(call, artifact=artifact) == (["".join(pieces)] if stream else pieces)
    first = events[0]
    assert call.ids["a2a_context_id"] == first["contextId"]
    if first["a2a_kind"] == "message":
        (message,) = call.output_messages
        assert message.role == first["role"]
        assert texts(call, artifact=None) == first["text"]
        assert call.finish_reasons == [] and "a2a_task_id" not in call.ids
        return
    task = first.get("id") or first["taskId"]
    state = [e["state"] for e in events if "state" in e][-1]
    assert call.ids["a2a_task_id"] == task
    assert call.finish_reasons == [state]
    assert call.output_messages[-1].finish_reason == state
    assert (call.extras["task"]["id"], call.extras["task"]["state"]) == (task, state)
