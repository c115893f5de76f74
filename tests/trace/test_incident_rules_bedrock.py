"""Bedrock's own incidents (trace/incident_rules_bedrock.py) and a Bedrock Converse tool loop
from the corpus as one run, each tool call linked to its result by ``toolUseId``."""

from __future__ import annotations

import json

import pytest

from agentshark.apis.model import Call
from agentshark.apis.registry import recognize
from agentshark.trace.history import is_model_call, link_history
from agentshark.trace.incidents import find_incidents
from agentshark.trace.model import Incident
from tests.apis.bedrock import frames
from tests.helpers import CORPUS
from tests.trace.test_corpus_runs import analyze

_STRICT = "pydantic__pydantic-ai/tests/models/bedrock/cassettes/test_strict_tool_calls/"
_GUARD = (
    "traceloop__openllmetry/packages/opentelemetry-instrumentation-bedrock/tests/metrics/"
    "cassettes/test_bedrock_guardrails_metrics/"
)


def incidents(call: Call) -> list[Incident]:
    return [
        i for i in find_incidents([call], [], link_history([call])) if i.rule.startswith("bedrock.")
    ]


def converse(response: object, *, status: int = 200, request: object = None) -> Call:
    x = frames.exchange(
        "/model/m/converse",
        request or {"messages": []},
        json.dumps(response).encode(),
        status=status,
    )
    call = recognize(x, "c1")
    assert call is not None
    return call


def stop(reason: str, **extra: object) -> dict[str, object]:
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": "x"}]}},
        "stopReason": reason,
        **extra,
    }


def test_guardrail_intervened_names_the_guardrail_and_its_actions() -> None:
    trace = {
        "guardrail": {
            "outputAssessments": {
                "g1": [
                    {
                        "sensitiveInformationPolicy": {
                            "piiEntities": [
                                {"action": "ANONYMIZED", "match": "Tokyo", "type": "ADDRESS"},
                                {"action": "NONE", "type": "NAME"},
                            ]
                        }
                    }
                ]
            }
        }
    }
    request = {
        "messages": [],
        "guardrailConfig": {"guardrailIdentifier": "g1", "guardrailVersion": "1"},
    }
    (found,) = incidents(converse(stop("guardrail_intervened", trace=trace), request=request))
    assert (found.rule, found.severity) == ("bedrock.guardrail_intervened", "warning")
    assert found.evidence["guardrail"] == {"guardrailIdentifier": "g1", "guardrailVersion": "1"}
    assert found.evidence["actions"] == [
        {
            "path": "$.outputAssessments.g1[0].sensitiveInformationPolicy.piiEntities[0]",
            "action": "ANONYMIZED",
            "type": "ADDRESS",
            "match": "Tokyo",
        }
    ]


def test_content_filtered_and_context_window() -> None:
    (filtered,) = incidents(converse(stop("content_filtered")))
    assert filtered.rule == "bedrock.content_filtered"
    (full,) = incidents(converse(stop("model_context_window_exceeded")))
    assert (full.rule, full.severity) == ("bedrock.model_context_window_exceeded", "warning")
    rejected = converse({"message": "Input is too long for requested model."}, status=400)
    (too_long,) = incidents(rejected)
    assert (too_long.rule, too_long.severity) == ("bedrock.model_context_window_exceeded", "error")
    assert too_long.evidence["error"]["status"] == 400
    assert (
        incidents(converse({"message": "The provided model identifier is invalid."}, status=400))
        == []
    )
    assert incidents(converse(stop("end_turn"))) == []


@pytest.mark.parametrize(
    ("name", "advice"),
    [("throttlingException", "back off"), ("modelStreamErrorException", "failed")],
)
def test_stream_exception(name: str, advice: str) -> None:
    body = frames.event("messageStart", {"role": "assistant"}) + frames.exception(name, "no")
    x = frames.exchange(
        "/model/m/converse-stream",
        {"messages": []},
        body,
        content_type="application/vnd.amazon.eventstream",
    )
    call = recognize(x, "c1")
    assert call is not None
    (found,) = incidents(call)
    assert (found.rule, found.severity) == ("bedrock.stream_exception", "error")
    assert found.evidence["error"]["type"] == name and advice in found.message


@pytest.mark.skipif(not CORPUS.exists(), reason="no corpus")
def test_guardrail_corpus_cassettes() -> None:
    for name in ("test_titan_converse_guardrail.yaml", "test_titan_invoke_stream_guardrail.yaml"):
        a = analyze(CORPUS / _GUARD / name)
        assert [i.rule for i in a.incidents if i.rule.startswith("bedrock.")] == [
            "bedrock.guardrail_intervened"
        ]


@pytest.mark.skipif(not CORPUS.exists(), reason="no corpus")
@pytest.mark.parametrize(
    ("name", "models", "tools"),
    [
        ("test_bedrock_mixed_strict_tool_run.yaml", 3, 2),
        ("test_bedrock_strict_tool_supported_model.yaml", 2, 1),
    ],
)
def test_converse_tool_loop_is_one_run(name: str, models: int, tools: int) -> None:
    a = analyze(CORPUS / _STRICT / name)
    model_calls = [c.id for c in a.calls if is_model_call(c)]
    assert len(model_calls) == models
    assert {c.api for c in a.calls} == {"bedrock.converse"}
    (trace,) = a.traces
    assert [s.call_id for s in trace.spans if s.kind == "model"] == model_calls
    tool_spans = [s for s in trace.spans if s.kind == "tool"]
    assert len(tool_spans) == tools
    for span in tool_spans:  # linked by toolUseId, the result sent in the next request
        assert span.tool_call_id is not None and span.tool_call_id.startswith("tooluse_")
        assert span.result_in is not None and span.requested_by is not None
        assert model_calls.index(span.result_in) == model_calls.index(span.requested_by) + 1
    # history replay: every later call continues the one before it
    assert [a.links[c].previous for c in model_calls[1:]] == model_calls[:-1]
    assert not [i for i in a.incidents if i.severity == "error"]
