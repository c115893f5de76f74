"""The projection of the report for the viewer, and the page that carries it."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
from pathlib import Path
from typing import Any

from agentshark.output.html_report import write_html
from agentshark.output.viewer_data import idle_gaps, project
from agentshark.output.viewer_run import build

ROOT = Path(__file__).resolve().parents[3]
SHENZHEN = ROOT / "tests" / "data" / "runs" / "seed004_shenzhen"


def _span(kind: str, start: float | None, end: float | None) -> dict[str, Any]:
    return {"kind": kind, "started": start, "ended": end}


def test_idle_gaps_are_the_time_no_call_or_tool_ran() -> None:
    spans = [
        _span("agent", 0.0, 10.0),  # the agent span covers everything: never busy by itself
        _span("model", 0.0, 2.0),
        _span("tool", 1.5, 3.0),  # overlaps the model call: no gap between them
        _span("model", 5.0, 6.0),
        _span("tool", 6.0, 6.5),  # touching: no gap
        _span("model", 9.0, None),  # not ended: no interval
        _span("model", 8.0, 8.5),
    ]
    assert idle_gaps(spans) == [[3.0, 5.0], [6.5, 8.0]]
    assert idle_gaps([_span("agent", 0.0, 1.0)]) == []


def test_shenzhen_projection() -> None:
    truth = json.loads((SHENZHEN / "truth.json").read_text())
    data = build([str(SHENZHEN / "capture.pcap")]).data
    index = data.index
    assert index["summary"]["traces"] == 1
    assert index["summary"]["calls"] == len(truth["model_requests"])
    assert index["summary"]["exchanges"] == truth["http_exchange_count"]
    assert index["summary"]["not_understood"] == []
    (trace,) = index["traces"]
    assert trace["prompt"] == truth["user"]
    assert [c["trace"] for c in index["calls"]] == [0, 0]
    (detail,) = data.traces
    tool = next(s for s in detail["trace"]["spans"] if s["kind"] == "tool")
    assert tool["tool_call_id"] == truth["tool_executions"][0]["tool_call_id"]
    # the tool's own HTTP exchange comes with the trace, with its raw body
    execution = detail["exchanges"][tool["execution"]]
    assert execution["request"]["method"] == truth["tool_executions"][0]["method"]
    body = detail["raw"][tool["execution"]]["response"]["text"]
    assert json.loads(body) == truth["tool_executions"][0]["result"]
    # idle gaps: model call 1 ends, the tool starts later (the agent read the answer)
    assert detail["gaps"] and all(b > a for a, b in detail["gaps"])


def test_a_call_in_no_trace_is_shown_in_its_own_group() -> None:
    call = {
        "id": "call1",
        "exchange_id": "e1",
        "api": "openai.chat",
        "request_model": "m",
        "timing": {"started": 1.0, "ended": 2.0},
        "error": {"status": 500, "type": None, "code": None, "message": "boom"},
    }
    data = project({"calls": [call], "traces": [], "exchanges": [], "incidents": []})
    (row,) = data.index["traces"]
    assert row["trace_id"] is None and row["calls"] == ["call1"] and row["errors"] == 1
    (span,) = data.traces[0]["trace"]["spans"]
    assert span["view_only"] is True and span["call_id"] == "call1"
    assert data.index["calls"][0]["error"] == "500 boom"
    assert data.index["summary"]["traces"] == 0  # a group, not a trace of the report


def test_page_blocks_and_policy() -> None:
    data = build([str(SHENZHEN / "capture.pcap")]).data
    out = io.BytesIO()
    write_html(data, out, title="t <b>")
    page = out.getvalue().decode()
    assert "<title>t &lt;b&gt;</title>" in page
    blocks = re.findall(r'<script type="application/json" id="([^"]+)">(.*?)</script>', page)
    assert [name for name, _ in blocks] == ["agentshark-index", "agentshark-trace-0"]
    assert json.loads(blocks[0][1]) == json.loads(json.dumps(data.index))
    (script,) = re.findall(r"<script>(.*?)</script>", page, re.S)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert policy is not None
    assert f"script-src 'sha256-{digest}'" in policy.group(1)
    assert "default-src 'none'" in policy.group(1)
