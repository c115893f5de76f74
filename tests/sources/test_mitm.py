"""mitmproxy flow files as an input of every command: ``tests/data/mitm/openai.mitm`` was
written by a real ``mitmdump -w`` run (``scripts/make_mitm_flows.py``) in front of the openai
SDK; its ``truth.json`` is what the SDK returned."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from agentshark.pipeline import Options, SourceReport, run
from agentshark.sources.detect import SNIFF_BYTES, sniff_format
from agentshark.sources.mitm import is_flow_file
from tests.helpers import ROOT
from tests.proxy.harness import agentshark, needs_mitmproxy

FLOWS = ROOT / "tests" / "data" / "mitm" / "openai.mitm"
TRUTH: list[dict[str, Any]] = json.loads((FLOWS.parent / "truth.json").read_text())["calls"]


def test_a_flow_file_is_known_by_its_first_bytes() -> None:
    head = FLOWS.read_bytes()[:SNIFF_BYTES]
    assert sniff_format(head) == "mitm"
    assert not is_flow_file(b"12:hello world")
    assert sniff_format(b"interactions:\n- request: {}\n") == "text"
    assert sniff_format(b'{"log": {"entries": []}}') == "json"


def test_without_mitmproxy_a_flow_file_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mitmproxy", None)
    (report,) = list(run([str(FLOWS)], Options(calls=True)))
    assert isinstance(report, SourceReport) and report.format == "mitm"
    (diagnostic,) = report.diagnostics
    assert diagnostic.code == "source.unsupported"
    assert "mitmproxy flow file" in diagnostic.message
    assert "pip install 'agentshark[proxy]'" in diagnostic.message


def _text(call: dict[str, Any]) -> str:
    parts = [p for m in call["output_messages"] for p in m["parts"] if p["type"] == "text"]
    return "".join(p["content"] for p in parts)


@needs_mitmproxy
def test_the_calls_of_a_flow_file_are_what_the_sdk_saw() -> None:
    done = agentshark("analyze", str(FLOWS), "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["sources"][0]["format"] == "mitm"
    # the SDK opened a second connection for its third call (as the flows say)
    assert [e["connection"] for e in report["exchanges"]] == ["m1", "m1", "m2"]
    assert all(e["complete"] and e["transport"] == "http/1.1" for e in report["exchanges"])
    calls = report["calls"]
    assert [c["stream"] for c in calls] == [t["stream"] for t in TRUTH]
    assert all(c["complete"] for c in calls)
    assert calls[0]["response_id"] == TRUTH[0]["id"]
    assert [_text(c) for c in calls[:2]] == [TRUTH[0]["text"], TRUTH[1]["text"]]
    assert calls[2]["finish_reasons"] == [TRUTH[2]["finish_reason"]]
    (part,) = [p for m in calls[2]["output_messages"] for p in m["parts"]]
    assert [part["id"], part["name"], part["arguments"]] == TRUTH[2]["tool_call"]
    assert len(report["traces"]) >= 1


@needs_mitmproxy
def test_a_followed_flow_file_is_read_when_it_ends() -> None:
    done = agentshark("calls", "--follow", "--until", "1", str(FLOWS), "--format", "json")
    assert done.returncode == 0, done.stderr
    updates = [json.loads(line) for line in done.stdout.splitlines()]
    calls = [u["call"] for u in updates if u["update"] == "call"]
    assert [c["stream"] for c in calls] == [t["stream"] for t in TRUTH]
    (source,) = [u["source"] for u in updates if u["update"] == "source"]
    assert source["format"] == "mitm"
