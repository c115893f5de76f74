"""``agentshark mcp-server`` driven by the official ``mcp`` SDK's client, over stdio (the
server as a child process) and over Streamable HTTP on 127.0.0.1.

Each transport runs one session that calls every tool (on the README's example capture,
shared captures with their key logs beside them, the planted-secrets corpus) and keeps the
answers; the tests then check them against :func:`agentshark.analyze` (the oracle: the same
report the command line writes) and the secret corpus.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

import agentshark
from tests.helpers import CAPTURES, ROOT
from tests.output.test_secrets import DATA as SECRETS_DATA
from tests.output.test_secrets import leaks

SERVER_ROOT = ROOT.parent  # holds this repository and ../shared
EXAMPLE = ROOT / "examples" / "agent_chat.pcap"
OPENAI = CAPTURES / "llm_sdk_openai" / "capture.pcap"  # TLS: keylog.txt lies beside it
ANTHROPIC = CAPTURES / "llm_sdk_anthropic" / "capture.pcap"
MCP_HTTP = CAPTURES / "mcp_http_plain" / "capture.pcap"
MCP_STDIO = CAPTURES / "mcp_stdio_time" / "transcript.jsonl"
H1 = CAPTURES / "http1_cleartext" / "capture.pcap"
H2_TLS = CAPTURES / "https_tls13_h2" / "capture.pcap"
SECRET_INPUTS = [
    SECRETS_DATA / "h1" / "capture.pcap",
    SECRETS_DATA / "h1" / "capture.har",
    SECRETS_DATA / "h1" / "cassette.yaml",
    SECRETS_DATA / "h2_tls" / "capture.pcap",  # keys.log beside it
    SECRETS_DATA / "stdio" / "transcript.jsonl",
]
TOOLS = {
    "list_captures",
    "list_traces",
    "show_trace",
    "show_call",
    "list_incidents",
    "search_calls",
    "diff_runs",
}
AGENTSHARK = str(Path(sys.executable).with_name("agentshark"))
# every shared capture: its main input (key logs lie beside the TLS ones)
SHARED_INPUTS = sorted(
    p.parent / ("transcript.jsonl" if (p.parent / "transcript.jsonl").exists() else "capture.pcap")
    for p in CAPTURES.glob("*/truth.json")
)


def rel(path: Path) -> str:
    return os.path.relpath(path, SERVER_ROOT)


Answers = dict[str, Any]


async def exercise(client: Client) -> Answers:
    """Every tool, on every input the tests look at; the answers by name."""
    out: Answers = {"tools": {t.name for t in (await client.list_tools()).tools}}

    async def call(name: str, tool_name: str, /, **args: Any) -> None:
        result = await client.call_tool(tool_name, args)
        text = "".join(getattr(c, "text", "") for c in result.content)
        out[name] = {"error": result.is_error, "data": result.structured_content, "text": text}

    ex = [rel(EXAMPLE)]
    await call("captures", "list_captures", folder=rel(CAPTURES / "llm_sdk_openai"))
    await call("traces", "list_traces", paths=ex)
    await call("traces_p1", "list_traces", paths=ex, limit=2)
    await call("traces_p3", "list_traces", paths=ex, offset=4, limit=2)
    first = out["traces"]["data"]["traces"][0]["trace_id"]
    await call("trace", "show_trace", paths=ex, trace_id=first[:8])
    await call("call2", "show_call", paths=ex, call_id="call2")
    await call("call2_small", "show_call", paths=ex, call_id="call2", max_chars=10, offset=-1)
    await call("errors", "search_calls", paths=ex, status="error")
    await call("weather", "search_calls", paths=ex, tool="get_current_weather", text="seattle")
    await call("openai", "search_calls", paths=[rel(OPENAI)], api="openai")
    await call("anthropic", "list_traces", paths=[rel(ANTHROPIC)])
    await call("mcp_incidents", "list_incidents", paths=[rel(MCP_HTTP)])
    await call("mcp_warnings", "list_incidents", paths=[rel(MCP_HTTP)], severity="warning")
    await call("divide", "search_calls", paths=[rel(MCP_HTTP)], tool="divide")
    await call("stdio", "search_calls", paths=[rel(MCP_STDIO)], api="mcp", status="error")
    await call("same", "diff_runs", before=ex, after=ex)
    await call("transports", "diff_runs", before=[rel(H1)], after=[rel(H2_TLS)])
    await call("other", "diff_runs", before=ex, after=[rel(OPENAI)])
    for path in SHARED_INPUTS:
        name = path.parent.name
        await call(f"shared_{name}_calls", "search_calls", paths=[rel(path)], limit=200)
        await call(f"shared_{name}_traces", "list_traces", paths=[rel(path)], limit=200)
        await call(f"shared_{name}_incidents", "list_incidents", paths=[rel(path)], limit=200)
    # errors
    await call("missing", "show_call", paths=["no/such.pcap"], call_id="call1")
    await call("outside", "list_traces", paths=["/etc/passwd"])
    await call("escape", "list_traces", paths=[rel(EXAMPLE) + "/../../../../etc/passwd"])
    await call("bad_call", "show_call", paths=ex, call_id="call99")
    await call("bad_trace", "show_trace", paths=ex, trace_id="zz")
    await call("bad_status", "search_calls", paths=ex, status="fine")
    await call("bad_limit", "list_traces", paths=ex, limit=0)
    await call("folder", "list_traces", paths=[rel(CAPTURES)])
    # the planted secrets, through every tool
    for n, path in enumerate(SECRET_INPUTS):
        p = [rel(path)]
        await call(f"secret{n}_traces", "list_traces", paths=p)
        await call(f"secret{n}_calls", "search_calls", paths=p, limit=200)
        await call(f"secret{n}_incidents", "list_incidents", paths=p)
        for c in out[f"secret{n}_calls"]["data"]["calls"]:
            await call(f"secret{n}_{c['id']}", "show_call", paths=p, call_id=c["id"], limit=200)
        for t in out[f"secret{n}_traces"]["data"]["traces"]:
            await call(f"secret{n}_{t['trace_id']}", "show_trace", paths=p, trace_id=t["trace_id"])
        await call(f"secret{n}_diff", "diff_runs", before=p, after=ex)
    resource = await client.read_resource(f"agentshark://report/{rel(EXAMPLE)}")
    out["resource"] = "".join(getattr(c, "text", "") for c in resource.contents)
    return out


def over_stdio() -> Answers:
    params = StdioServerParameters(
        command=AGENTSHARK, args=["mcp-server", "--root", str(SERVER_ROOT)]
    )

    async def run() -> Answers:
        async with Client(params) as client:
            return await exercise(client)

    return asyncio.run(run())


def over_http() -> Answers:
    argv = [AGENTSHARK, "mcp-server", "--transport", "http", "--port", "0"]
    proc = subprocess.Popen([*argv, "--root", str(SERVER_ROOT)], stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "(Streamable HTTP) at http://127.0.0.1:" in line, line
        url = line.split(" at ", 1)[1].split(",", 1)[0]

        async def run() -> Answers:
            async with Client(url) as client:
                return await exercise(client)

        return asyncio.run(run())
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module", params=["stdio", "http"])
def answers(request: pytest.FixtureRequest) -> Iterator[Answers]:
    yield over_stdio() if request.param == "stdio" else over_http()


def ok(answers: Answers, name: str) -> dict[str, Any]:
    a = answers[name]
    assert not a["error"], a["text"]
    assert json.loads(a["text"]) == a["data"]  # the text content is the same JSON
    data: dict[str, Any] = a["data"]
    return data


def failed(answers: Answers, name: str) -> str:
    a = answers[name]
    assert a["error"] and a["data"] is None
    text: str = a["text"]
    return text


def test_every_tool_is_listed(answers: Answers) -> None:
    assert answers["tools"] == TOOLS


def test_list_captures_finds_the_capture_and_its_key_log(answers: Answers) -> None:
    files = {f["path"]: f["format"] for f in ok(answers, "captures")["files"]}
    folder = rel(CAPTURES / "llm_sdk_openai")
    assert files[f"{folder}/capture.pcap"] == "pcap"
    assert files[f"{folder}/keylog.txt"] == "keylog"
    assert files[f"{folder}/capture.dsb.pcapng"] == "pcapng"


def test_list_traces_has_every_trace_of_the_report(answers: Answers) -> None:
    report = agentshark.analyze(EXAMPLE)
    data = ok(answers, "traces")
    assert [t["trace_id"] for t in data["traces"]] == [t.trace_id for t in report.traces()]
    assert data["summary"] == report.summary()
    first = data["traces"][0]
    assert (first["calls"], first["model_calls"], first["tool_calls"]) == (2, 2, 2)
    assert first["tools"] == ["get_current_weather"]
    assert first["first_prompt"] == "What's the weather in Seattle and San Francisco today?"


def test_listings_are_paged(answers: Answers) -> None:
    p1, p3 = ok(answers, "traces_p1"), ok(answers, "traces_p3")
    assert (len(p1["traces"]), p1["total"], p1["next_offset"]) == (2, 5, 2)
    assert (len(p3["traces"]), p3["offset"], p3["next_offset"]) == (1, 4, None)
    assert "limit 0" in failed(answers, "bad_limit")


def test_show_trace_is_the_tree_of_the_trace(answers: Answers) -> None:
    report = agentshark.analyze(EXAMPLE)
    trace = report.traces()[0]
    data = ok(answers, "trace")
    assert data["trace_id"] == trace.trace_id
    assert {s["span_id"] for s in data["spans"]} == {s.span_id for s in trace.spans}
    assert data["tree"][0] == "invoke_agent"
    assert data["tree"][1] == "  chat gpt-4o-mini-2024-07-18 [call1] ok"
    tools = [s for s in data["spans"] if s["kind"] == "tool"]
    assert [(s["requested_by"], s["result_in"], s["inferred"]) for s in tools] == [
        ("call1", "call2", True),
        ("call1", "call2", True),
    ]
    assert tools[0]["attributes"]["arguments"] == {"location": "Seattle, WA"}


def test_show_call_has_the_messages_and_parts(answers: Answers) -> None:
    call = agentshark.analyze(EXAMPLE).call("call2")
    data = ok(answers, "call2")
    assert data["call"]["model"] == "gpt-4o-mini-2024-07-18"
    assert data["input_messages"] == [
        {"index": i, "role": m["role"], "parts": m["parts"]}
        for i, m in enumerate(call.data["input_messages"])
    ]
    assert data["output_messages"][0]["parts"] == call.data["output_messages"][0]["parts"]
    assert data["usage"]["input_tokens"] == 99
    small = ok(answers, "call2_small")  # the last input message, strings clipped
    assert [m["index"] for m in small["input_messages"]] == [3]
    assert small["input_messages"][0]["parts"][0]["response"] == "70 degrees…[10 more chars]"


def test_search_calls_filters(answers: Answers) -> None:
    assert [c["id"] for c in ok(answers, "errors")["calls"]] == ["call4"]
    assert ok(answers, "errors")["calls"][0]["error"].startswith("The model `this-model")
    assert [c["id"] for c in ok(answers, "weather")["calls"]] == ["call1", "call3"]
    openai = agentshark.analyze(OPENAI, keylogs=[OPENAI.with_name("keylog.txt")])
    assert [c["id"] for c in ok(answers, "openai")["calls"]] == [c.id for c in openai.calls()]
    assert len(openai.calls()) == 5  # decrypted with the key log found beside the capture
    assert ok(answers, "anthropic")["summary"]["calls"] == 3
    (divide,) = ok(answers, "divide")["calls"]
    assert (divide["operation"], divide["status"], divide["tools"]) == (
        "tools/call",
        "error",
        ["divide"],
    )
    # mcp-server-time: a tool result flagged isError, and a JSON-RPC -32602 error
    stdio = ok(answers, "stdio")["calls"]
    assert [(c["id"], c["tools"]) for c in stdio] == [
        ("call7", ["get_current_time"]),
        ("call8", ["no_such_tool"]),
    ]
    assert [c["error"] for c in stdio] == [None, "Unknown tool: no_such_tool"]


def test_list_incidents(answers: Answers) -> None:
    (incident,) = ok(answers, "mcp_incidents")["incidents"]
    assert incident["rule"] == "mcp.tool_not_listed"
    assert incident["evidence"]["tool_name"] == "no_such_tool"
    assert ok(answers, "mcp_warnings")["incidents"] == [incident]


def test_diff_runs(answers: Answers) -> None:
    same = ok(answers, "same")
    assert same["identical"] is True and same["steps"]["changed"] == []
    # the same requests over HTTP/1.1 in clear and HTTP/2 over TLS 1.3: the same calls
    assert ok(answers, "transports")["identical"] is True
    other = ok(answers, "other")
    assert other["identical"] is False
    step0 = other["steps"]["changed"][0]["changes"]
    assert step0["model"] == {"before": "gpt-4o-mini-2024-07-18", "after": "gpt-stub"}
    assert other["counts"]["steps"] == {"before": 6, "after": 5}
    assert [c["id"] for c in other["steps"]["only_before"]] == ["call6"]


def test_errors_say_why(answers: Answers) -> None:
    assert "no/such.pcap: no such file under" in failed(answers, "missing")
    assert "outside the server's root" in failed(answers, "outside")
    assert "outside the server's root" in failed(answers, "escape")
    assert "no call 'call99' (the calls: call1, call2" in failed(answers, "bad_call")
    assert "trace 'zz' is none of them" in failed(answers, "bad_trace")
    assert "status 'fine': one of ok, error, incomplete" in failed(answers, "bad_status")
    assert "not a file" in failed(answers, "folder")


def test_no_tool_shows_a_planted_secret(answers: Answers) -> None:
    secret_answers = [a for name, a in answers.items() if name.startswith("secret")]
    assert len(secret_answers) > 40
    assert all(not a["error"] for a in secret_answers)
    for a in secret_answers:
        assert leaks(a["text"]) == []
    calls = sum(len(a["data"].get("calls", [])) for a in secret_answers)
    assert calls >= 10  # the corpus's calls were read (decrypted, parsed), not skipped


def test_the_report_resource_is_the_report(answers: Answers) -> None:
    assert answers["resource"].encode() == agentshark.analyze(EXAMPLE).to_bytes()


def test_every_shared_capture_answers_as_the_report_has_it(answers: Answers) -> None:
    assert len(SHARED_INPUTS) == 11
    for path in SHARED_INPUTS:
        keys = sorted(path.parent.glob("keylog.txt"))
        report = agentshark.analyze(path, keylogs=keys)
        name = path.parent.name
        calls = ok(answers, f"shared_{name}_calls")
        assert [c["id"] for c in calls["calls"]] == [c.id for c in report.calls()], name
        assert [c["status"] for c in calls["calls"]] == [c.status for c in report.calls()]
        traces = ok(answers, f"shared_{name}_traces")["traces"]
        assert [t["trace_id"] for t in traces] == [t.trace_id for t in report.traces()], name
        incidents = ok(answers, f"shared_{name}_incidents")["incidents"]
        assert [i["rule"] for i in incidents] == [i.rule for i in report.incidents()], name
        assert calls["summary"] == report.summary(), name
