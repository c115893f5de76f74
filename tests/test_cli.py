"""The command line as a user meets it: text and JSON, several inputs, stdin, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentshark.cli import _Progress, main
from agentshark.cli_parser import _size_arg
from tests.helpers import CAPTURES, CORPUS, ROOT

AGENTSIGHT = (
    "eunomia-bpf__agentsight/script/results/ssl_only/claude_code/analysis_gen_readme/"
    "ssl_data_only.json"
)

EXAMPLE = ROOT / "examples" / "agent_chat.pcap"
HAR = ROOT / "tests" / "data" / "documents" / "chat_and_ws.har"


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["exchanges", *args, "--format", "json", "--no-progress"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_text_table_of_the_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["exchanges", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["TIME", "CONN", "METHOD", "URL"]
    truth = json.loads((ROOT / "examples" / "agent_chat.truth.json").read_text())
    rows = [ln for ln in lines[1:] if ln[:2].isdigit()]
    assert len(rows) == len(truth["requests"])
    assert "text/event-stream" in out and "gzip" in out
    assert "6 exchanges" in out


def test_json_report_of_the_example_matches_truth(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = run_json(capsys, str(EXAMPLE))
    assert code == 0
    assert report["schema"] == "agentshark.report/1"
    truth = json.loads((ROOT / "examples" / "agent_chat.truth.json").read_text())
    got = sorted(
        (
            e["request"]["method"],
            e["request"]["target"],
            e["response"]["status"],
            e["response"]["body_bytes"],
        )
        for e in report["exchanges"]
    )
    want = sorted(
        (r["method"], r["path"], r["status"], r["decoded_body_bytes"]) for r in truth["requests"]
    )
    assert got == want
    # Secrets are redacted by default...
    auth = [
        v
        for e in report["exchanges"]
        for k, v in e["request"]["headers"]
        if k.lower() == "authorization"
    ]
    assert auth and all(v.startswith("Bearer [REDACTED sk-… 16+:") for v in auth)
    assert "sk-example" not in json.dumps(report)


def test_no_redact_shows_credentials(capsys: pytest.CaptureFixture[str]) -> None:
    _, report = run_json(capsys, str(EXAMPLE), "--no-redact")
    assert "sk-example-not-a-real-key" in json.dumps(report)


def test_events_give_stream_events_with_times(capsys: pytest.CaptureFixture[str]) -> None:
    _, report = run_json(capsys, str(CAPTURES / "http1_cleartext" / "capture.pcap"), "--events")
    (sse,) = [e for e in report["exchanges"] if e["response"]["framing"] == "sse"]
    events = sse["response"]["events"]
    assert len(events) == 10 and events[-1]["data"] == "[DONE]"
    times = [ev["ts"] for ev in events]
    assert times == sorted(times) and times[0] >= sse["response"]["first_byte"]
    pieces = sse["response"]["body_pieces"]
    assert sum(size for _, size in pieces) == sse["response"]["wire_body_bytes"]


def test_several_inputs_and_a_bad_one(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_bytes(b"\x00\x01\x02 this is not a capture")
    missing = tmp_path / "missing.pcap"
    code, report = run_json(capsys, str(EXAMPLE), str(bad), str(HAR), str(missing))
    assert code == 1  # some input could not be read, but the others were
    formats = [s["format"] for s in report["sources"]]
    assert formats == ["pcap", "unknown", "har", "unknown"]
    assert {e["source"] for e in report["exchanges"]} == {0, 2}
    bad_diag = report["sources"][1]["diagnostics"][0]
    assert bad_diag["severity"] == "error" and "notes.txt" in bad_diag["message"]
    assert "missing.pcap" in report["sources"][3]["diagnostics"][0]["message"]
    ids = [e["id"] for e in report["exchanges"]]
    assert len(ids) == len(set(ids))
    conn_ids = [c["id"] for c in report["connections"]]
    assert len(conn_ids) == len(set(conn_ids))


def test_truncated_capture_keeps_what_came_before(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = EXAMPLE.read_bytes()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data[: len(data) * 2 // 3])
    code, report = run_json(capsys, str(cut))
    assert code == 0
    (source,) = report["sources"]
    (diag,) = [d for d in source["diagnostics"] if d["code"] == "pcap.truncated_file"]
    assert "offset" in diag["location"]
    assert report["exchanges"]  # the exchanges before the cut are still there
    assert any(not e["complete"] for e in report["exchanges"]) or len(report["exchanges"]) < 6


def test_unsupported_document_says_what_it_is(capsys: pytest.CaptureFixture[str]) -> None:
    agentsight = CORPUS / AGENTSIGHT
    code = main(["exchanges", str(agentsight), "--format", "json", "--no-progress"])
    captured = capsys.readouterr()
    assert code == 1
    message = json.loads(captured.out)["sources"][0]["diagnostics"][0]["message"]
    assert "agentsight" in message
    assert captured.err.startswith("agentshark: ") and "agentsight" in captured.err


def test_calls_api_filter_and_stdio(capsys: pytest.CaptureFixture[str]) -> None:
    goose = CORPUS / "block__goose/crates/goose/tests/mcp_replays/uvxmcp-server-fetch"
    code = main(["calls", str(goose), "--format", "json", "--no-progress", "--api", "mcp"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["sources"][0]["format"] == "stdio"
    assert [c["operation"] for c in report["calls"]] == [
        "initialize",
        "notifications/initialized",
        "tools/list",
        "tools/call",
    ]
    assert {e["transport"] for e in report["exchanges"]} == {"stdio"}
    main(["calls", str(goose), "--format", "json", "--no-progress", "--api", "openai"])
    assert json.loads(capsys.readouterr().out)["calls"] == []


def test_standard_input_streams_a_pcap() -> None:
    data = EXAMPLE.read_bytes()
    proc = subprocess.run(
        [sys.executable, "-m", "agentshark", "exchanges", "-", "--format", "json"],
        input=data,
        capture_output=True,
        check=True,
        cwd=ROOT,
    )
    report = json.loads(proc.stdout)
    assert report["sources"][0]["path"] == "-"
    assert len(report["exchanges"]) == 6


def test_output_file_and_broken_pipe(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    assert main(["exchanges", str(EXAMPLE), "--format", "json", "-o", str(out)]) == 0
    assert json.loads(out.read_text())["exchanges"]
    proc = subprocess.run(
        f"{sys.executable} -m agentshark exchanges {EXAMPLE} | head -c 10",
        shell=True,
        capture_output=True,
        cwd=ROOT,
        check=True,
    )
    assert b"Traceback" not in proc.stderr


def test_size_argument() -> None:
    assert _size_arg("256M") == 256 << 20
    assert _size_arg("1GiB") == 1 << 30
    assert _size_arg("4096") == 4096
    with pytest.raises(Exception, match="not a size"):
        _size_arg("lots")


def test_progress_bar_draws_and_finishes() -> None:
    import io

    buf = io.StringIO()
    bar = _Progress(buf)
    bar(50_000_000, 100_000_000)
    bar(100_000_000, 100_000_000)
    bar.finish()
    text = buf.getvalue()
    assert "100.0%" in text and text.endswith("\n")


def test_calls_table_of_the_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calls", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    rows = [ln for ln in out.splitlines() if ln[:2].isdigit()]
    assert len(rows) == 6 and all("openai.chat" in r for r in rows)
    assert "get_current_weather(" in out and "ERROR 404" in out and "tool_calls" in out


def test_calls_json_matches_the_client_records(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["calls", str(EXAMPLE), "--format", "json", "--no-progress"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    truth = json.loads((ROOT / "examples" / "agent_chat.truth.json").read_text())
    ports = {c["id"]: c["client"]["port"] for c in report["connections"]}
    exchanges = sorted(report["exchanges"], key=lambda e: e["request"]["started"])
    # The client's requests, per connection in order, against the exchanges the same way.
    place = {
        e["id"]: (
            ports[e["connection"]],
            [x["id"] for x in exchanges if x["connection"] == e["connection"]].index(e["id"]),
        )
        for e in exchanges
    }
    wanted = {}
    for port in {r["client_port"] for r in truth["requests"]}:
        mine = [r for r in truth["requests"] if r["client_port"] == port]
        for i, r in enumerate(sorted(mine, key=lambda r: r["started"])):
            wanted[(port, i)] = r
    assert len(report["calls"]) == len(truth["requests"])
    for call in report["calls"]:
        want = wanted[place[call["exchange_id"]]]
        if want.get("tool_calls"):
            got = [
                (p["id"], p["name"], p["arguments_raw"])
                for m in call["output_messages"]
                for p in m["parts"]
                if p["type"] == "tool_call"
            ]
            assert got == [(t["id"], t["name"], t["arguments"]) for t in want["tool_calls"]]
        if want["status"] >= 400:
            assert call["error"]["status"] == want["status"]
        else:
            assert call["complete"] and call["error"] is None


def test_reports_do_not_depend_on_hash_randomization() -> None:
    """The same input gives byte-identical reports whatever PYTHONHASHSEED is."""
    import os

    inputs = [
        str(EXAMPLE),
        str(
            CORPUS / "pydantic__pydantic-ai/tests/cassettes/test_dbos/"
            "test_complex_agent_run_in_workflow.yaml"
        ),
    ]
    outputs = []
    for seed in ("0", "1"):
        proc = subprocess.run(
            [sys.executable, "-m", "agentshark", "calls", *inputs, "--format", "json"],
            capture_output=True,
            check=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        outputs.append(proc.stdout)
    assert outputs[0] == outputs[1]


def test_analyze_text_tree(capsys: pytest.CaptureFixture[str]) -> None:
    shenzhen = ROOT / "tests/data/runs/seed004_shenzhen/capture.pcap"
    assert main(["analyze", str(shenzhen), "--no-progress"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("trace 1 ") and "(history, id generated)" in out[0]
    assert out[1].startswith("└─ invoke_agent")
    assert out[2].startswith("   ├─ chat gpt-4.1  call1") and "finish tool_calls" in out[2]
    assert out[3].startswith("   ├─ execute_tool get_weather") and '"city":"深圳"' in out[3]
    assert "[ran as e2]" in out[3] and "id call-shenzhen-001" in out[3]
    assert out[4].startswith("   └─ chat gpt-4.1  call3") and "finish stop" in out[4]
    assert out[-1].startswith("1 trace, 2 calls (2 model spans, 1 tool span)")
    assert out[-1].endswith("0 HTTP exchanges not understood")


def test_show_call_and_span(capsys: pytest.CaptureFixture[str]) -> None:
    shenzhen = str(ROOT / "tests/data/runs/seed004_shenzhen/capture.pcap")
    assert main(["show", shenzhen, "--call", "call3", "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "call call3 · openai.chat · chat" in text
    assert "message [2] · tool" in text and "rain_probability" in text
    assert main(["analyze", shenzhen, "--format", "json", "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    model = next(s for s in report["traces"][0]["spans"] if s["call_id"] == "call1")
    assert main(["show", shenzhen, "--span", model["span_id"], "--no-progress"]) == 0
    assert "call call1 · openai.chat" in capsys.readouterr().out
    agent = report["traces"][0]["spans"][0]["span_id"]
    assert main(["show", shenzhen, "--span", agent, "--no-progress"]) == 2
    assert "stands for no observed call" in capsys.readouterr().err
    assert main(["show", shenzhen, "--call", "call99", "--no-progress"]) == 2
    assert "no call call99" in capsys.readouterr().err


def test_show_renders_the_whole_call_not_the_analysis_copy(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The analysis keeps slim copies (long strings cut); show prints the call as parsed."""
    thinking = (
        CORPUS / "pydantic__pydantic-ai/tests/models/cassettes/test_anthropic/"
        "test_anthropic_tool_with_thinking.yaml"
    )
    assert main(["calls", str(thinking), "--format", "json", "--no-progress"]) == 0
    call = json.loads(capsys.readouterr().out)["calls"][0]
    texts = [p["content"] for m in call["output_messages"] for p in m["parts"] if "content" in p]
    longest = max(texts, key=len)
    assert len(longest) > 300
    assert main(["analyze", str(thinking), "--format", "json", "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    spans = [s for t in report["traces"] for s in t["spans"] if s["call_id"] == call["id"]]
    for how in (["--call", call["id"]], ["--span", str(spans[0]["span_id"])]):
        assert main(["show", str(thinking), *how, "--no-progress", "--no-redact"]) == 0
        out = capsys.readouterr().out
        assert "chars, sha256" not in out
        assert " ".join(longest.split()[-6:]) in " ".join(out.split())


# --- no dead ends: what can be known wrong is said before reading, in one line, exit 2 ----

COMMANDS = (["exchanges"], ["calls"], ["analyze"], ["show", "--call", "call1"])


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_output_into_a_missing_directory_or_onto_one(
    command: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    name, *rest = command
    for target, words in (
        (tmp_path / "no" / "such" / "r.json", ["does not exist", "mkdir -p"]),
        (tmp_path, ["is a directory", "give a file name"]),
    ):
        code = main([name, str(EXAMPLE), *rest, "-o", str(target), "--no-progress"])
        err = capsys.readouterr().err
        assert code == 2
        (line,) = err.splitlines()
        assert line.startswith(f"agentshark: -o {target}: ")
        assert all(w in line for w in words)
    assert not (tmp_path / "no").exists()
    out = tmp_path / "r.txt"
    assert main([name, str(EXAMPLE), *rest, "-o", str(out), "--no-progress"]) == 0
    assert out.stat().st_size > 0


def test_max_body_must_be_a_positive_size(capsys: pytest.CaptureFixture[str]) -> None:
    for value in ("-5", "0", "lots"):
        with pytest.raises(SystemExit) as exit_:
            main(["calls", str(EXAMPLE), "--max-body", value])
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert "argument --max-body:" in err and "Traceback" not in err
        assert ("positive size" in err) or ("not a size" in err)


def test_missing_keylog_is_an_error_at_start(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    tls = str(CAPTURES / "https_tls13_h2" / "capture.pcap")
    missing = tmp_path / "keys.log"
    assert main(["calls", tls, "--keylog", str(missing)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"agentshark: --keylog {missing}: no such file (give the file SSLKEYLOGFILE named "
        "when the client ran)\n"
    )
    assert main(["exchanges", tls, "--keylog", str(tmp_path)]) == 2
    assert "a directory" in capsys.readouterr().err


def test_unknown_api_lists_the_known_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calls", str(EXAMPLE), "--api", "gpt"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("agentshark: --api gpt: no such API family; known: a2a, ")
    for name in ("openai.chat", "anthropic.messages", "mcp", "gemini.generate_content"):
        assert name in line
    parts = line.partition("(or a first part: ")[2].rstrip(")").split(", ")
    assert {"anthropic", "bedrock", "cohere", "gemini", "ollama", "openai", "xai"} <= set(parts)
    assert {"chroma", "qdrant", "tavily", "mem0"} <= set(parts)  # the retrieval services'
    assert parts == sorted(parts)
    for good in ("openai", "openai.chat", "gemini", "bedrock.converse"):
        assert main(["calls", str(EXAMPLE), "--api", good, "--no-progress"]) == 0
        capsys.readouterr()


def test_help_has_a_line_per_argument_and_examples() -> None:
    import argparse

    from agentshark.cli import build_parser

    def commands(parser: argparse.ArgumentParser, prefix: str) -> dict[str, Any]:
        (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        return {f"{prefix}{name}": cmd for name, cmd in sub.choices.items()}

    found = commands(build_parser(), "")
    assert set(found) == {
        *(
            "exchanges",
            "calls",
            "analyze",
            "show",
            "report",
            "serve",
            "export",
            "mcp-server",
            "proxy",
            "ca",
            "capture",
            "mcp-tap",
            "batch",
        ),
    }
    found |= commands(found.pop("export"), "export ")  # a group: its formats are the commands
    assert {"export otlp", "export parquet", "export duckdb"} <= set(found)
    for name, cmd in found.items():
        for action in cmd._actions:
            assert action.help, f"{name} {action.dest} has no help line"
        text = cmd.format_help()
        assert "examples:" in text and f"agentshark {name} " in text.split("examples:")[1]


# --- Ctrl-C: exit 130 and what was done so far --------------------------------------------


def test_interrupt_says_what_was_done(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentshark.pipeline import run as real

    def interrupted(paths: list[str], options: Any) -> Any:
        for n, item in enumerate(real(paths, options)):
            if n == 5:
                raise KeyboardInterrupt
            yield item

    monkeypatch.setattr("agentshark.cli.run", interrupted)
    for command in ("exchanges", "calls", "analyze"):
        assert main([command, str(EXAMPLE), str(HAR), "--no-progress"]) == 130
        err = capsys.readouterr().err
        assert "Traceback" not in err
        assert err.strip().startswith("agentshark: interrupted while reading input 1 of 2 (0 ")
        assert "so far; the output is cut short" in err


def test_sigint_during_analyze_exits_130() -> None:
    """A real SIGINT, sent once the process waits for more of the capture on its stdin."""
    import signal
    import time

    data = EXAMPLE.read_bytes()
    for command in ("analyze", "exchanges"):
        proc = subprocess.Popen(
            [sys.executable, "-m", "agentshark", command, "-"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
        )
        assert proc.stdin is not None
        proc.stdin.write(data)
        proc.stdin.flush()
        wchan = Path(f"/proc/{proc.pid}/wchan")
        deadline = time.monotonic() + 60  # a wait, not a timing assertion
        while "pipe" not in wchan.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        if "pipe" not in wchan.read_text():
            proc.kill()
            pytest.skip("this kernel does not say what a process waits for")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130
        assert err.decode().strip() == (
            "agentshark: interrupted while reading input 1 of 1 (0 read whole), 6 exchanges "
            f"and {6 if command == 'analyze' else 0} calls so far; the output is cut short"
        )


# --- silence: say what was recognized and why nothing is listed ---------------------------

GEMINI = (
    CORPUS / "pydantic__pydantic-ai/tests/models/cassettes/test_google/"
    "test_google_model_iter_stream.yaml"
)
BEDROCK = (
    CORPUS / "pydantic__pydantic-ai/tests/models/cassettes/test_bedrock/"
    "test_bedrock_inference_profile_count_tokens.yaml"
)
REALTIME = CAPTURES / "ws_realtime_plain" / "capture.pcap"


def test_unparsed_families_are_named(capsys: pytest.CaptureFixture[str]) -> None:
    inputs = [str(GEMINI), str(BEDROCK), str(REALTIME)]
    assert main(["calls", *inputs, "--format", "json", "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    # Gemini and Realtime are parsed: their exchanges are calls, never also "not parsed"
    apis = [c["api"] for c in report["calls"]]
    assert apis == ["gemini.generate_content"] * 3 + ["openai.realtime"]
    assert report["not_parsed"] == [
        {"api": "bedrock.count_tokens", "name": "Bedrock CountTokens", "exchanges": ["e4"]},
    ]
    assert main(["calls", *inputs, "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "4 calls" in out and "Gemini streamGenerateContent (not parsed yet)" not in out
    assert "1 exchange looks like Bedrock CountTokens (not parsed yet): e4" in out
    assert "Realtime" not in out.split("4 calls")[-1]
    assert main(["analyze", *inputs, "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "1 HTTP exchange not understood" in out
    assert "1 exchange looks like Bedrock CountTokens (not parsed yet)" in out
    assert main(["analyze", *inputs, "--format", "json", "--no-progress"]) == 0
    assert len(json.loads(capsys.readouterr().out)["not_parsed"]) == 1


def test_zero_calls_says_why(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    tls = str(CAPTURES / "https_tls13_h2" / "capture.pcap")
    assert main(["calls", tls, "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "0 calls: no HTTP exchanges: 1 TLS connection stayed encrypted (no key for it: " in out
    assert main(["exchanges", tls, "--no-progress"]) == 0
    assert "0 exchanges: 1 TLS connection stayed encrypted" in capsys.readouterr().out
    assert main(["calls", str(EXAMPLE), "--api", "mcp", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "0 calls: 6 calls of other APIs (openai.chat 6) left out by --api mcp" in out
    assert main(["calls", str(HAR), "--no-progress"]) == 0
    out = capsys.readouterr().out  # a HAR file's WebSocket to /v1/realtime
    assert "1 OpenAI Realtime session over WebSocket with no model response in it (e2)" in out
    assert main(["calls", str(EXAMPLE), "--no-progress"]) == 0
    assert "\n6 calls\n" in capsys.readouterr().out
    empty = tmp_path / "empty.pcap"
    empty.write_bytes(EXAMPLE.read_bytes()[:24])  # a pcap header, no packet
    assert main(["calls", str(empty), "--no-progress"]) == 0
    assert "0 calls: no HTTP exchanges in the input" in capsys.readouterr().out


def test_failure_lines_on_stderr_are_redacted(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A failure said on stderr goes through the output's redaction: a path (or a message
    quoting input) holding a key shows its mark, not the key; ``--no-redact`` shows it."""
    key = "sk-proj-Q7wErTy8UiOp9AsDfGh0JkLzXcVbNm12"
    bad = tmp_path / f"{key}.yaml"
    bad.write_text("interactions: [\n")
    assert main(["exchanges", str(bad)]) == 1
    captured = capsys.readouterr()
    assert "is not valid YAML" in captured.err
    assert key not in captured.err and key[8:] not in captured.err
    assert key not in captured.out
    assert "[REDACTED sk-proj-" in captured.err
    assert main(["exchanges", "--no-redact", str(bad)]) == 1
    assert key in capsys.readouterr().err


WEBRTC = CORPUS / "pydantic__pydantic-ai/tests/realtime/cassettes/test_webrtc"


@pytest.mark.parametrize("name", ["test_answer_webrtc_offer", "test_agent_answer_webrtc_offer"])
def test_a_realtime_webrtc_call_says_its_events_cannot_be_decrypted(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The SDP exchange of ``POST /v1/realtime/calls`` is named, and said to be all a capture
    can hold of the call: its events ride a DTLS/SCTP data channel."""
    cassette = str(WEBRTC / f"{name}.yaml")
    assert main(["calls", cassette, "--format", "json", "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["calls"] == []
    (entry,) = report["not_parsed"]
    assert (entry["api"], entry["name"]) == ("openai.realtime", "OpenAI Realtime WebRTC call")
    assert main(["analyze", cassette, "--no-progress"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "WebRTC call" in x)
    assert "data channel (DTLS, SCTP) that the capture cannot decrypt" in line
    assert "not parsed yet" not in line
