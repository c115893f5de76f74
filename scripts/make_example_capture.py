"""Make ``examples/agent_chat.pcap``: an agent talking to an OpenAI-compatible API over
cleartext HTTP/1.1 on loopback, with ``examples/agent_chat.truth.json`` from the client's view.

    python3 scripts/make_example_capture.py [--port 18600]

Real software only: hypercorn (``bench/replay_server.py``) answers with response bodies
recorded in the corpus, httpx sends the matching recorded request bodies, tcpdump on ``lo``
captures. Connection 1 (keep-alive) carries a tool-calling turn, the tool-result turn, a streamed
(SSE) turn with streamed tool calls ending in ``data: [DONE]``, and a 404 for an unknown model;
connection 2 carries a gzip-compressed JSON response and the first streamed turn of another
agent (pydantic-ai, 15 tools). Request headers carry a fake
``Authorization: Bearer sk-example-not-a-real-key`` so that redaction has something to show.
Installs what it needs (tcpdump via apt-get, a venv in ``bench/.venv-gen``) and re-runs itself
in that venv.
"""

from __future__ import annotations

import argparse
import gzip
import importlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH_DIR))

import genlib  # noqa: E402 - lives in bench/, shared with bench/make_capture.py

EXAMPLES = genlib.REPO_ROOT / "examples"
OTEL = (
    "open-telemetry__opentelemetry-python-contrib/instrumentation-genai/"
    "opentelemetry-instrumentation-openai-v2/tests/cassettes/"
)
LANGGRAPH = (
    "traceloop__openllmetry/packages/opentelemetry-instrumentation-langchain/tests/"
    "cassettes/test_langgraph/"
)
DBOS = "pydantic__pydantic-ai/tests/cassettes/test_dbos/"

# (label, connection, cassette, interaction index), in the order the client sends them.
PLAN: tuple[tuple[str, int, str, int], ...] = (
    ("chat_tool_call", 1, OTEL + "test_chat_completion_tool_calls_with_content.yaml", 0),
    ("chat_tool_result", 1, OTEL + "test_chat_completion_tool_calls_with_content.yaml", 1),
    (
        "chat_stream_sse",
        1,
        OTEL + "test_chat_completion_multiple_tools_streaming_with_content.yaml",
        0,
    ),
    ("chat_404", 1, OTEL + "test_chat_completion_404.yaml", 0),
    ("chat_gzip", 2, LANGGRAPH + "test_langgraph_invoke.yaml", 0),
    ("chat_stream_tools", 2, DBOS + "test_complex_agent_run_in_workflow.yaml", 0),
)


