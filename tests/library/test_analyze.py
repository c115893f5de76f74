"""agentshark.analyze: the report ``analyze --format json`` prints, with typed views and
queries; redaction on by default."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import orjson
import pytest

import agentshark
from agentshark.cli import main
from tests.helpers import CAPTURES, ROOT
from tests.output.test_secrets import INPUTS, SECRETS, leaks

EXAMPLE = ROOT / "examples" / "agent_chat.pcap"
CASES = {
    "example": ([EXAMPLE], []),
    "llm_sdk_openai": (
        [CAPTURES / "llm_sdk_openai" / "capture.pcap"],
        [CAPTURES / "llm_sdk_openai" / "keylog.txt"],
    ),
    "llm_sdk_anthropic": (
        [CAPTURES / "llm_sdk_anthropic" / "capture.pcap"],
        [CAPTURES / "llm_sdk_anthropic" / "keylog.txt"],
    ),
    "mcp_http_plain": ([CAPTURES / "mcp_http_plain" / "capture.pcap"], []),
    "mcp_stdio_time": ([CAPTURES / "mcp_stdio_time" / "transcript.jsonl"], []),
    "a2a": ([CAPTURES / "a2a_jsonrpc_v03" / "capture.pcap"], []),
}


def cli_json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> bytes:
    capsys.readouterr()
    main(argv)
    return capsys.readouterr().out.encode()


@pytest.mark.parametrize("name", sorted(CASES))
def test_to_json_is_what_analyze_format_json_prints(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    files, keylogs = CASES[name]
    report = agentshark.analyze(files, keylogs=keylogs)
    argv = ["analyze", *map(str, files), "--format", "json"]
    for k in keylogs:
        argv += ["--keylog", str(k)]
    printed = cli_json(capsys, argv)
    assert report.to_bytes() == printed
    assert report.to_json() == orjson.loads(printed)
    assert report.calls(), name  # every case has calls: the comparison is not of empties


def test_views_hold_the_report_fields() -> None:
    report = agentshark.analyze(EXAMPLE)
    data = report.to_json()
    assert [c.id for c in report.calls()] == [c["id"] for c in data["calls"]]
    call2 = report.call("call2")
    assert call2.api == "openai.chat"
    assert call2.request_model == "gpt-4o-mini"
    assert call2.model == "gpt-4o-mini-2024-07-18"
    assert call2.finish_reasons == ("stop",)
    assert call2.status == "ok"
    assert call2.system_instructions[0].content == "You're a helpful assistant."
    assert [m.role for m in call2.input_messages] == ["user", "assistant", "tool", "tool"]
    assert call2.output_text.startswith("Today, the weather in Seattle is 50 degrees")
    assert call2.usage is not None and call2.usage.input_tokens == 99
    assert call2.timing.duration is not None and call2.timing.duration > 0
    asked = report.call("call1").tool_calls
    assert [(t.name, t.arguments) for t in asked] == [
        ("get_current_weather", {"location": "Seattle, WA"}),
        ("get_current_weather", {"location": "San Francisco, CA"}),
    ]
    error = report.call("call4")
    assert error.status == "error"
    assert error.error is not None and error.error.status == 404
    assert error.error.code == "model_not_found"
    assert error.finish_reasons == ()  # none sent: none invented
    assert len(report.traces()) == len(data["traces"]) == 5
    trace = report.trace(report.traces()[0].trace_id[:8])  # a prefix, as analyze shows ids
    assert trace.calls == ("call1", "call2")
    tools = trace.tool_executions
    assert [(s.requested_by, s.result_in, s.inferred) for s in tools] == [
        ("call1", "call2", True),
        ("call1", "call2", True),
    ]
    assert report.exchanges()[3].status == 404
    assert report.sources()[0].format == "pcap"
    assert report.summary()["calls"] == 6


def ids(calls: Iterable[agentshark.Call]) -> list[str]:
    return [c.id for c in calls]


def test_queries_filter_as_documented() -> None:
    report = agentshark.analyze(EXAMPLE)
    assert (
        ids(report.calls(api="openai"))
        == ids(report.calls(api="openai.chat"))
        == [f"call{n}" for n in range(1, 7)]
    )
    assert ids(report.calls(api="anthropic")) == []
    assert ids(report.calls(status="error")) == ["call4"]
    assert ids(report.calls(model="GPT-4O-MINI")) == ["call1", "call2", "call3"]
    assert ids(report.calls(tool="get_current_weather")) == ["call1", "call3"]
    assert ids(report.calls(text="70 degrees and sunny")) == ["call2"]  # a tool result
    assert ids(report.calls(text="SEATTLE", status="ok", tool="get_current_weather")) == [
        "call1",
        "call3",
    ]
    assert [t.name for t in report.tool_calls(name="get_country")] == ["get_country"]
    with pytest.raises(ValueError, match="status 'fine'"):
        report.calls(status="fine")
    with pytest.raises(KeyError, match=r"no call 'call99'.*call1, call2"):
        report.call("call99")
    with pytest.raises(KeyError, match="trace 'zz' is none of them"):
        report.trace("zz")


def test_mcp_calls_name_the_tool_they_execute() -> None:
    report = agentshark.analyze(CAPTURES / "mcp_http_plain" / "capture.pcap")
    (divide,) = report.calls(tool="divide")
    assert divide.operation == "tools/call"
    assert divide.status == "error"  # isError: the server said the tool failed
    assert divide.tool_error and divide.error is None
    assert [i.rule for i in report.incidents(rule="mcp")] == ["mcp.tool_not_listed"]
    assert report.incidents(severity="error") == ()


def test_unreadable_input_is_a_failure_not_an_exception(tmp_path: Path) -> None:
    missing = tmp_path / "nope.pcap"
    report = agentshark.analyze([missing, EXAMPLE])
    assert len(report.calls()) == 6  # the other input is still analyzed
    (failure,) = report.failures
    assert "cannot read" in failure and "nope.pcap" in failure
    assert [d.code for d in report.diagnostics(code="source")] == ["source.unreadable"]


def test_arguments_that_cannot_run_raise() -> None:
    with pytest.raises(ValueError, match="max_body 0"):
        agentshark.analyze(EXAMPLE, max_body=0)


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_no_planted_secret_in_the_report_or_its_views(name: str) -> None:
    args = INPUTS[name]
    files = [a for a in args if not a.startswith("--") and args[args.index(a) - 1] != "--keylog"]
    keylogs = [args[i + 1] for i, a in enumerate(args) if a == "--keylog"]
    report = agentshark.analyze(files, keylogs=keylogs, events=True)
    assert leaks(report.to_bytes().decode()) == []
    seen = repr([report.calls(), report.traces(), report.incidents(), report.exchanges()])
    assert leaks(seen) == []
    shown = agentshark.analyze(files, keylogs=keylogs, events=True, redact=False)
    assert leaks(shown.to_bytes().decode()), "redact=False shows them (the test can fail)"


def test_report_from_json_reads_a_saved_report() -> None:
    report = agentshark.analyze(EXAMPLE)
    again = agentshark.Report.from_json(report.to_bytes().decode())
    assert again.to_json() == report.to_json()
    assert again.call("call3").tool_calls == report.call("call3").tool_calls
    assert set(SECRETS)  # the corpus is there
