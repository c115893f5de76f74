"""Make the planted-secrets corpus in ``tests/data/secrets/``: fake credentials in every place
a report can show one, over every input agentshark reads.

    python3 scripts/make_secret_captures.py            # every case, new fake secrets
    python3 scripts/make_secret_captures.py --list

Real software on loopback, with the helpers of ``bench/genlib.py``: a hypercorn server
(``--serve``) runs a small ASGI app shaped like the OpenAI, Anthropic, Gemini, MCP Streamable
HTTP and A2A JSON-RPC endpoints; an httpx client sends one fixed conversation
(:func:`conversation`); ``tcpdump -i lo`` writes the case's port, dropping nothing. The MCP
stdio transcript is a real MCP server (the ``mcp`` SDK's ``MCPServer`` over stdio) that this
script talks to, recording every line both ways as the ``stdio-merged`` layout.

The secrets are made anew on each run (``secrets.json``: name -> value, from
:mod:`secrets`; none is real) and planted in: the ``Authorization`` (Bearer and Basic),
``x-api-key`` and custom ``X-Agentops-Api-Key`` request headers (the last sent on every request
of a connection, so over HTTP/2 it becomes an HPACK dynamic-table reference; the h2 library
never indexes ``Authorization``), ``Cookie`` and ``Set-Cookie``, URL parameters (``?key=``,
``?access_token=``), request JSON fields at depth (``api_key``, ``metadata.auth.client_secret``),
message text, OpenAI chat tool-call arguments (and their replay in the next request), a tool
result, a streamed Anthropic reply (7 characters a delta, so each secret spans several
events), a 401 error body echoing the key, MCP ``tools/call`` arguments ``password``/
``api_key``/``github_token``, MCP results (text and structured), A2A text and data parts and
artifacts.

Cases and outputs (``tests/data/secrets/``):

* ``h1/``: HTTP/1.1 cleartext; ``capture.pcap``, plus ``capture.har`` (HAR 1.2 written from the
  client's own records of the same exchanges) and ``cassette.yaml`` (recorded by vcrpy around
  the same httpx calls);
* ``h2_tls/``: HTTP/2 over TLS 1.3 (self-signed certificate made by openssl at run time and
  thrown away), ``capture.pcap`` and ``keys.log`` (``SSLContext.keylog_filename``);
* ``stdio/``: ``transcript.jsonl``.

Each pcap folder has ``run.json`` (port, tcpdump counters, versions). The script makes its own
venv ``scripts/.venv-secrets`` (hypercorn, httpx, h2, vcrpy, mcp, PyYAML from the registry)
and re-runs itself there.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import importlib
import json
import secrets
import ssl
import string
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH_DIR))

import genlib  # noqa: E402 - lives in bench/, shared with the other capture generators
from genlib import Receive, Scope, Send  # noqa: E402

SCRIPT = Path(__file__).resolve()
OUT_DIR = genlib.REPO_ROOT / "tests" / "data" / "secrets"
VENV = SCRIPT.parent / ".venv-secrets"
REQUIREMENTS = (*genlib.GEN_REQUIREMENTS, "h2==4.4.1", "vcrpy==9.4.2", "mcp==2.3.0")
MODEL = "secret-keeper-1"
_ALNUM = string.ascii_letters + string.digits


def _rand(n: int, alphabet: str = _ALNUM) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(n))


def _jwt() -> str:
    """A JWT-shaped fake: a common header, random claims, a random (never computed)
    signature."""
    head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=").decode()
    claims = json.dumps({"sub": _rand(12), "scope": "mcp", "jti": _rand(16)}).encode()
    body = base64.urlsafe_b64encode(claims).rstrip(b"=").decode()
    return f"{head}.{body}.{_rand(43)}"


def make_secrets() -> dict[str, str]:
    """Fresh fake credentials, one per planted place; none is or was ever real."""
    upper = string.ascii_uppercase + string.digits
    basic_password = _rand(18)
    return {
        "openai_key": "sk-proj-" + _rand(48),
        "anthropic_key": "sk-ant-api03-" + _rand(48),
        "agentops_key": str(uuid.uuid4()),
        "bad_key": "sk-proj-" + _rand(48),
        "gemini_url_key": "AIza" + _rand(35),
        "mcp_url_token": _rand(32, string.hexdigits.lower()),
        "body_api_key": _rand(32),
        "body_client_secret": _rand(24),
        "message_key": "sk-proj-" + _rand(40),
        "tool_github_token": "ghp_" + _rand(36),
        "tool_result_slack": "xoxb-" + _rand(12, string.digits) + "-" + _rand(24),
        "stream_aws_key": "AKIA" + _rand(16, upper),
        "stream_jwt": _jwt(),
        "mcp_password": _rand(14),
        "mcp_api_key": _rand(28),
        "mcp_github_token": "github_pat_" + _rand(22) + "_" + _rand(59),
        "mcp_result_stripe": "sk_live_" + _rand(32),
        "mcp_result_session_token": _rand(30),
        "mcp_bearer_jwt": _jwt(),
        "a2a_text_github": "ghs_" + _rand(36),
        "a2a_data_secret": _rand(26),
        "a2a_artifact_key": "sk-svcacct-" + _rand(40),
        "cookie_session": _rand(32),
        "set_cookie_sid": _rand(32),
        "basic_credentials": base64.b64encode(f"agent:{basic_password}".encode()).decode(),
        "basic_password": basic_password,
        "stdio_password": _rand(16),
        "stdio_api_key": "sk-" + _rand(40),
        "stdio_github_token": "gho_" + _rand(36),
        "stdio_result_key": "ASIA" + _rand(16, upper),
    }


# =========================================================================== the server


def _json_reply(status: int, body: object, headers: list[list[bytes]] | None = None) -> Any:
    return status, b"application/json", json.dumps(body).encode(), headers or []


def _chat(req: dict[str, Any], auth: str, s: dict[str, str]) -> Any:
    if s["bad_key"] in auth:
        return _json_reply(
            401,
            {
                "error": {
                    "message": f"Incorrect API key provided: {auth.removeprefix('Bearer ')}.",
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                }
            },
        )
    replayed = any(m.get("role") == "tool" for m in req.get("messages", []))
    message: dict[str, Any]
    if replayed:
        message = {"role": "assistant", "content": "Done; the deploy used the token you gave."}
        finish = "stop"
    else:
        arguments = json.dumps({"repo": "acme/site", "github_token": s["tool_github_token"]})
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_deploy_1",
                    "type": "function",
                    "function": {"name": "deploy", "arguments": arguments},
                }
            ],
        }
        finish = "tool_calls"
    body = {
        "id": "chatcmpl-secret-" + ("2" if replayed else "1"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 42, "completion_tokens": 17, "total_tokens": 59},
    }
    cookie = f"sid={s['set_cookie_sid']}; HttpOnly; Path=/".encode()
    return _json_reply(200, body, [[b"set-cookie", cookie]])


def _anthropic_events(s: dict[str, str]) -> list[bytes]:
    # As a model streams: a few characters a delta, so each secret spans several events.
    reply = f"Here is the key you stored: {s['stream_aws_key']} and the session token "
    reply += f"{s['stream_jwt']}. Keep them safe."
    text = [reply[i : i + 7] for i in range(0, len(reply), 7)]
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_secret_1",
                    "type": "message",
                    "role": "assistant",
                    "model": MODEL,
                    "content": [],
                    "stop_reason": None,
                    "usage": {"input_tokens": 21, "output_tokens": 1},
                },
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
    ]
    for piece in text:
        delta = {"type": "text_delta", "text": piece}
        events.append(
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
        )
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 40},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return [f"event: {n}\ndata: {json.dumps(d)}\n\n".encode() for n, d in events]


def _mcp(req: dict[str, Any], s: dict[str, str]) -> Any:
    method = req.get("method")
    session = [[b"mcp-session-id", b"7c1e4d2a-session"]]
    if "id" not in req:
        return 202, b"application/json", b"", session
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "vault-mcp", "version": "1.0.0"},
        }
    elif method == "tools/call":
        result = {
            "content": [
                {"type": "text", "text": f"Logged in. Billing key: {s['mcp_result_stripe']}"}
            ],
            "structuredContent": {"ok": True, "session_token": s["mcp_result_session_token"]},
            "isError": False,
        }
    else:
        result = {}
    return _json_reply(200, {"jsonrpc": "2.0", "id": req["id"], "result": result}, session)


def _a2a(req: dict[str, Any], s: dict[str, str]) -> Any:
    message = req.get("params", {}).get("message", {})
    task = {
        "kind": "task",
        "id": "task-secret-1",
        "contextId": message.get("contextId", "ctx-1"),
        "status": {"state": "completed"},
        "history": [message],
        "artifacts": [
            {
                "artifactId": "art-1",
                "name": "credentials",
                "parts": [
                    {"kind": "text", "text": f"Service account key: {s['a2a_artifact_key']}"}
                ],
            }
        ],
    }
    return _json_reply(200, {"jsonrpc": "2.0", "id": req.get("id"), "result": task})


def _gemini() -> Any:
    return _json_reply(
        200,
        {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": "Hello."}]},
                    "finishReason": "STOP",
                }
            ],
            "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2},
        },
    )


def make_app(s: dict[str, str]) -> Callable[[Scope, Receive, Send], Any]:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        raw = await genlib.asgi_request_body(scope, receive, send)
        if raw is None:
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        path = scope["path"]
        req = json.loads(raw) if raw else {}
        if path == "/v1/messages":
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [[b"content-type", b"text/event-stream"]],
                }
            )
            for event in _anthropic_events(s):
                await send({"type": "http.response.body", "body": event, "more_body": True})
                await asyncio.sleep(0.005)
            await send({"type": "http.response.body", "body": b""})
            return
        if path == "/v1/chat/completions":
            status, ctype, body, extra = _chat(req, headers.get("authorization", ""), s)
        elif path == "/mcp":
            status, ctype, body, extra = _mcp(req, s)
        elif path == "/a2a":
            status, ctype, body, extra = _a2a(req, s)
        elif path.startswith("/v1beta/models/"):
            status, ctype, body, extra = _gemini()
        else:
            status, ctype, body, extra = _json_reply(404, {"error": {"message": "not found"}})
        start_headers = [[b"content-type", ctype], *extra] if body else list(extra)
        await send({"type": "http.response.start", "status": status, "headers": start_headers})
        await send({"type": "http.response.body", "body": body})

    return app


async def serve(spec: dict[str, Any]) -> None:
    import signal

    hyper_serve = importlib.import_module("hypercorn.asyncio").serve
    config = importlib.import_module("hypercorn.config").Config()
    config.bind = [f"127.0.0.1:{spec['port']}"]
    config.accesslog = None
    config.graceful_timeout = 2
    if spec.get("certfile"):
        config.certfile = spec["certfile"]
        config.keyfile = spec["keyfile"]
        config.alpn_protocols = ["h2", "http/1.1"]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    secrets_map = json.loads(Path(spec["secrets"]).read_text())
    await hyper_serve(make_app(secrets_map), config, shutdown_trigger=stop.wait)


# =========================================================================== the client


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """One request of the conversation."""

    label: str
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None


def conversation(s: dict[str, str]) -> list[Step]:
    """The requests, in order, every secret of ``s`` planted (the server plants the rest)."""
    common = {"x-agentops-api-key": s["agentops_key"]}
    bearer = {"authorization": f"Bearer {s['openai_key']}", **common}
    first_user = {
        "role": "user",
        "content": f"Deploy acme/site. My OpenAI key is {s['message_key']} if you need it.",
    }
    tool_call = {
        "id": "call_deploy_1",
        "type": "function",
        "function": {
            "name": "deploy",
            "arguments": json.dumps({"repo": "acme/site", "github_token": s["tool_github_token"]}),
        },
    }
    chat_tools = [
        {
            "type": "function",
            "function": {
                "name": "deploy",
                "parameters": {
                    "type": "object",
                    "properties": {"repo": {"type": "string"}, "github_token": {"type": "string"}},
                },
            },
        }
    ]
    chat1 = {
        "model": MODEL,
        "max_tokens": 256,
        "api_key": s["body_api_key"],
        "metadata": {"auth": {"client_secret": s["body_client_secret"], "tenant": "acme"}},
        "messages": [first_user],
        "tools": chat_tools,
    }
    chat2 = {
        "model": MODEL,
        "max_tokens": 256,
        "messages": [
            first_user,
            {"role": "assistant", "content": None, "tool_calls": [tool_call]},
            {
                "role": "tool",
                "tool_call_id": "call_deploy_1",
                "content": f"deployed; notified Slack with {s['tool_result_slack']}",
            },
        ],
        "tools": chat_tools,
    }
    anthropic = {
        "model": MODEL,
        "max_tokens": 200,
        "stream": True,
        "messages": [{"role": "user", "content": "What keys did I store?"}],
    }
    mcp_auth = {"authorization": f"Bearer {s['mcp_bearer_jwt']}", **common}
    mcp_headers = {**mcp_auth, "accept": "application/json, text/event-stream"}
    mcp_path = f"/mcp?access_token={s['mcp_url_token']}"
    a2a_message = {
        "kind": "message",
        "role": "user",
        "messageId": "m-secret-1",
        "contextId": "ctx-secret",
        "parts": [
            {"kind": "text", "text": f"Rotate this one: {s['a2a_text_github']}"},
            {"kind": "data", "data": {"vault": {"client_secret": s["a2a_data_secret"]}}},
        ],
    }
    return [
        Step(
            label="openai chat, tool call",
            method="POST",
            path="/v1/chat/completions",
            headers={**bearer, "cookie": f"session={s['cookie_session']}; theme=dark"},
            body=chat1,
        ),
        Step(
            label="openai chat, tool result replayed",
            method="POST",
            path="/v1/chat/completions",
            headers=bearer,
            body=chat2,
        ),
        Step(
            label="openai chat, wrong key (401 echoes it)",
            method="POST",
            path="/v1/chat/completions",
            headers={"authorization": f"Bearer {s['bad_key']}", **common},
            body={"model": MODEL, "messages": [{"role": "user", "content": "hi"}]},
        ),
        Step(
            label="anthropic messages, streamed",
            method="POST",
            path="/v1/messages",
            headers={"x-api-key": s["anthropic_key"], "anthropic-version": "2023-06-01", **common},
            body=anthropic,
        ),
        Step(
            label="gemini, key in the URL",
            method="POST",
            path=f"/v1beta/models/gemini-2.0-flash:generateContent?key={s['gemini_url_key']}",
            headers=common,
            body={"contents": [{"role": "user", "parts": [{"text": "Hello"}]}]},
        ),
        Step(
            label="mcp initialize",
            method="POST",
            path=mcp_path,
            headers=mcp_headers,
            body={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "secret-client", "version": "1.0"},
                },
            },
        ),
        Step(
            label="mcp initialized",
            method="POST",
            path=mcp_path,
            headers={**mcp_headers, "mcp-session-id": "7c1e4d2a-session"},
            body={"jsonrpc": "2.0", "method": "notifications/initialized"},
        ),
        Step(
            label="mcp tools/call with credentials",
            method="POST",
            path=mcp_path,
            headers={**mcp_headers, "mcp-session-id": "7c1e4d2a-session"},
            body={
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {
                    "name": "login",
                    "arguments": {
                        "user": "agent",
                        "password": s["mcp_password"],
                        "api_key": s["mcp_api_key"],
                        "github_token": s["mcp_github_token"],
                    },
                },
            },
        ),
        Step(
            label="a2a message/send, basic auth",
            method="POST",
            path="/a2a",
            headers={"authorization": f"Basic {s['basic_credentials']}", **common},
            body={
                "jsonrpc": "2.0",
                "id": "a2a-1",
                "method": "message/send",
                "params": {"message": a2a_message},
            },
        ),
    ]


def run_client(
    base: str, steps: list[Step], *, http2: bool, verify: ssl.SSLContext | bool
) -> list[dict[str, Any]]:
    """httpx sends ``steps`` on one connection; returns what it sent and got, per step."""
    import httpx

    records: list[dict[str, Any]] = []
    limits = httpx.Limits(max_connections=1)
    with httpx.Client(
        base_url=base, http1=not http2, http2=http2, verify=verify, limits=limits, timeout=30
    ) as client:
        for step in steps:
            content = json.dumps(step.body).encode() if step.body is not None else None
            headers = {"content-type": "application/json", **step.headers}
            t0 = time.time()
            r = client.request(step.method, step.path, content=content, headers=headers)
            records.append(
                {
                    "label": step.label,
                    "started": t0,
                    "ended": time.time(),
                    "method": step.method,
                    "url": str(r.request.url),
                    "http_version": r.http_version,
                    "request_headers": [[k.decode(), v.decode()] for k, v in r.request.headers.raw],
                    "request_body": (content or b"").decode(),
                    "status": r.status_code,
                    "reason": r.reason_phrase,
                    "response_headers": [[k.decode(), v.decode()] for k, v in r.headers.raw],
                    "response_body": r.text,
                }
            )
    return records


def write_har(path: Path, records: list[dict[str, Any]]) -> None:
    """HAR 1.2 from the client's own records of the exchanges."""
    entries = []
    for rec in records:
        started = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(rec["started"]))
        ctype = dict(rec["response_headers"]).get("content-type", "")
        req_ctype = dict(rec["request_headers"]).get("content-type", "")
        query = rec["url"].partition("?")[2]
        entries.append(
            {
                "startedDateTime": f"{started}.{int(rec['started'] % 1 * 1000):03d}Z",
                "time": round((rec["ended"] - rec["started"]) * 1000, 3),
                "request": {
                    "method": rec["method"],
                    "url": rec["url"],
                    "httpVersion": rec["http_version"],
                    "headers": [{"name": k, "value": v} for k, v in rec["request_headers"]],
                    "queryString": [
                        {"name": k, "value": v}
                        for k, _, v in (p.partition("=") for p in query.split("&") if p)
                    ],
                    "cookies": [],
                    "headersSize": -1,
                    "bodySize": len(rec["request_body"].encode()),
                    "postData": {"mimeType": req_ctype, "text": rec["request_body"]},
                },
                "response": {
                    "status": rec["status"],
                    "statusText": rec["reason"],
                    "httpVersion": rec["http_version"],
                    "headers": [{"name": k, "value": v} for k, v in rec["response_headers"]],
                    "cookies": [],
                    "content": {
                        "size": len(rec["response_body"].encode()),
                        "mimeType": ctype,
                        "text": rec["response_body"],
                    },
                    "redirectURL": "",
                    "headersSize": -1,
                    "bodySize": len(rec["response_body"].encode()),
                },
                "cache": {},
                "timings": {"send": 0, "wait": 0, "receive": 0},
            }
        )
    har = {
        "log": {
            "version": "1.2",
            "creator": {"name": SCRIPT.name, "version": "1"},
            "entries": entries,
        }
    }
    path.write_text(json.dumps(har, indent=1) + "\n")