def chat_facts(body: bytes, sse: bool) -> dict[str, Any]:
    """What the client read: assistant text, tool calls (name, arguments), finish reason, or
    the error code; for a stream, assembled from the chunk deltas."""
    if not sse:
        doc = json.loads(body)
        if "error" in doc:
            return {"error_code": doc["error"].get("code"), "error_type": doc["error"].get("type")}
        choice = doc["choices"][0]
        msg = choice["message"]
        calls = [
            {"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]}
            for c in msg.get("tool_calls") or []
        ]
        return {
            "model": doc["model"],
            "content": msg.get("content"),
            "tool_calls": calls,
            "finish_reason": choice["finish_reason"],
        }
    text: list[str] = []
    streamed: dict[int, dict[str, str]] = {}
    finish = None
    model = None
    for line in body.decode().split("\n"):
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        model = chunk.get("model", model)
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            text.append(delta.get("content") or "")
            for tc in delta.get("tool_calls") or []:
                call = streamed.setdefault(tc["index"], {"id": "", "name": "", "arguments": ""})
                call["id"] += tc.get("id") or ""
                fn = tc.get("function") or {}
                call["name"] += fn.get("name") or ""
                call["arguments"] += fn.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    return {
        "model": model,
        "content": "".join(text) or None,
        "tool_calls": [streamed[i] for i in sorted(streamed)],
        "finish_reason": finish,
    }


def run_client(base_url: str, entries: list[genlib.PoolEntry]) -> list[dict[str, Any]]:
    httpx = importlib.import_module("httpx")
    clients: dict[int, Any] = {}
    records: list[dict[str, Any]] = []
    try:
        for (label, conn, _cassette, _index), entry in zip(PLAN, entries, strict=True):
            if conn not in clients:
                clients[conn] = httpx.Client(
                    base_url=base_url,
                    timeout=30.0,
                    http1=True,
                    limits=httpx.Limits(max_connections=1),
                )
            body = entry["req_body"].encode()
            t0 = time.time()
            with clients[conn].stream(
                entry["method"],
                entry["path"],
                content=body,
                headers=[(k, v) for k, v in entry["req_headers"]],
            ) as r:
                raw = b"".join(r.iter_raw())
                client_port = r.extensions["network_stream"].get_extra_info("client_addr")[1]
                status, http_version = r.status_code, r.http_version
                ctype, cenc = r.headers.get("content-type"), r.headers.get("content-encoding")
                clen = r.headers.get("content-length")
            t1 = time.time()
            if raw != genlib.response_bytes(entry) or status != entry["status"]:
                raise genlib.ToolError(f"{label}: the response differs from the recording")
            decoded = gzip.decompress(raw) if cenc == "gzip" else raw
            rec: dict[str, Any] = {
                "label": label,
                "connection": conn,
                "client_port": client_port,
                "method": entry["method"],
                "path": entry["path"],
                "status": status,
                "http_version": http_version,
                "content_type": ctype,
                "content_encoding": cenc,
                "wire_content_length": clen,
                "request_body_bytes": len(body),
                "response_body_bytes": len(raw),
                "decoded_body_bytes": len(decoded),
                "started": round(t0, 6),
                "ended": round(t1, 6),
                "source": entry["source"],
            }
            if entry["sse"]:
                count = genlib.count_sse(raw)
                rec["sse_data_events"] = count["data_events"]
                rec["done_marker"] = count["done_markers"] == 1
            rec.update(chat_facts(decoded, entry["sse"]))
            records.append(rec)
    finally:
        for client in clients.values():
            client.close()
    return records


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=18600)
    ap.add_argument("--sse-delay-ms", type=float, default=5.0)
    ap.add_argument("--corpus", type=Path, default=genlib.CORPUS_DIR)
    ap.add_argument("--out", type=Path, default=EXAMPLES / "agent_chat.pcap")
    args = ap.parse_args()
    genlib.reexec_in_gen_venv(Path(__file__))
    tcpdump = genlib.ensure_tcpdump()

    entries: list[genlib.PoolEntry] = []
    for n, (label, _conn, cassette, index) in enumerate(PLAN):
        interaction = genlib.load_cassette(args.corpus / cassette)[index]
        entry = genlib.entry_from_interaction(interaction, f"{cassette}#{index}", entry_id=n)
        if entry is None:
            raise genlib.ToolError(f"{label}: {cassette}#{index} cannot be replayed")
        entries.append(entry)

    with tempfile.TemporaryDirectory(prefix="agentshark-example-") as tmp:
        pool = Path(tmp) / "pool.json"
        genlib.write_json(pool, entries)
        server = genlib.start_replay_server(
            pool, args.port, args.sse_delay_ms, Path(tmp) / "server.log"
        )
        dump = genlib.Tcpdump(tcpdump, args.out, args.port)
        try:
            dump.start()
            records = run_client(f"http://127.0.0.1:{args.port}", entries)
            counters = dump.stop()
        finally:
            dump.abort()  # a run that failed leaves no tcpdump behind
            server_rc = genlib.stop_process(server)

    dropped = counters["packets dropped by kernel"]
    size = args.out.stat().st_size
    truth = {
        "capture": args.out.stem,
        "kind": "cleartext-http",
        "made_by": "scripts/make_example_capture.py",
        "software": {
            **genlib.package_versions("hypercorn", "httpx", "h11"),
            "tcpdump": genlib.tcpdump_version(tcpdump),
            "server": "hypercorn, plain ASGI replay app (bench/replay_server.py)",
            "client": "httpx.Client, one keep-alive connection per client",
        },
        "base_url": f"http://127.0.0.1:{args.port}",
        "port": args.port,
        "fake_credentials_sent": {"authorization": genlib.FAKE_BEARER},
        "connections": [
            {
                "connection": c,
                "client_port": next(r["client_port"] for r in records if r["connection"] == c),
                "requests": [r["label"] for r in records if r["connection"] == c],
            }
            for c in sorted({r["connection"] for r in records})
        ],
        "requests": records,
        "tcpdump": counters,
        "packets": genlib.pcap_packet_count(args.out),
        "pcap_bytes": size,
        "server_rc": server_rc,
    }
    genlib.write_json(args.out.with_suffix(".truth.json"), truth)
    genlib.log(
        f"{args.out}: {size} bytes, {truth['packets']} packets, {len(records)} exchanges "
        f"on {len(truth['connections'])} connections, dropped {dropped}"
    )
    if not genlib.capture_complete(counters):
        genlib.log(f"tcpdump lost packets ({counters}): run again")
        return 1
    if not 20_000 <= size <= 120_000:
        genlib.log("warning: the example is outside the 20-120 KB it is meant to be")
    return 0


if __name__ == "__main__":
    sys.exit(main())
