"""Real multi-turn tool loops from the corpus: each is one agent run, with every tool call the
model asked for before the run went on linked to the request that carried its result (and
to its MCP execution where the cassette holds one). Plus invariants over every cassette."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from agentshark.pipeline import Options, run
from agentshark.trace.collect import Analysis
from agentshark.trace.history import is_model_call
from tests.helpers import CORPUS

PYDANTIC = "pydantic__pydantic-ai/tests/cassettes/"
MODELS = "pydantic__pydantic-ai/tests/models/cassettes/"
AGENTS = (
    "traceloop__openllmetry/packages/opentelemetry-instrumentation-openai-agents/tests/cassettes/"
)

# cassette -> (model calls, tool calls, tool calls executed over MCP in the cassette)
RUNS = {
    PYDANTIC + "test_dbos/test_complex_agent_run_in_workflow.yaml": (3, 4, 0),
    PYDANTIC + "test_temporal/test_complex_agent_run.yaml": (3, 4, 0),
    PYDANTIC + "test_dbos/test_mcp_tools_not_cached_when_disabled.yaml": (3, 4, 0),
    PYDANTIC + "test_mcp/test_agent_run_stream_with_mcp_server_http.yaml": (2, 1, 1),
    PYDANTIC + "test_dbos/test_fastmcp_toolset.yaml": (2, 1, 1),
    MODELS + "test_anthropic/test_anthropic_mixed_strict_tool_run.yaml": (3, 2, 0),
    MODELS
    + "test_openai_responses/"
    + "test_openai_previous_response_id_seed_auto_chains_through_retries.yaml": (4, 2, 0),
    AGENTS + "test_complete_handoff_with_tools/test_router_analytics_complete_workflow.yaml": (
        5,
        4,
        0,
    ),
}


def analyze(path: Path) -> Analysis:
    a = Analysis()
    for _ in a.watch(run([str(path)], Options(calls=True))):
        pass
    a.finish()
    return a


@pytest.mark.parametrize("name", sorted(RUNS))
def test_tool_loop_is_one_run(name: str) -> None:
    models, tools, over_mcp = RUNS[name]
    a = analyze(CORPUS / name)
    model_calls = [c.id for c in a.calls if is_model_call(c)]
    assert len(model_calls) == models
    (trace,) = [t for t in a.traces if any(s.kind == "model" for s in t.spans)]
    assert [s.call_id for s in trace.spans if s.kind == "model"] == model_calls
    assert all(t.spans[0].kind == "agent" and t.spans[0].synthesized for t in a.traces)
    tool_spans = [s for s in trace.spans if s.kind == "tool"]
    assert len(tool_spans) == tools
    continued = {link.previous for link in a.links.values()}
    for span in tool_spans:
        assert span.requested_by in model_calls and span.tool_call_id
        if span.requested_by in continued:  # the run went on: the result was sent back
            assert span.result_in is not None, span.tool_call_id
            assert model_calls.index(span.result_in) > model_calls.index(span.requested_by)
            assert "result" in span.attributes
    executed = [s for s in tool_spans if s.execution is not None]
    assert len(executed) == over_mcp
    for span in executed:
        mcp = next(c for c in a.calls if c.id == span.execution)
        assert mcp.api == "mcp" and mcp.operation == "tools/call"
        assert mcp.id in trace.calls
    assert not [i for i in a.incidents if i.severity == "error"]


@functools.cache
def cassettes() -> list[Path]:
    out = []
    for line in (CORPUS / "manifest.jsonl").read_text().splitlines():
        entry = json.loads(line)
        if entry["format"].startswith(("vcr", "har")) and entry.get("has_tool_calls"):
            out.append(CORPUS / entry["file"])
    return out


# error incidents real traffic does carry, each with what the client did
KNOWN_ERRORS = {
    (
        "test_cross_provider_capability_replay[google-gemini-3-flash-preview-anthropic-"
        "claude-sonnet-4-5].yaml",
        "history.tool_call_altered",
    ): "pydantic-ai, moving the run from Gemini to Anthropic, replays Gemini's load_capability "
    "call 0usajhl5 and adds a search_tools call of its own under the same id 0usajhl5 (seen "
    "once Gemini calls were parsed)",
}


@pytest.mark.skipif(not (CORPUS / "manifest.jsonl").exists(), reason="corpus absent")
def test_every_tool_cassette_gives_consistent_traces() -> None:
    """Over every cassette with tool calls: every call is in exactly one trace, a tool result
    is never before its request, and no error incident fires on traffic real clients sent."""
    assert len(cassettes()) > 300
    errors: list[tuple[str, str]] = []
    for path in cassettes():
        a = analyze(path)
        placed = [cid for t in a.traces for cid in t.calls if not cid.startswith("e")]
        assert sorted(placed) == sorted(c.id for c in a.calls), path
        order = {c.id: n for n, c in enumerate(a.calls)}
        for trace in a.traces:
            for span in trace.spans:
                if span.kind == "tool" and span.result_in and span.requested_by:
                    assert order[span.result_in] > order[span.requested_by], path
        errors.extend((path.name, i.rule) for i in a.incidents if i.severity == "error")
    assert [e for e in errors if e not in KNOWN_ERRORS] == []
    assert set(KNOWN_ERRORS) <= set(errors)
