"""Shared by the OTLP tests: run ``export otlp`` in process, read what it wrote."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentshark.cli import main
from tests.helpers import CORPUS, ROOT

RUNS = ROOT / "tests" / "data" / "runs"
SHENZHEN = RUNS / "seed004_shenzhen" / "capture.pcap"
SEED000 = {
    name: RUNS / name / "capture.pcap"
    for name in (
        "seed000_chat_http_traceparent",
        "seed000_chat_mcp_stream",
        "seed000_responses_http",
    )
}
PYDANTIC = CORPUS / "pydantic__pydantic-ai" / "tests" / "cassettes"
TOOL_LOOP = PYDANTIC / "test_dbos" / "test_complex_agent_run_in_workflow.yaml"
MCP_LOOP = PYDANTIC / "test_mcp" / "test_agent_run_stream_with_mcp_server_http.yaml"


def truth(name: str) -> Any:
    return json.loads((RUNS / name / "truth.json").read_text())


def export(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["export", "otlp", *argv, "--no-progress"])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def attributes(items: list[dict[str, Any]]) -> dict[str, Any]:
    """An OTLP JSON KeyValue list as a plain dict, read without the proto (arrays as lists,
    int64 strings as ints)."""
    return {kv["key"]: plain(kv["value"]) for kv in items}


def plain(value: dict[str, Any]) -> Any:
    (kind, inner), *rest = value.items()
    assert not rest
    if kind == "arrayValue":
        return [plain(v) for v in inner.get("values", [])]
    if kind == "intValue":
        assert isinstance(inner, str)  # int64 as a decimal string
        return int(inner)
    if kind == "kvlistValue":
        return attributes(inner.get("values", []))
    return inner


def spans_of_lines(text: str) -> list[dict[str, Any]]:
    """Every span of an OTLP JSON Lines text, its attributes as a dict."""
    return [
        {**span, "attributes": attributes(span.get("attributes", []))}
        for line in text.splitlines()
        for rs in json.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
    ]
