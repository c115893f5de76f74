"""``agentshark mcp-tap``: a real MCP server (``mcp-server-time``) under the ``mcp`` SDK's
own stdio client, through the tap; the transcript gives the calls the client saw. Then the
pipes byte for byte (binary, a partial last line), exit statuses and forwarded signals."""

from __future__ import annotations

import asyncio
import base64
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agentshark.cli import main

TAP = [sys.executable, "-m", "agentshark", "mcp-tap"]


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


async def _session(transcript: Path) -> tuple[list[str], list[dict[str, Any]], list[int]]:
    """Drive the server through the tap; what the client saw: the tools listed, each
    tools/call's name, arguments and result, and the lines of the transcript after each
    call (it is flushed line by line)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.shared.exceptions import MCPError

    server = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
    params = StdioServerParameters(
        command=TAP[0], args=[*TAP[1:], "-o", str(transcript), "--stderr", "--", *server]
    )
    seen: list[dict[str, Any]] = []
    sizes: list[int] = []
    calls = [
        ("get_current_time", {"timezone": "Europe/Paris"}),
        (
            "convert_time",
            {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
        ),
        ("get_current_time", {"timezone": "Nowhere/Atlantis"}),
        ("no_such_tool", {}),
    ]
    errlog = (transcript.parent / "server.err").open("w")  # the server's log, passed through
    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = [t.name for t in (await session.list_tools()).tools]
        for name, arguments in calls:
            try:
                result: Any = await session.call_tool(name, arguments)
            except MCPError as exc:
                seen.append({"name": name, "arguments": arguments, "error": exc.error.code})
            else:
                texts = [c.text for c in result.content]
                seen.append(
                    {
                        "name": name,
                        "arguments": arguments,
                        "texts": texts,
                        "is_error": result.is_error,
                    }
                )
            sizes.append(len(transcript.read_bytes().splitlines()))
    errlog.close()
    return tools, seen, sizes


def test_the_transcript_gives_the_calls_the_client_saw(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("mcp_server_time")
    transcript = tmp_path / "time.jsonl"
    tools, seen, sizes = asyncio.run(_session(transcript))
    assert tools == ["get_current_time", "convert_time"]
    # each answer was in the transcript when the client had it: a line flushed as it passed
    records = _records(transcript)
    answered = [i for i, r in enumerate(records, 1) if r["dir"] == "s2c"]
    assert all(any(n <= size for n in answered) for size in sizes)
    assert sizes == sorted(sizes) and len(set(sizes)) == len(sizes)
    assert main(["calls", str(transcript), "--format", "json", "-o", str(tmp_path / "r.json")]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    tool_calls = [c for c in report["calls"] if c["operation"] == "tools/call"]
    assert len(tool_calls) == len(seen)
    for call, client in zip(tool_calls, seen, strict=True):
        (asked,) = call["input_messages"][0]["parts"]
        assert (asked["name"], asked["arguments"]) == (client["name"], client["arguments"])
        assert call["complete"]
        if "error" in client:
            assert call["error"]["code"] == str(client["error"]) == "-32602"
            continue
        parts = call["output_messages"][0]["parts"]
        (answer,) = [p for p in parts if p["type"] == "tool_call_response"]
        assert [p["content"] for p in parts if p["type"] == "text"] == client["texts"]
        assert [c["text"] for c in answer["response"]] == client["texts"]
        assert answer["provider_details"]["is_error"] is client["is_error"]
    assert [s for s in (seen[0], seen[2]) if s.get("is_error")] == [seen[2]]
    # the lines are the bytes on the pipes: each s2c line is a JSON-RPC message as written
    for r in records:
        assert r["bytes"] == len(r["line"].encode()) + 1
        assert r["dir"] in ("c2s", "s2c", "stderr")
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
    capsys.readouterr()


def test_pipes_pass_through_byte_for_byte(tmp_path: Path) -> None:
    transcript = tmp_path / "cat.jsonl"
    data = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\r\n\xff\xfe not utf-8\n\n' + bytes(range(256))
    done = subprocess.run(
        [*TAP, "-o", str(transcript), "--", "cat"], input=data, capture_output=True, timeout=30
    )
    assert done.returncode == 0
    assert done.stdout == data  # unchanged, the partial last line included
    for direction in ("c2s", "s2c"):
        lines = [r for r in _records(transcript) if r["dir"] == direction]
        raw = b"".join(
            (base64.b64decode(r["b64"]) if "b64" in r else r["line"].encode())
            + (b"" if r.get("partial") else b"\n")
            for r in lines
        )
        assert raw == data
        assert [r.get("partial", False) for r in lines] == [False] * 4 + [True]  # 10 is LF
        assert lines[0]["line"] == '{"jsonrpc":"2.0","id":1,"method":"ping"}\r'
        assert lines[1]["line"] == "\ufffd\ufffd not utf-8"


def test_redact_writes_each_line_through_the_redaction(tmp_path: Path) -> None:
    transcript = tmp_path / "red.jsonl"
    line = (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call",'
        b'"params":{"arguments":{"api_key":"sk-abcdefghijklmnopqrstuvwx"}}}\n'
    )
    done = subprocess.run(
        [*TAP, "-o", str(transcript), "--redact", "--", "cat"], input=line, capture_output=True
    )
    assert done.stdout == line  # what passes through is never changed
    for r in _records(transcript):
        assert r["redacted"] is True
        assert "sk-abcdefghijklmnopqrstuvwx" not in r["line"]
        assert json.loads(r["line"])["params"]["arguments"]["api_key"].startswith("[REDACTED")


def test_exit_status_is_the_childs(tmp_path: Path) -> None:
    out = str(tmp_path / "t.jsonl")
    assert subprocess.run([*TAP, "-o", out, "--", "sh", "-c", "exit 7"]).returncode == 7
    killed = subprocess.run([*TAP, "-o", out, "--", "sh", "-c", "kill -KILL $$"])
    assert killed.returncode == 128 + signal.SIGKILL
    missing = subprocess.run([*TAP, "-o", out, "--", "no-such-server-xyz"], capture_output=True)
    assert missing.returncode == 127
    assert b"cannot run no-such-server-xyz" in missing.stderr
    assert (
        subprocess.run([*TAP, "-o", str(tmp_path / "no" / "t.jsonl"), "--", "true"]).returncode == 2
    )


_TRAPPER = """
import signal, sys, time
def bye(signum, frame):
    sys.stdout.write(f"got {signum}\\n"); sys.stdout.flush(); sys.exit(5)
