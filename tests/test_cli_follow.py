"""``agentshark calls --follow`` and ``analyze --follow``: call lines as they finish, trace
changes, the final trees of ``analyze``, JSON updates, Ctrl-C, usage errors."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentshark.cli import main
from tests.helpers import ROOT

EXAMPLE = ROOT / "examples" / "agent_chat.pcap"


def test_analyze_follow_prints_calls_and_trace_changes_then_the_trees_of_analyze(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "agent_chat.pcap"
    path.write_bytes(EXAMPLE.read_bytes())
    assert main(["analyze", str(path), "--no-progress"]) == 0
    batch = capsys.readouterr().out
    assert main(["analyze", "--follow", str(path), "--until", "0.2"]) == 0
    out = capsys.readouterr().out
    head, _, trees = out.partition("\ntrace 1 ")
    assert "call1   openai.chat" in head
    assert "sk-example-not-a-real-key" not in out, "redacted"
    assert "~ new trace " in head
    assert "trace 1 " + trees == batch[batch.index("trace 1 ") :]


def test_calls_follow_prints_the_lines_of_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "agent_chat.pcap"
    path.write_bytes(EXAMPLE.read_bytes())
    assert main(["calls", str(path), "--wide"]) == 0
    batch = capsys.readouterr().out
    assert main(["calls", "--follow", str(path), "--until", "0.2", "--wide"]) == 0
    out = capsys.readouterr().out
    assert "~ " not in out, "calls builds no traces"
    assert out == batch


def test_calls_follow_api_shows_only_those_families(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "agent_chat.pcap"
    path.write_bytes(EXAMPLE.read_bytes())
    assert main(["calls", str(path), "--wide", "--api", "anthropic"]) == 0
    batch = capsys.readouterr().out
    assert (
        main(["calls", "--follow", str(path), "--until", "0.2", "--wide", "--api", "anthropic"])
        == 0
    )
    assert capsys.readouterr().out == batch
    assert "call1 " not in batch, "no call line: all six are openai.chat"


def test_follow_json_writes_one_update_per_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "agent_chat.pcap"
    path.write_bytes(EXAMPLE.read_bytes())
    assert main(["analyze", "--follow", str(path), "--until", "0.2", "--format", "json"]) == 0
    updates = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    kinds = [u["update"] for u in updates]
    assert kinds.count("call") == 6
    assert kinds.count("exchange") == 6
    assert kinds.count("source") == 1
    assert "trace" in kinds
    calls = [u["call"] for u in updates if u["update"] == "call"]
    assert calls[0]["id"] == "call1"
    assert "sk-example-not-a-real-key" not in json.dumps(updates)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["calls", "x.pcap", "--until", "1"], "--until goes with --follow"),
        (["calls", "-", "--follow"], "--follow reads files"),
        (["analyze", "x.pcap", "--follow", "--until", "0"], "--until 0.0: give a number"),
    ],
)
def test_follow_usage_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_sigint_while_following_exits_130_after_the_final_output(tmp_path: Path) -> None:
    path = tmp_path / "growing.pcap"
    path.write_bytes(EXAMPLE.read_bytes())
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentshark", "analyze", "--follow", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        text=True,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 60  # a wait, not a timing assertion
    lines: list[str] = []
    while time.monotonic() < deadline and not any("call6" in line for line in lines):
        lines.append(proc.stdout.readline())
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "Traceback" not in err
    assert err.strip().startswith(f"agentshark: interrupted: followed {path} for ")
    assert "6 exchanges, 6 calls, 5 traces" in err
    assert "5 traces, 6 calls" in out, "the final summary of analyze"
