"""Every view that prints NO / INCOMPLETE / "not understood" prints the reason the JSON
report has: exchanges, calls, analyze and show, over faults a user met."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentshark.cli import main
from tests.output import wire


def _pcap(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def _text(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main([*args, "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return captured.out


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main([*args, "--format", "json", "--no-progress"]) == 0
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    return report


def test_head_too_long_is_said_not_a_late_capture(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pcap = _pcap(tmp_path, "head.pcap", wire.head_too_long())
    report = _json(capsys, "exchanges", pcap)
    (exchange,) = report["exchanges"]
    (diag,) = exchange["diagnostics"]
    assert diag["code"] == "http.response_without_request"
    assert "could not be parsed: no end of message head within 262144 bytes" in diag["message"]
    assert "capture started after" not in diag["message"]
    out = _text(capsys, "exchanges", pcap)
    row = next(ln for ln in out.splitlines() if " c1 " in ln)
    assert row.rstrip().endswith("NO")
    assert diag["message"] in out
    # the connection's own parse errors are listed though it has an exchange
    assert "problems on connections with exchanges:" in out
    assert "that are not part of a recognizable HTTP request" in out


def test_json_nested_too_deep_is_not_called_not_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for path, headers, family in (
        ("/v1/chat/completions", (), "openai_chat.unexpected_body"),
        ("/v1/messages", ("anthropic-version: 2023-06-01",), "anthropic.response_not_recognized"),
    ):
        pcap = _pcap(tmp_path, "deep.pcap", wire.nested_too_deep(path, *headers))
        report = _json(capsys, "calls", pcap)
        (call,) = report["calls"]
        assert call["complete"] is False
        (diag,) = [d for d in call["diagnostics"] if d["code"] == family]
        assert "nested deeper than the 1024 levels" in diag["message"]
        out = _text(capsys, "calls", pcap)
        assert diag["message"] in out and "is not JSON" not in out
        out = _text(capsys, "analyze", pcap)
        assert f"INCOMPLETE ({family}: {diag['message']})" in out


def test_decompression_limit_comes_before_its_consequences(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pcap = _pcap(tmp_path, "gz.pcap", wire.gzipped_answer())
    report = _json(capsys, "calls", pcap, "--max-body", "1K")
    (call,) = report["calls"]
    assert not call["complete"]
    limit = "decoded body exceeds 1 KiB limit; raise it with --max-body"
    assert any(d["code"] == "content.limit_exceeded" for d in call["diagnostics"])
    lines = _text(capsys, "calls", pcap, "--max-body", "1K").splitlines()
    row = next(n for n, ln in enumerate(lines) if ln.split()[1:2] == ["call1"])
    assert lines[row + 1] == f"    ! content.limit_exceeded: {limit} (e1 response body)"
    out = _text(capsys, "analyze", pcap, "--max-body", "1K")
    assert f"INCOMPLETE (content.limit_exceeded: {limit})" in out
    out = _text(capsys, "exchanges", pcap, "--max-body", "1K")
    assert f"! content.limit_exceeded: {limit}" in out
    # with room enough, the same call is whole
    report = _json(capsys, "calls", pcap)
    assert report["calls"][0]["complete"]


def test_a_gap_is_the_reason_in_every_view(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pcap = _pcap(tmp_path, "gap.pcap", wire.lost_segment())
    report = _json(capsys, "calls", pcap)
    (exchange,) = report["exchanges"]
    assert not exchange["complete"] and exchange["response"]["gap_bytes"] == 1000
    gap = "1000 bytes of the response body at server byte 2000 were not captured"
    assert [d["message"] for d in exchange["diagnostics"]] == [gap]
    assert f"! http.body_gap: {gap}" in _text(capsys, "exchanges", pcap)
    assert f"! http.body_gap: {gap}" in _text(capsys, "calls", pcap)
    assert f"INCOMPLETE (http.body_gap: {gap})" in _text(capsys, "analyze", pcap)
    shown = " ".join(_text(capsys, "show", pcap, "--call", "call1").split())
    assert "INCOMPLETE" in shown and "incomplete warning http.body_gap" in shown
    assert gap in shown


def test_truncated_file_is_said_by_analyze(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = wire.lost_segment()
    cut = _pcap(tmp_path, "cut.pcap", data[: len(data) - 30])
    out = _text(capsys, "analyze", cut)
    assert "pcap.truncated_file" in out and "cut.pcap" in out
