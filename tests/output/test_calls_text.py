"""The calls and analyze tables as a user reads them: ids for `show`, errors by what they are,
columns cut only on a terminal, a COMPLETE column that says what it means, plurals."""

from __future__ import annotations

import io
import json

import pytest

from agentshark.cli import main
from agentshark.output.calls_text import CallsTextWriter
from agentshark.output.report import RenderOptions
from agentshark.output.text import TextWriter
from agentshark.pipeline import Options, run
from tests.helpers import CAPTURES, ROOT

EXAMPLE = str(ROOT / "examples" / "agent_chat.pcap")
MCP_HTTP = str(CAPTURES / "mcp_http_plain" / "capture.pcap")
MCP_STDIO = str(CAPTURES / "mcp_stdio_time" / "transcript.jsonl")
A2A = str(CAPTURES / "a2a_jsonrpc_v03" / "capture.pcap")


def _out(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main([*args, "--no-progress"]) == 0
    return capsys.readouterr().out


def _rows(out: str) -> dict[str, str]:
    """Table rows by call id (the second column)."""
    return {ln.split()[1]: ln for ln in out.splitlines() if ln[:2].isdigit() and ":" in ln[:3]}


def test_jsonrpc_errors_and_tool_errors_read_as_errors(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = json.loads(_out(capsys, "calls", MCP_HTTP, "--format", "json"))
    calls = {c["id"]: c for c in report["calls"]}
    rows = _rows(_out(capsys, "calls", MCP_HTTP))
    for cid, call in calls.items():
        row = rows[cid]
        assert "ERROR 200" not in row
        error = call["error"]
        failed = any(
            p.get("type") == "tool_call_response" and p.get("is_error") is True
            for m in call["output_messages"]
            for p in m["parts"]
        ) or any(
            p.get("provider_details", {}).get("is_error") is True
            for m in call["output_messages"]
            for p in m["parts"]
        )
        if error is not None and error["type"] == "jsonrpc":
            assert f"JSON-RPC ERROR {error['code']}: {error['message']}" in row
        elif failed:
            assert "TOOL ERROR (isError):" in row
        else:
            assert "ERROR" not in row
    assert sum("TOOL ERROR" in r for r in rows.values()) == 2  # divide by zero, unknown tool
    assert sum("JSON-RPC ERROR -32602" in r for r in rows.values()) == 1
    stdio = _rows(_out(capsys, "calls", MCP_STDIO))
    assert "JSON-RPC ERROR -32602: Unknown tool: no_such_tool" in stdio["call8"]
    assert "TOOL ERROR (isError):" in stdio["call7"]
    a2a = _rows(_out(capsys, "calls", A2A))
    assert a2a["call5"].endswith("JSON-RPC ERROR -32001: Task not found")


def test_analyze_and_show_read_mcp_errors(capsys: pytest.CaptureFixture[str]) -> None:
    out = _out(capsys, "analyze", MCP_STDIO)
    lines = out.splitlines()
    (unknown,) = [ln for ln in lines if "execute_tool no_such_tool" in ln]
    assert "→ JSON-RPC ERROR -32602: Unknown tool: no_such_tool" in unknown
    (mars,) = [ln for ln in lines if "Mars/Olympus_Mons" in ln]
    assert "→ TOOL ERROR (isError) " in mars
    assert "ERROR 200" not in out
    shown = _out(capsys, "show", MCP_STDIO, "--call", "call8")
    assert "JSON-RPC error -32602: Unknown tool: no_such_tool" in shown
    shown = _out(capsys, "show", MCP_STDIO, "--call", "call7")
    assert "the tool result says isError: the tool failed" in shown


def test_ids_that_show_takes_are_printed(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _rows(_out(capsys, "calls", EXAMPLE))
    assert sorted(rows, key=lambda c: int(c[4:])) == [f"call{n}" for n in range(1, 7)]
    out = _out(capsys, "analyze", EXAMPLE)
    spans = [ln.split("span ")[-1] for ln in out.splitlines() if "  span " in ln]
    assert len(spans) == 6  # one per model call; tool spans without an execution have none
    for span in spans:
        assert main(["show", EXAMPLE, "--span", span, "--no-progress"]) == 0
        assert capsys.readouterr().out.startswith("call call")
    # MCP tool spans name the span of the tools/call that ran them
    out = _out(capsys, "analyze", MCP_STDIO)
    (line,) = [ln for ln in out.splitlines() if "no_such_tool" in ln and "span " in ln]
    assert main(["show", MCP_STDIO, "--span", line.split("span ")[-1], "--no-progress"]) == 0
    assert capsys.readouterr().out.startswith("call call8 · mcp · tools/call")


def test_show_json_is_the_call_of_the_report(capsys: pytest.CaptureFixture[str]) -> None:
    report = json.loads(_out(capsys, "calls", EXAMPLE, "--format", "json"))
    for call in report["calls"]:
        shown = json.loads(_out(capsys, "show", EXAMPLE, "--call", call["id"], "--format", "json"))
        assert shown == call
    raw = json.loads(_out(capsys, "calls", EXAMPLE, "--format", "json", "--no-redact"))
    shown = json.loads(
        _out(capsys, "show", EXAMPLE, "--call", "call1", "--format", "json", "--no-redact")
    )
    assert shown == raw["calls"][0]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _render(make: type[CallsTextWriter | TextWriter], path: str, *, wide: bool = False) -> str:
    terminal = _Terminal()
    writer = make(terminal, RenderOptions())
    writer.wide = wide
    for item in run([path], Options(calls=make is CallsTextWriter)):
        writer.write(item)
    return terminal.getvalue()


def test_columns_are_cut_only_on_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    url = "http://127.0.0.1:18766/v1/realtime?model=workshop-realtime"
    realtime = str(CAPTURES / "ws_realtime_plain" / "capture.pcap")
    piped = _out(capsys, "exchanges", realtime)  # capsys is not a terminal
    assert url in piped
    cut = _render(TextWriter, realtime)
    assert url not in cut and "http://127.0.0.1:18766/v1/realtime?model=wo…" in cut
    wide = _render(TextWriter, realtime, wide=True)
    assert url in wide
    long_answer = "Today, the weather in Seattle is 50 degrees and raining, while in San Francisco,"
    assert long_answer in _out(capsys, "calls", EXAMPLE)
    cut = _render(CallsTextWriter, EXAMPLE)
    assert long_answer not in cut


def test_complete_column_and_plurals(capsys: pytest.CaptureFixture[str]) -> None:
    out = _out(capsys, "exchanges", EXAMPLE)
    assert out.splitlines()[0].split()[-1] == "COMPLETE"
    assert "COMPLETE: yes when the whole exchange was seen" in out
    assert "it says nothing of success, see STATUS" in out
    out = _out(capsys, "calls", EXAMPLE)
    header = out.splitlines()[0].split()
    assert header[:3] == ["TIME", "ID", "API"] and "COMPLETE" in header and "OK" not in header
    assert "it says nothing of success, see OUTPUT" in out
    realtime = str(CAPTURES / "ws_realtime_plain" / "capture.pcap")
    out = _out(capsys, "exchanges", realtime)
    assert "45 packets, 1 connection, 1 exchange\n" in out
    out = _out(capsys, "analyze", str(ROOT / "tests/data/runs/seed004_shenzhen/capture.pcap"))
    assert "1 trace, 2 calls (2 model spans, 1 tool span)" in out
    assert "0 incidents (0 errors, 0 warnings), 0 HTTP exchanges not understood" in out