# =========================================================================== the cases


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    name: str
    summary: str
    port: int
    tls: bool


CASES = (
    Case(
        name="h1",
        summary="HTTP/1.1 cleartext, one keep-alive connection; HAR and vcrpy cassette of it",
        port=18731,
        tls=False,
    ),
    Case(
        name="h2_tls",
        summary="HTTP/2 over TLS 1.3 with the key log, one connection (HPACK-indexed headers)",
        port=18732,
        tls=True,
    ),
)


def run_case(
    case: Case, s: dict[str, str], tcpdump: str, certs: dict[str, Path], tmp: Path
) -> dict[str, Any]:
    folder = OUT_DIR / case.name
    folder.mkdir(parents=True, exist_ok=True)
    spec: dict[str, Any] = {"port": case.port, "secrets": str(OUT_DIR / "secrets.json")}
    if case.tls:
        spec |= {"certfile": str(certs["rsa"]), "keyfile": str(certs["rsa_key"])}
    server = genlib.start_serve_process(
        sys.executable, SCRIPT, spec, tmp / f"{case.name}.spec.json", tmp / f"{case.name}.log"
    )
    pcap = folder / "capture.pcap"
    keylog = folder / "keys.log"
    keylog.unlink(missing_ok=True)
    dump = genlib.Tcpdump(tcpdump, pcap, case.port, buffer_kib=65536)
    steps = conversation(s)
    try:
        genlib.wait_listening(case.port, server)
        dump.start()
        if case.tls:
            ctx = ssl.create_default_context(cafile=str(certs["rsa"]))
            ctx.minimum_version = ssl.TLSVersion.TLSv1_3
            ctx.keylog_filename = str(keylog)
            records = run_client(f"https://127.0.0.1:{case.port}", steps, http2=True, verify=ctx)
        else:
            vcr = importlib.import_module("vcr")
            cassette = folder / "cassette.yaml"
            cassette.unlink(missing_ok=True)
            with vcr.use_cassette(
                str(cassette), record_mode="all", decode_compressed_response=True
            ):
                records = run_client(
                    f"http://127.0.0.1:{case.port}", steps, http2=False, verify=False
                )
            write_har(folder / "capture.har", records)
        counters = dump.stop(linger=0.7)
    finally:
        server_rc = genlib.stop_process(server)
    versions = {r["http_version"] for r in records}
    run = {
        "name": case.name,
        "summary": case.summary,
        "port": case.port,
        "server_rc": server_rc,
        "tcpdump": counters,
        "capture_complete": genlib.capture_complete(counters),
        "packets": genlib.pcap_packet_count(pcap),
        "pcap_bytes": pcap.stat().st_size,
        "http_versions": sorted(versions),
        "statuses": [r["status"] for r in records],
        "keylog_labels": genlib.keylog_labels(keylog),
        "software": genlib.package_versions("hypercorn", "httpx", "httpcore", "h2", "h11", "vcrpy"),
    }
    genlib.write_json(folder / "run.json", run)
    genlib.log(f"{case.name}: {run['pcap_bytes']:,} bytes, {run['packets']} packets, {versions}")
    if case.tls and not run["keylog_labels"]:
        raise genlib.ToolError(f"{case.name}: the client wrote no key log")
    return run


