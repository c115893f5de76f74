"""The Gemini incident rules, on hand-built exchanges and on the corpus cassettes that hold
the failure (a prompt blocked by Model Armor, a finish reason from a filter)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from agentshark.apis.model import Call
from agentshark.apis.registry import recognize
from agentshark.pipeline import Options, run
from agentshark.trace.build import build_traces
from agentshark.trace.collect import Analysis
from agentshark.trace.history import link_history
from agentshark.trace.incidents import find_incidents
from agentshark.trace.model import Incident
from tests.helpers import CORPUS, http_exchange

GOOGLE = "pydantic__pydantic-ai/tests/models/cassettes/test_google/"


def _call(
    contents: list[Any], body: dict[str, Any], started: float, model: str = "gemini-3-pro"
) -> Call:
    url = f"https://generativelanguage.googleapis.com/v1beta/models/{model}:generateContent"
    ex = http_exchange(
        method="POST",
        url=url,
        target=url.split("/", 3)[-1],
        request_body=orjson.dumps({"contents": contents}),
        request_headers=[("content-type", "application/json")],
        response_pieces=[(started + 0.1, orjson.dumps(body))],
        response_headers=[("content-type", "application/json")],
        response_started=started + 0.1,
        response_ended=started + 0.2,
    )
    assert ex.request is not None
    ex.request.started = ex.request.ended = started
    call = recognize(ex, f"c{int(started)}")
    assert call is not None and call.api == "gemini.generate_content"
    return call


def _incidents(*calls: Call) -> list[Incident]:
    links = link_history(list(calls))
    return find_incidents(list(calls), build_traces(list(calls), links), links)


def _answer(parts: list[Any], finish: str = "STOP") -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish}]}


USER = {"role": "user", "parts": [{"text": "what is the weather in Paris?"}]}
SIGNED = {
    "functionCall": {"name": "weather", "args": {"city": "Paris"}},
    "thoughtSignature": "c2ln",
}


def _replay(call_part: dict[str, Any]) -> list[Any]:
    result = {"functionResponse": {"name": "weather", "response": {"result": "sunny"}}}
    return [USER, {"role": "model", "parts": [call_part]}, {"role": "user", "parts": [result]}]


@pytest.mark.parametrize(
    ("model", "severity"), [("gemini-3-pro", "error"), ("gemini-2.5-flash", "warning")]
)
def test_thought_signature_dropped_from_the_replay(model: str, severity: str) -> None:
    first = _call([USER], _answer([SIGNED]), 1.0, model)
    unsigned = {"functionCall": SIGNED["functionCall"]}
    second = _call(_replay(unsigned), _answer([{"text": "sunny"}]), 2.0, model)
    found = [i for i in _incidents(first, second) if i.rule == "gemini.thought_signature_dropped"]
    assert [(i.severity, i.call_id) for i in found] == [(severity, second.id)]
    assert found[0].evidence["dropped_at"] == ["input message 1 part 0"]


def test_thought_signature_kept_in_the_replay_is_no_incident() -> None:
    first = _call([USER], _answer([SIGNED]), 1.0)
    second = _call(_replay(SIGNED), _answer([{"text": "sunny"}]), 2.0)
    assert not [i for i in _incidents(first, second) if i.rule.startswith("gemini.")]


@pytest.mark.parametrize("finish", ["SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST"])
def test_output_blocked_by_a_filter(finish: str) -> None:
    call = _call([USER], _answer([{"text": "Par"}], finish), 1.0)
    (found,) = [i for i in _incidents(call) if i.rule == "gemini.output_blocked"]
    assert found.evidence["finish_reasons"] == [finish]


def test_malformed_function_call() -> None:
    body = {"candidates": [{"content": {}, "finishReason": "MALFORMED_FUNCTION_CALL"}]}
    call = _call([USER], body, 1.0)
    assert [i.rule for i in _incidents(call)] == ["gemini.malformed_function_call"]


def test_max_tokens_is_the_generic_truncation() -> None:
    call = _call([USER], _answer([{"text": "The weather in"}], "MAX_TOKENS"), 1.0)
    assert [i.rule for i in _incidents(call)] == ["output.truncated"]


def test_blocked_prompt_is_an_answer_and_an_incident() -> None:
    body = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 8}}
    call = _call([USER], body, 1.0)
    assert call.complete and call.output_messages == [] and call.error is None
    (found,) = _incidents(call)
    assert found.rule == "gemini.prompt_blocked" and found.evidence["block_reason"] == "SAFETY"


@pytest.mark.skipif(not (CORPUS / GOOGLE).exists(), reason="no corpus")
def test_model_armor_block_in_the_corpus() -> None:
    a = Analysis()
    name = GOOGLE + "test_google_model_armor_prompt_template_text_gets_blocked.yaml"
    for _ in a.watch(run([str(CORPUS / name)], Options(calls=True))):
        pass
    a.finish()
    rules = [(i.rule, i.evidence.get("block_reason")) for i in a.incidents]
    assert ("gemini.prompt_blocked", "MODEL_ARMOR") in rules
