"""``serve --live``: a capture written while it is shown; the end equals the finished file's."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from agentshark.output.serve import FileSource
from agentshark.output.serve_live import LiveSource
from tests.faults.pcapfile import pcap_bytes, read_capture
from tests.helpers import ROOT

EXAMPLE = ROOT / "examples" / "agent_chat.pcap"


def _wait(source: LiveSource, done: Any, seconds: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        index = source.index()
        if done(index):
            return index
        time.sleep(0.1)
    raise AssertionError(f"not reached in {seconds} s: {source.index().get('summary')}")


def test_a_growing_pcap_is_shown_as_it_grows(tmp_path: Path) -> None:
    capture = read_capture(EXAMPLE)
    records = capture.records
    path = tmp_path / "growing.pcap"
    half = len(records) // 2
    path.write_bytes(pcap_bytes(capture, records[:half]))
    whole = FileSource([str(EXAMPLE)], [], max_body=64 << 20, redact=True).index()
    total = whole["summary"]["calls"]
    source = LiveSource([str(path)], [], max_body=64 << 20, redact=True)
    try:
        first = _wait(source, lambda i: i["summary"]["calls"] > 0)
        assert first["live"] is True and first["summary"]["calls"] < total
        version = first["version"]
        path.write_bytes(pcap_bytes(capture, records))  # the rest written
        last = _wait(source, lambda i: i["summary"]["calls"] == total)
        assert last["version"] > version
    finally:
        source.close()
    final = source.index()
    assert final["live"] is False
    keys = ("traces", "calls", "incidents", "errors")
    assert {k: final["summary"][k] for k in keys} == {k: whole["summary"][k] for k in keys}
    assert source.trace(0) is not None and source.trace(10_000) is None