# =========================================================================== MCP over stdio


def stdio_server() -> None:
    """The MCP server of the stdio case (``--stdio-server``): one tool that takes credentials
    and answers with one."""
    from mcp.server.mcpserver import MCPServer

    s = json.loads((OUT_DIR / "secrets.json").read_text())
    server = MCPServer("vault-stdio", version="1.0.0", log_level="WARNING")

    @server.tool()  # type: ignore[untyped-decorator]
    def login(user: str, password: str, api_key: str, github_token: str) -> str:
        """Log in with the given credentials."""
        return f"welcome {user}; temporary AWS key {s['stdio_result_key']}"

    server.run("stdio")


def run_stdio(s: dict[str, str]) -> None:
    """Talk to the stdio server, writing every line both ways to ``stdio/transcript.jsonl``."""
    folder = OUT_DIR / "stdio"
    folder.mkdir(parents=True, exist_ok=True)
    messages: list[dict[str, Any]] = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "secret-client", "version": "1.0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {
                "name": "login",
                "arguments": {
                    "user": "agent",
                    "password": s["stdio_password"],
                    "api_key": s["stdio_api_key"],
                    "github_token": s["stdio_github_token"],
                },
            },
        },
    ]
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--stdio-server"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    lines: list[dict[str, Any]] = []

    def record(direction: str, line: str) -> None:
        lines.append(
            {
                "seq": len(lines) + 1,
                "t": round(time.time(), 6),
                "dir": direction,
                "bytes": len(line.encode()) + 1,
                "line": line,
                "json": json.loads(line),
            }
        )

    for msg in messages:
        line = json.dumps(msg, separators=(",", ":"))
        record("c2s", line)
        proc.stdin.write(line.encode() + b"\n")
        proc.stdin.flush()
        if "id" in msg:
            record("s2c", proc.stdout.readline().decode().rstrip("\n"))
    proc.stdin.close()
    proc.wait(10)
    text = "".join(json.dumps(rec) + "\n" for rec in lines)
    (folder / "transcript.jsonl").write_text(text)
    genlib.log(f"stdio: {len(lines)} lines")


