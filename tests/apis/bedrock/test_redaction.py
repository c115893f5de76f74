"""SigV4 credentials never leave: a Bedrock cassette of the corpus with a planted SigV4
``Authorization`` header, ``X-Amz-Security-Token`` and a presigned-style URL parameter, run
through every command and format (``exchanges``, ``exchanges --events``, ``calls``,
``analyze``, ``show``) in process; no piece of a planted credential may be printed, and with
``--no-redact`` they are (so the test can fail). The credentials are made per run from
``secrets``: no fixture holds one."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest
import yaml

from agentshark.cli import main
from tests.helpers import CORPUS

CASSETTE = (
    CORPUS / "traceloop__openllmetry/packages/opentelemetry-instrumentation-bedrock/tests/traces/"
    "cassettes/test_anthropic/test_anthropic_converse_stream_with_tool_use.yaml"
)
pytestmark = pytest.mark.skipif(not CASSETTE.exists(), reason="no corpus")


def planted(tmp_path: Path) -> tuple[Path, list[str]]:
    key_id = "ASIA" + secrets.token_hex(8).upper()
    signature = secrets.token_hex(32)
    token = secrets.token_urlsafe(96)
    authorization = (
        f"AWS4-HMAC-SHA256 Credential={key_id}/20250301/us-east-1/bedrock/aws4_request, "
        f"SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, Signature={signature}"
    )
    doc = yaml.safe_load(CASSETTE.read_text())
    for interaction in doc["interactions"]:
        headers = interaction["request"]["headers"]
        headers["Authorization"] = [authorization]
        headers["X-Amz-Security-Token"] = [token]
        headers["X-Amz-Date"] = ["20250301T000000Z"]
        interaction["request"]["uri"] += f"?X-Amz-Signature={signature}"
    path = tmp_path / "bedrock_sigv4.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path, [key_id, signature, token, signature[:16], token[:24]]


COMMANDS = (
    ["exchanges"],
    ["exchanges", "--events"],
    ["calls"],
    ["analyze"],
    ["show", "--call", "call1"],
)


@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize("command", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_sigv4_credentials_are_redacted(
    command: list[str], fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, pieces = planted(tmp_path)
    assert main([*command, str(path), "--format", fmt, "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert "AWS4-HMAC-SHA256" in out or command[0] != "exchanges" or fmt == "text"
    for piece in pieces:
        assert piece not in out and piece not in err


def test_no_redact_shows_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, pieces = planted(tmp_path)
    assert main(["exchanges", str(path), "--format", "json", "--no-redact", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert all(piece in out for piece in pieces)
