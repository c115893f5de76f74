"""Plain HTTP tool executions described by what they are (:mod:`agentshark.trace.routes`):
the route template's id kinds by hand, and the seed 004 agent run (an openai-SDK agent whose
tool is a weather REST API; scripts/make_agent_runs.py) against its truth.json, in the trace
and in the OTLP export."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import agentshark.pipeline
from agentshark.trace.collect import Analysis
from agentshark.trace.routes import http_execution, route_template, segment_kind
from tests.helpers import ROOT
from tests.output.otlp.helpers import export, spans_of_lines

RUN = ROOT / "tests" / "data" / "runs" / "seed004_shenzhen"


@pytest.mark.parametrize(
    ("segment", "kind"),
    [
        ("3f2a9c1e-1111-4222-8333-444455556666", "uuid"),
        ("8812", "id"),
        ("5d41402abc4b2a76b9719d911017c592", "hash"),  # MD5 of "hello"
        ("507f1f77bcf86cd799439011", "hash"),  # a MongoDB ObjectId
        ("01ARZ3NDEKTSV4RRFFQ69G5FAV", "token"),  # a ULID
        ("cus_9s6XKzkNRiz8i3JkLmNo", "token"),
        ("weather", None),
        ("deadbeefdeadbeef", None),  # hex-looking word, no digit
        ("2024-05-01", None),
        ("v1", None),
        ("abcdefghijklmnopqrstuvwxyz", None),
        ("chat_completions_streaming", None),
    ],
)
def test_segment_kinds(segment: str, kind: str | None) -> None:
    assert segment_kind(segment) == kind


def test_route_template_keeps_the_rest_as_sent() -> None:
    path = "/v1/users/8812/orders/3f2a9c1e-1111-4222-8333-444455556666/items/"
    assert route_template(path) == "/v1/users/{id}/orders/{uuid}/items/"
    assert route_template("/files/%35%35") == "/files/{id}"  # percent-decoded before judging
    assert route_template("/") == "/"


def test_http_execution_fields() -> None:
    got = http_execution("POST", "http://h/notes/42?x=1", 201, b'{"text": "hi"}')
    assert got == {
        "method": "POST",
        "path": "/notes/42",
        "route": "/notes/{id}",
        "status": 201,
        "request_json": {"text": "hi"},
    }
    cut = http_execution("POST", "http://h/notes", None, b'{"text": "h')
    # no response, a cut body: absent
    assert cut == {"method": "POST", "path": "/notes", "route": "/notes"}


def test_seed004_tool_span_says_what_the_request_was(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    truth = json.loads((RUN / "truth.json").read_text())
    (sent,) = truth["tool_executions"]
    analysis = Analysis()
    options = agentshark.pipeline.Options(calls=True)
    for _ in analysis.watch(agentshark.pipeline.run([str(RUN / "capture.pcap")], options)):
        pass
    analysis.finish()
    (tool,) = [s for t in analysis.traces for s in t.spans if s.kind == "tool"]
    assert tool.tool_call_id == sent["tool_call_id"]
    assert tool.attributes["http"] == {
        "method": sent["method"],
        "path": urlsplit(sent["url"]).path,
        "route": urlsplit(sent["url"]).path,
        "status": sent["status"],
    }
    out = tmp_path / "spans.jsonl"
    code, _ = export(capsys, str(RUN / "capture.pcap"), "-o", str(out))
    assert code == 0
    (span,) = [s for s in spans_of_lines(out.read_text()) if s["name"].startswith("execute_tool")]
    assert span["attributes"]["url.template"] == "/weather"
    assert span["attributes"]["http.request.method"] == "GET"