# =========================================================================== main


def main() -> int:
    ap = genlib.case_arguments(__doc__, "capture", attempts_help="tries when tcpdump loses packets")
    ap.add_argument("--stdio-server", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        asyncio.run(serve(json.loads(args.serve.read_text())))
        return 0
    if args.stdio_server:
        stdio_server()
        return 0
    if args.list:
        for case in CASES:
            print(f"{case.name:<8} port {case.port}  {case.summary}")
        print("stdio    MCP stdio transcript of a real MCP server")
        return 0
    genlib.reexec_in_venv(SCRIPT, VENV, lambda: genlib.ensure_venv(VENV, REQUIREMENTS))
    tcpdump = genlib.ensure_tcpdump()
    wanted = genlib.wanted_cases(ap, args.only, CASES, "capture")
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    secrets_path = OUT_DIR / "secrets.json"
    if wanted and secrets_path.exists():  # remaking some cases: the others keep their secrets
        s = json.loads(secrets_path.read_text())
    else:
        s = make_secrets()
        genlib.write_json(secrets_path, s)
    with tempfile.TemporaryDirectory(prefix="agentshark-secrets-") as tmpdir:
        tmp = Path(tmpdir)
        certs = genlib.make_test_certs(tmp)
        failures = genlib.run_cases(
            CASES, wanted, args.attempts, lambda case: run_case(case, s, tcpdump, certs, tmp)
        )
    if not wanted:
        run_stdio(s)
    return genlib.exit_status(failures)


if __name__ == "__main__":
    sys.exit(main())