signal.signal(signal.SIGTERM, bye)
sys.stdout.write("ready\\n"); sys.stdout.flush()
time.sleep(60)
"""


@pytest.mark.parametrize(("trap", "expected"), [(True, 5), (False, 128 + signal.SIGTERM)])
def test_sigterm_is_forwarded_to_the_child(tmp_path: Path, trap: bool, expected: int) -> None:
    transcript = tmp_path / "sig.jsonl"
    script = _TRAPPER if trap else _TRAPPER.replace("signal.signal(signal.SIGTERM, bye)", "")
    proc = subprocess.Popen(
        [*TAP, "-o", str(transcript), "--", sys.executable, "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"
    proc.send_signal(signal.SIGTERM)
    rest = proc.stdout.read()
    assert proc.wait(timeout=30) == expected
    lines = [r["line"] for r in _records(transcript) if r["dir"] == "s2c"]
    if trap:  # the child got SIGTERM itself, and said so
        assert rest == b"got 15\n"
        assert lines == ["ready", "got 15"]
    else:
        assert lines == ["ready"]


def test_each_line_is_in_the_transcript_while_the_session_runs(tmp_path: Path) -> None:
    """Flushed record by record: ``calls --follow`` can read the transcript as it grows."""
    transcript = tmp_path / "live.jsonl"
    proc = subprocess.Popen(
        [*TAP, "-o", str(transcript), "--", "cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None
    request = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n'
    proc.stdin.write(request)
    proc.stdin.flush()
    assert proc.stdout.readline() == request
    deadline = time.monotonic() + 30
    while len(transcript.read_bytes().splitlines()) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [r["dir"] for r in _records(transcript)] == ["c2s", "s2c"]  # the pipe still open
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
