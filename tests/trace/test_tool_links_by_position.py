"""Tool calls without ids (Gemini's ``functionCall``, Ollama's ``tool_calls``) are linked to
their results: through the id the client gave the call in its replay, else by name and
position. Real Gemini agent loops from the corpus, and hand-built exchanges for the rules."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from agentshark.apis.registry import recognize
from agentshark.pipeline import Options, run
from agentshark.trace.build import build_traces
from agentshark.trace.collect import Analysis
from agentshark.trace.history import is_model_call, link_history
from tests.helpers import CORPUS, http_exchange

GOOGLE = "pydantic__pydantic-ai/tests/models/cassettes/test_google/"
# cassette -> (model calls, tool calls, tool calls answered in a later call)
RUNS = {
    GOOGLE + "test_google_model_iter_stream.yaml": (3, 2, 2),
    GOOGLE + "test_google_instructions_only_with_tool_calls.yaml": (5, 7, 6),
    GOOGLE + "test_google_streaming_tool_call_thought_signature.yaml": (2, 1, 1),
}


def _analyze(name: str) -> Analysis:
    a = Analysis()
    for _ in a.watch(run([str(CORPUS / name)], Options(calls=True))):
        pass
    a.finish()
    return a


@pytest.mark.skipif(not (CORPUS / GOOGLE).exists(), reason="no corpus")
@pytest.mark.parametrize("name", sorted(RUNS))
def test_gemini_agent_loop_is_one_trace_with_every_tool_call_linked(name: str) -> None:
    models, tools, answered = RUNS[name]
    a = _analyze(name)
    model_calls = [c.id for c in a.calls if is_model_call(c)]
    assert len(model_calls) == models
    assert all(c.api == "gemini.generate_content" for c in a.calls if c.id in model_calls)
    (trace,) = [t for t in a.traces if any(s.kind == "model" for s in t.spans)]
    assert [s.call_id for s in trace.spans if s.kind == "model"] == model_calls
    spans = [s for s in trace.spans if s.kind == "tool"]
    assert len(spans) == tools
    continued = {link.previous for link in a.links.values()}
    linked = [s for s in spans if s.result_in is not None]
    assert len(linked) == answered
    for span in spans:
        if span.requested_by in continued:
            assert span.result_in is not None
            assert model_calls.index(span.result_in) == model_calls.index(span.requested_by) + 1
    joins = [e["detail"] for e in trace.evidence if e["origin"] == "tool_call"]
    assert joins and all("no id; the client's replay gave it pyd_ai_" in d for d in joins)
    assert not [i for i in a.incidents if i.severity == "error"]


# -- by name and position: a client that replays the calls as the model sent them ------------

_URL = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"


def _call(contents: list[Any], parts: list[Any], started: float) -> Any:
    body = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}]}
    ex = http_exchange(
        method="POST",
        url=_URL,
        target=_URL.split("/", 3)[-1],
        request_body=orjson.dumps({"contents": contents}),
        request_headers=[("content-type", "application/json")],
        response_pieces=[(started + 0.1, orjson.dumps(body))],
        response_headers=[("content-type", "application/json")],
        response_started=started + 0.1,
        response_ended=started + 0.2,
    )
    ex.request.started = ex.request.ended = started  # type: ignore[union-attr]
    call = recognize(ex, f"c{int(started)}")
    assert call is not None and call.api == "gemini.generate_content"
    return call


def _fc(name: str, **args: Any) -> dict[str, Any]:
    return {"functionCall": {"name": name, "args": args}}


def _fr(name: str, value: Any) -> dict[str, Any]:
    return {"functionResponse": {"name": name, "response": {"result": value}}}


def test_id_less_calls_are_joined_by_name_and_position() -> None:
    user = {"role": "user", "parts": [{"text": "weather in Paris and Rome, and the time"}]}
    asked = [_fc("weather", city="Paris"), _fc("clock"), _fc("weather", city="Rome")]
    first = _call([user], asked, 1.0)
    # the results come back in another order: position counts per name
    answers = [_fr("clock", "12:00"), _fr("weather", "sunny"), _fr("weather", "rain")]
    replay = [user, {"role": "model", "parts": asked}, {"role": "user", "parts": answers}]
    second = _call(replay, [{"text": "Paris is sunny, Rome rainy; it is noon."}], 2.0)
    links = link_history([first, second])
    assert links[second.id].previous == first.id and links[second.id].exact
    (trace,) = build_traces([first, second], links)
    spans = [s for s in trace.spans if s.kind == "tool"]
    assert [s.result_in for s in spans] == [second.id] * 3
    got = [s.attributes.get("result") for s in spans]
    assert got == [{"result": "sunny"}, {"result": "12:00"}, {"result": "rain"}]
    details = [e["detail"] for e in trace.evidence if e["origin"] == "tool_call"]
    assert (
        "by name and position: call 1 of weather in c1's output (no id) answered by "
        "result 1 of weather in c2's input" in details
    )


def test_a_missing_result_leaves_the_call_unanswered() -> None:
    user = {"role": "user", "parts": [{"text": "two cities"}]}
    asked = [_fc("weather", city="Paris"), _fc("weather", city="Rome")]
    first = _call([user], asked, 1.0)
    replay = [
        user,
        {"role": "model", "parts": asked},
        {"role": "user", "parts": [_fr("weather", 1)]},
    ]
    second = _call(replay, [{"text": "done"}], 2.0)
    (trace,) = build_traces([first, second], link_history([first, second]))
    spans = [s for s in trace.spans if s.kind == "tool"]
    assert [s.result_in for s in spans] == [second.id, None]
