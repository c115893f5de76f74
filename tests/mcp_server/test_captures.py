"""The MCP server's paths (restricted to the root), key logs found beside a capture, and the
report cache keyed by each file's path, modification time and size."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from agentshark.mcp_server.captures import Captures, PathRefusedError, is_keylog
from tests.helpers import CAPTURES, ROOT

EXAMPLE = ROOT / "examples" / "agent_chat.pcap"
TLS = CAPTURES / "llm_sdk_openai"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "runs").mkdir()
    shutil.copy(EXAMPLE, tmp_path / "runs" / "a.pcap")
    shutil.copy(TLS / "capture.pcap", tmp_path / "runs" / "tls.pcap")
    return tmp_path


def test_a_report_is_made_once_until_the_file_changes(root: Path) -> None:
    captures = Captures(root)
    first = captures.report(["runs/a.pcap"])
    assert captures.report(["runs/a.pcap"]) is first
    assert captures.report([str(root / "runs" / "a.pcap")]) is first  # the same file
    assert captures.analyses == 1
    path = root / "runs" / "a.pcap"
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    again = captures.report(["runs/a.pcap"])
    assert again is not first and captures.analyses == 2
    with path.open("ab") as f:  # a cut record at the end: a new size
        f.write(b"\x00" * 7)
    assert captures.report(["runs/a.pcap"]) is not again
    assert captures.analyses == 3


def test_the_cache_keeps_the_most_recent_reports(root: Path) -> None:
    captures = Captures(root)
    for n in range(20):
        shutil.copy(EXAMPLE, root / f"{n}.pcap")
        captures.report([f"{n}.pcap"])
    assert captures.analyses == 20
    captures.report(["19.pcap"])
    assert captures.analyses == 20
    captures.report(["0.pcap"])  # left the cache (16 kept)
    assert captures.analyses == 21


def test_paths_outside_the_root_are_refused(
    root: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    captures = Captures(root / "runs")
    outside = tmp_path_factory.mktemp("elsewhere") / "x.pcap"
    shutil.copy(EXAMPLE, outside)
    (root / "runs" / "link.pcap").symlink_to(outside)
    for path in (str(outside), "../runs/../../x.pcap", "link.pcap", "/etc/passwd"):
        with pytest.raises(PathRefusedError, match="outside the server's root"):
            captures.report([path])
    with pytest.raises(PathRefusedError, match="no such file"):
        captures.report(["nope.pcap"])
    with pytest.raises(PathRefusedError, match="no capture path given"):
        captures.report([])
    with pytest.raises(PathRefusedError, match="outside the server's root"):
        captures.listing("..")


def test_a_key_log_beside_the_capture_decrypts_it(root: Path) -> None:
    captures = Captures(root)
    assert captures.report(["runs/tls.pcap"]).calls() == ()  # no key yet: nothing decrypted
    shutil.copy(TLS / "keylog.txt", root / "runs" / "sslkeys")  # any name: found by content
    report = captures.report(["runs/tls.pcap"])
    assert len(report.calls()) == 5
    assert [s.format for s in report.sources()] == ["pcap", "keylog"]


def test_key_logs_are_recognized_by_their_content() -> None:
    assert is_keylog((TLS / "keylog.txt").read_bytes()[:4096])  # comment line first
    assert is_keylog(b"CLIENT_RANDOM " + b"ab" * 32 + b" " + b"cd" * 48 + b"\n")
    assert not is_keylog(EXAMPLE.read_bytes()[:4096])
    assert not is_keylog(b"# just a comment\n")


def test_the_listing_names_formats(root: Path) -> None:
    shutil.copy(TLS / "keylog.txt", root / "runs" / "keys.log")
    (root / ".hidden").mkdir()
    shutil.copy(EXAMPLE, root / ".hidden" / "h.pcap")
    (root / "notes.txt").write_text("not a capture\n")
    (root / "tool.py").write_text("import json\nprint(json.dumps({}))\n")
    (root / "data.json").write_text('{"a": 1}')
    secrets = ROOT / "tests" / "data" / "secrets"
    shutil.copy(secrets / "h1" / "capture.har", root / "runs" / "x.har")
    shutil.copy(secrets / "h1" / "cassette.yaml", root / "runs" / "x.yaml")
    shutil.copy(CAPTURES / "mcp_stdio_time" / "transcript.jsonl", root / "runs" / "t.jsonl")
    shutil.copy(CAPTURES / "mcp_stdio_time" / "c2s.jsonl", root / "runs" / "c2s.jsonl")
    listed = Captures(root).listing("")
    assert [(f["path"], f["format"]) for f in listed] == [
        ("runs/a.pcap", "pcap"),
        ("runs/c2s.jsonl", "transcript"),
        ("runs/keys.log", "keylog"),
        ("runs/t.jsonl", "transcript"),
        ("runs/tls.pcap", "pcap"),
        ("runs/x.har", "har"),
        ("runs/x.yaml", "vcr"),
    ]
