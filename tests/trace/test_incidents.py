"""Protocol incidents (agentshark.trace.incidents) on real traffic with one mistake injected.

Calls come from the real recognizer: corpus cassettes (a Chat Completions tool loop with
parallel tool calls, an Anthropic tool loop), the MCP loopback capture, and exchanges rebuilt
from those cassettes with one field of the request or response changed. Each rule has a case
that fires and one that does not; traces are built by hand (one trace, a model span per model
call, tool spans as given).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentshark.apis.model import (
    Call,
    CallError,
    GenericPart,
    ReasoningPart,
    Timing,
    ToolCallPart,
    ToolCallResponsePart,
    parse_arguments,
)
from agentshark.apis.registry import recognize
from agentshark.model import Body, Exchange
from agentshark.pipeline import Options
from agentshark.trace.history import is_model_call, link_history
from agentshark.trace.incidents import RULES, find_incidents
from agentshark.trace.model import Incident, Span, Trace
from tests.helpers import CAPTURES, CORPUS, Collected, http_exchange

PYDANTIC_AI = CORPUS / "pydantic__pydantic-ai" / "tests"
# openai.chat (streamed): call1 asks get_country + get_product_name in parallel, call2 answers
# both and asks get_weather {"city": "Mexico City"}, call3 answers it and asks final_result
DBOS = PYDANTIC_AI / "cassettes" / "test_dbos" / "test_complex_agent_run_in_workflow.yaml"
# anthropic.messages: call1 asks country_source, call2 capital_lookup, call3 answers
ANTHROPIC = (
    PYDANTIC_AI / "models/cassettes/test_anthropic/test_anthropic_mixed_strict_tool_run.yaml"
)
# openai.chat via Hugging Face: finish_reason "length" at max_tokens 100
TRUNCATED = PYDANTIC_AI / "models/cassettes/test_huggingface/test_max_completion_tokens.yaml"
# MCP over Streamable HTTP: tools/list offers get_weather, divide, count_with_progress;
# call6 is tools/call no_such_tool
MCP = CAPTURES / "mcp_http_plain" / "capture.pcap"
SMOKE_DIR = PYDANTIC_AI / "models" / "cassettes"
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@functools.cache
def _collected(path: Path) -> Collected:
    return Collected([str(path)], Options(calls=True))


def calls_of(path: Path) -> list[Call]:
    """Fresh copies: tests mutate them."""
    return copy.deepcopy(_collected(path).calls)


def exchange_of(path: Path, exchange_id: str) -> Exchange:
    found = [x for x in _collected(path).exchanges if x.id == exchange_id]
    assert len(found) == 1
    return copy.deepcopy(found[0])


def reparse(
    path: Path,
    exchange_id: str,
    call_id: str,
    *,
    request: Callable[[dict[str, Any]], None] | None = None,
    response: Callable[[dict[str, Any]], None] | None = None,
    response_body: bytes | None = None,
    status: int | None = None,
    cut: bool = False,
    headers: list[tuple[str, str]] | None = None,
) -> Call:
    """A cassette's exchange with its request or response JSON edited (or the response
    body replaced, or cut in half), run through the real recognizer again."""
    x = exchange_of(path, exchange_id)
    assert x.request is not None and x.response is not None
    if request is not None:
        body = orjson.loads(b"".join(p for _, p in x.request.body.pieces))
        request(body)
        x.request.body = Body(pieces=[(0.0, orjson.dumps(body))])
    if headers is not None:
        x.request.headers = [*x.request.headers, *headers]
    data = b"".join(p for _, p in x.response.body.pieces)
    if response is not None:
        body = orjson.loads(data)
        response(body)
        data = orjson.dumps(body)
    if response_body is not None:
        data = response_body
    if cut:
        data = data[: len(data) // 2]
        x.response.complete = False
    x.response.body = Body(pieces=[(0.0, data)])
    if status is not None:
        x.response.status = status
    call = recognize(x, call_id)
    assert call is not None
    return call


def one_trace(calls: list[Call], tool_spans: list[Span] | None = None) -> Trace:
    """One trace holding ``calls``: an agent span, a model span per model call, and the
    tool spans given."""
    spans = [
        Span(
            span_id="a",
            parent_id=None,
            kind="agent",
            name="invoke_agent",
            started=None,
            ended=None,
            synthesized=True,
        )
    ]
    spans.extend(
        Span(
            span_id=f"m-{call.id}",
            parent_id="a",
            kind="model",
            name=f"chat {call.request_model}",
            started=call.timing.started,
            ended=call.timing.ended,
            call_id=call.id,
        )
        for call in calls
        if is_model_call(call)
    )
    spans.extend(tool_spans or [])
    return Trace(
        trace_id="t1",
        origin="history",
        trace_id_source="generated",
        spans=spans,
        calls=[c.id for c in calls],
    )


def tool_span(span_id: str, tool_call_id: str, execution: str | None, requested_by: str) -> Span:
    return Span(
        span_id=span_id,
        parent_id="a",
        kind="tool",
        name="execute_tool get_weather",
        started=None,
        ended=None,
        call_id=execution,
        tool_call_id=tool_call_id,
        requested_by=requested_by,
        execution=execution,
        inferred=execution is None,
    )


def run(calls: list[Call], traces: list[Trace] | None = None) -> list[Incident]:
    if traces is None:
        traces = [one_trace(calls)]
    incidents = find_incidents(calls, traces, link_history(calls))
    for i in incidents:
        orjson.dumps(i.to_json())  # the report can always be written
    return incidents


def fired(incidents: list[Incident], rule: str) -> list[Incident]:
    return [i for i in incidents if i.rule == rule]


def renamed(call: Call, new_id: str) -> Call:
    out = copy.deepcopy(call)
    out.id = new_id
    return out


def tool_call(call: Call, *, output: bool, message: int, part: int) -> ToolCallPart:
    messages = call.output_messages if output else call.input_messages
    found = messages[message].parts[part]
    assert isinstance(found, ToolCallPart)
    return found


def tool_result(call: Call, message: int) -> ToolCallResponsePart:
    found = call.input_messages[message].parts[0]
    assert isinstance(found, ToolCallResponsePart)
    return found


def break_arguments(part: ToolCallPart) -> None:
    """The model's arguments string cut before its closing brace."""
    raw = (part.arguments_raw or "")[:-1]
    part.arguments_raw = raw
    part.arguments, part.arguments_error = parse_arguments(raw)


# -- the untouched traffic ---------------------------------------------------------------------


@pytest.mark.parametrize("path", [DBOS, ANTHROPIC])
def test_clean_tool_loops_have_no_incident(path: Path) -> None:
    assert run(calls_of(path)) == []


# -- tool_call.unanswered ----------------------------------------------------------------------


def test_parallel_tool_call_left_unanswered() -> None:
    calls = calls_of(DBOS)
    del calls[1].input_messages[3]  # call2 answers get_country but not get_product_name
    [found] = fired(run(calls), "tool_call.unanswered")
    assert (found.call_id, found.severity, found.trace_id) == ("call2", "error", "t1")
    assert found.evidence["tool_call_id"] == "call_Xw9XMKBJU48kAAd78WgIswDx"
    assert found.evidence["previous_call"] == "call1"
    assert found.evidence["requested_at"] == "output message 0 part 1"
    assert found.evidence["answered_ids"] == ["call_3rqTYrA6H21AYUaRGP4F66oq"]


def test_unanswered_needs_a_continuing_call() -> None:
    calls = calls_of(DBOS)[:1]  # call1 asks two tools; nothing continues it
    assert fired(run(calls), "tool_call.unanswered") == []


# -- tool_result.unknown_id --------------------------------------------------------------------


def test_tool_result_with_unknown_id() -> None:
    calls = calls_of(DBOS)
    tool_result(calls[1], 3).id = "call_bogus"
    incidents = run(calls)
    [found] = fired(incidents, "tool_result.unknown_id")
    assert (found.call_id, found.severity) == ("call2", "error")
    assert found.evidence["at"] == "input message 3 part 0"
    assert found.evidence["path"] == "$.messages[3]"  # no system message shifts the index
    assert found.evidence["tool_call_id"] == "call_bogus"
    assert len(fired(incidents, "tool_call.unanswered")) == 1  # the real id is unanswered


def test_anthropic_tool_result_ids_match() -> None:
    calls = calls_of(ANTHROPIC)
    assert fired(run(calls), "tool_result.unknown_id") == []
    tool_result(calls[2], 4).id = "toolu_nope"
    [found] = fired(run(calls), "tool_result.unknown_id")
    assert found.evidence["path"] == "$.messages[4].content[0]"


# -- tool_call.invalid_arguments ---------------------------------------------------------------


def test_invalid_tool_arguments_reported_with_position() -> None:
    calls = calls_of(DBOS)
    break_arguments(tool_call(calls[1], output=True, message=0, part=0))
    [found] = fired(run(calls[:2]), "tool_call.invalid_arguments")
    assert (found.call_id, found.severity) == ("call2", "warning")
    assert found.evidence["arguments_raw"] == '{"city":"Mexico City"'
    assert "char 21" in found.evidence["arguments_error"]
    assert found.evidence["at"] == "output message 0 part 0"


def test_invalid_arguments_of_a_cut_stream_are_left_to_stream_unfinished() -> None:
    calls = calls_of(DBOS)
    break_arguments(tool_call(calls[1], output=True, message=0, part=0))
    calls[1].complete = False
    incidents = run(calls[:2])
    assert fired(incidents, "tool_call.invalid_arguments") == []
    assert [i.call_id for i in fired(incidents, "stream.unfinished")] == ["call2"]


# -- tool_result.error_not_reported ------------------------------------------------------------


def _invalid_then_answered(response: object, **details: object) -> list[Call]:
    """call2's get_weather arguments are not JSON; call3 replays them and answers."""
    calls = calls_of(DBOS)
    break_arguments(tool_call(calls[1], output=True, message=0, part=0))
    break_arguments(tool_call(calls[2], output=False, message=4, part=0))
    result = tool_result(calls[2], 5)
    result.response = response
    result.provider_details.update(details)
    return calls


def test_result_for_invalid_arguments_without_error() -> None:
    incidents = run(_invalid_then_answered("sunny"))
    [found] = fired(incidents, "tool_result.error_not_reported")
    assert (found.call_id, found.severity) == ("call3", "warning")
    assert found.evidence["tool_call_id"] == "call_Vz0Sie91Ap56nH0ThKGrZXT7"
    assert found.evidence["response"] == "sunny"
    assert found.evidence["path"] == "$.messages[5]"


@pytest.mark.parametrize(
    ("response", "details"),
    [("ERROR: invalid JSON in arguments, please retry", {}), ("sunny", {"is_error": True})],
)
def test_result_reporting_the_error(response: str, details: dict[str, object]) -> None:
    assert (
        fired(run(_invalid_then_answered(response, **details)), "tool_result.error_not_reported")
        == []
    )


# -- output.truncated and retry.after_truncation -----------------------------------------------


def test_truncated_output() -> None:
    [found] = fired(run(calls_of(TRUNCATED)), "output.truncated")
    assert found.evidence["finish_reasons"] == ["length"]
    assert found.evidence["max_tokens"] == 100
    assert fired(run(calls_of(DBOS)), "output.truncated") == []


def test_anthropic_max_tokens_stop_reason() -> None:
    call = reparse(ANTHROPIC, "e3", "call3", response=lambda r: r.update(stop_reason="max_tokens"))
    [found] = fired(run([call]), "output.truncated")
    assert found.evidence["finish_reasons"] == ["max_tokens"]


def test_blind_retry_after_truncation() -> None:
    [first] = calls_of(TRUNCATED)
    incidents = run([first, renamed(first, "retry")])
    [found] = fired(incidents, "retry.after_truncation")
    assert (found.call_id, found.evidence["truncated_call"]) == ("retry", first.id)


def test_retry_with_a_bigger_budget_is_not_blind() -> None:
    [first] = calls_of(TRUNCATED)
    second = renamed(first, "retry")
    second.request_params["max_tokens"] = 1000
    assert fired(run([first, second]), "retry.after_truncation") == []
    [dbos] = calls_of(DBOS)[:1]  # the same request again, after a complete answer
    assert fired(run([dbos, renamed(dbos, "again")]), "retry.after_truncation") == []


# -- stream.unfinished -------------------------------------------------------------------------


def test_cut_stream() -> None:
    call = reparse(DBOS, "e1", "call1", cut=True)
    assert call.stream and not call.complete
    [found] = fired(run([call]), "stream.unfinished")
    assert (found.call_id, found.severity) == ("call1", "warning")
    assert found.evidence["finish_reasons"] == []


def test_whole_stream() -> None:
    call = reparse(DBOS, "e1", "call1")
    assert call.complete
    assert fired(run([call]), "stream.unfinished") == []


# -- output.content_filter ---------------------------------------------------------------------


def test_anthropic_refusal_stop_reason() -> None:
    call = reparse(ANTHROPIC, "e3", "call3", response=lambda r: r.update(stop_reason="refusal"))
    [found] = fired(run([call]), "output.content_filter")
    assert found.evidence["finish_reasons"] == ["refusal"]


def test_chat_refusal_part() -> None:
    [call] = calls_of(DBOS)[:1]
    call.output_messages[0].parts = [GenericPart(type="refusal", fields={"refusal": "I can't."})]
    [found] = fired(run([call]), "output.content_filter")
    assert found.evidence["refusals"] == [{"at": "output message 0 part 0", "text": "I can't."}]
    assert fired(run(calls_of(ANTHROPIC)), "output.content_filter") == []


# -- anthropic.max_tokens_missing --------------------------------------------------------------


def test_anthropic_request_without_max_tokens() -> None:
    error = orjson.dumps(
        {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": "max_tokens: Field required"},
        }
    )
    call = reparse(
        ANTHROPIC,
        "e1",
        "call1",
        request=lambda r: r.pop("max_tokens"),
        response_body=error,
        status=400,
    )
    [found] = fired(run([call]), "anthropic.max_tokens_missing")
    assert (found.severity, found.evidence["status"]) == ("error", 400)
    assert found.evidence["error"] == "max_tokens: Field required"


def test_anthropic_request_with_max_tokens() -> None:
    assert fired(run(calls_of(ANTHROPIC)), "anthropic.max_tokens_missing") == []
    assert fired(run(calls_of(DBOS)), "anthropic.max_tokens_missing") == []  # Chat: optional


# -- history.reasoning_changed -----------------------------------------------------------------


def _thinking(signature: str) -> ReasoningPart:
    return ReasoningPart(
        content="Look the country up first.", provider_details={"signature": signature}
    )


def test_anthropic_thinking_dropped_from_replay() -> None:
    calls = calls_of(ANTHROPIC)
    calls[0].output_messages[0].parts.insert(0, _thinking("sig-1"))
    [found] = fired(run(calls), "history.reasoning_changed")
    assert (found.call_id, found.severity) == ("call2", "warning")
    assert found.evidence["sent"] == {"parts": 1, "signed": 1}
    assert found.evidence["replayed"] == {"parts": 0, "signed": 0}


def test_thinking_replayed_unchanged() -> None:
    calls = calls_of(ANTHROPIC)
    calls[0].output_messages[0].parts.insert(0, _thinking("sig-1"))
    calls[1].input_messages[1].parts.insert(0, _thinking("sig-1"))
    calls[2].input_messages[1].parts.insert(0, _thinking("sig-1"))
    assert fired(run(calls), "history.reasoning_changed") == []


def test_reasoning_dropped_elsewhere_is_info() -> None:
    calls = calls_of(DBOS)
    calls[0].output_messages[0].parts.insert(0, ReasoningPart(content="Two tools at once."))
    [found] = fired(run(calls), "history.reasoning_changed")
    assert (found.call_id, found.severity) == ("call2", "info")


# -- history.tool_call_altered -----------------------------------------------------------------


def test_replayed_tool_call_with_other_arguments() -> None:
    calls = calls_of(DBOS)
    replay = tool_call(calls[2], output=False, message=4, part=0)
    replay.arguments_raw, replay.arguments = '{"city":"Paris"}', {"city": "Paris"}
    incidents = run(calls)
    [found] = fired(incidents, "history.tool_call_altered")
    assert (found.call_id, found.severity) == ("call3", "error")
    assert found.evidence["original_arguments"] == {"city": "Mexico City"}
    assert found.evidence["replayed_arguments"] == {"city": "Paris"}
    assert found.evidence["original_call"] == "call2"
    assert found.evidence["at"] == "input message 4 part 0"
    # the altered replay broke the link to call2 (call3 now only continues call1)
    assert link_history(calls)["call3"].previous == "call1"


def test_replayed_tool_call_reformatted_is_not_altered() -> None:
    calls = calls_of(DBOS)
    tool_call(calls[2], output=False, message=4, part=0).arguments_raw = '{ "city": "Mexico City" }'
    assert fired(run(calls), "history.tool_call_altered") == []


# -- retry.no_backoff --------------------------------------------------------------------------


def _failed_then_retried(
    gap: float, message: str = "Rate limited", status: int = 429
) -> list[Call]:
    [first] = calls_of(ANTHROPIC)[:1]
    first.error = CallError(
        status=status, type="rate_limit_error", code=None, message=message, source="http"
    )
    first.output_messages, first.finish_reasons = [], []
    first.timing = Timing(started=10.0, ended=10.2)
    second = renamed(first, "retry")
    second.error = None
    second.timing = Timing(started=10.2 + gap, ended=12.0 + gap)
    return [first, second]


@pytest.mark.parametrize("status", [429, 529])
def test_immediate_retry_after_429_or_5xx(status: int) -> None:
    [found] = fired(run(_failed_then_retried(0.05, status=status)), "retry.no_backoff")
    assert (found.call_id, found.evidence["failed_call"]) == ("retry", "call1")
    assert found.evidence["gap_seconds"] == 0.05
    assert found.evidence["threshold_seconds"] == 1.0


def test_retry_after_backing_off() -> None:
    assert fired(run(_failed_then_retried(2.0)), "retry.no_backoff") == []
    assert fired(run(_failed_then_retried(0.05, status=400)), "retry.no_backoff") == []


def test_retry_sooner_than_the_server_asked() -> None:
    calls = _failed_then_retried(2.0, message="Rate limit reached. Please try again in 5s.")
    [found] = fired(run(calls), "retry.no_backoff")
    assert found.evidence["threshold_seconds"] == 5.0


# -- trace_context.invalid_traceparent ---------------------------------------------------------


def test_invalid_traceparent_header() -> None:
    bad = TRACEPARENT.upper()[:3] + TRACEPARENT[3:].upper()
    call = reparse(DBOS, "e1", "call1", headers=[("traceparent", bad)])
    [found] = fired(run([call]), "trace_context.invalid_traceparent")
    assert found.evidence["found_in"] == "request header traceparent"
    assert "uppercase" in found.evidence["problem"]


def test_valid_traceparent_header() -> None:
    call = reparse(DBOS, "e1", "call1", headers=[("traceparent", TRACEPARENT)])
    assert call.ids["traceparent"] == TRACEPARENT
    assert fired(run([call]), "trace_context.invalid_traceparent") == []


# -- MCP: tool_call.executed_twice, mcp.tool_not_listed, mcp.no_response -----------------------

needs_mcp = pytest.mark.skipif(not MCP.exists(), reason="shared captures absent")


def mcp_call(call_id: str) -> Call:
    [found] = [c for c in calls_of(MCP) if c.id == call_id]
    return found


@needs_mcp
def test_tool_span_executed_twice() -> None:
    model = calls_of(DBOS)[1]  # asks get_weather once
    weather = mcp_call("call4")
    again = renamed(weather, "call4b")
    calls = [model, weather, again]
    spans = [
        tool_span("t1", "call_Vz0", "call4", "call2"),
        tool_span("t2", "call_Vz0", "call4b", "call2"),
    ]
    [found] = fired(run(calls, [one_trace(calls, spans)]), "tool_call.executed_twice")
    assert (found.call_id, found.evidence["executions"]) == ("call4b", ["call4", "call4b"])
    calls, spans = calls[:2], spans[:1]
    assert fired(run(calls, [one_trace(calls, spans)]), "tool_call.executed_twice") == []


@needs_mcp
def test_mcp_tools_call_repeated_after_one_request() -> None:
    model = calls_of(DBOS)[1]
    asked = tool_call(model, output=True, message=0, part=0)
    asked.arguments, asked.arguments_raw = {"city": "Paris"}, '{"city": "Paris"}'
    weather = mcp_call("call4")  # get_weather {"city": "Paris"}
    calls = [model, weather, renamed(weather, "call4b")]
    [found] = fired(run(calls), "tool_call.executed_twice")
    assert found.evidence["executions"] == ["call4", "call4b"]
    # the model asked for it twice: two executions are right
    model.output_messages[0].parts.append(dataclasses.replace(asked, id="call_2nd"))
    assert fired(run(calls), "tool_call.executed_twice") == []


def test_same_tool_same_arguments_three_times() -> None:
    model = calls_of(DBOS)[1]  # asks get_weather {"city": "Mexico City"}
    calls = [renamed(model, f"m{i}") for i in range(3)]
    [found] = fired(run(calls), "tool_call.repeated")
    assert (found.call_id, found.evidence["calls"]) == ("m2", ["m0", "m1", "m2"])
    assert fired(run(calls[:2]), "tool_call.repeated") == []
    assert fired(run(calls, []), "tool_call.repeated") == []  # only within a trace


@needs_mcp
def test_mcp_tool_never_listed() -> None:
    calls = calls_of(MCP)
    [found] = fired(run(calls, []), "mcp.tool_not_listed")
    assert (found.call_id, found.evidence["tool_name"]) == ("call6", "no_such_tool")
    assert found.evidence["listed"] == ["count_with_progress", "divide", "get_weather"]
    unlisted = [c for c in calls if c.operation != "tools/list"]
    assert fired(run(unlisted, []), "mcp.tool_not_listed") == []  # nothing to compare with


def _mcp_exchange(message: dict[str, Any], *, answered: bool) -> Exchange:
    reply = b'{"jsonrpc":"2.0","id":7,"result":{"content":[],"isError":false}}'
    return http_exchange(
        method="POST",
        url="http://127.0.0.1:18080/mcp",
        target="/mcp",
        request_body=orjson.dumps(message),
        request_headers=[
            ("content-type", "application/json"),
            ("Mcp-Session-Id", "s-1"),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
        response_pieces=[(1.0, reply)] if answered else None,
        response_headers=[("content-type", "application/json")],
    )


def test_mcp_request_without_response() -> None:
    request = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "get_weather", "arguments": {"city": "Paris"}},
    }
    call = recognize(_mcp_exchange(request, answered=False), "c1")
    assert call is not None
    [found] = fired(run([call], []), "mcp.no_response")
    assert (found.evidence["method"], found.evidence["jsonrpc_id"]) == ("tools/call", "7")
    answered = recognize(_mcp_exchange(request, answered=True), "c2")
    notification = recognize(
        _mcp_exchange({"jsonrpc": "2.0", "method": "notifications/initialized"}, answered=False),
        "c3",
    )
    assert answered is not None and notification is not None
    assert fired(run([answered, notification], []), "mcp.no_response") == []


# -- order and the corpus ----------------------------------------------------------------------


def test_order_is_by_call_then_rule() -> None:
    calls = calls_of(DBOS)
    del calls[1].input_messages[3]
    tool_result(calls[1], 2).id = "call_bogus"  # call2: unknown id and two unanswered
    calls[0].finish_reasons = ["length"]
    incidents = run(calls)
    ranks = {rule.__name__: n for n, rule in enumerate(RULES)}
    assert [(i.call_id, i.rule) for i in incidents] == [
        ("call1", "output.truncated"),
        ("call2", "tool_call.unanswered"),
        ("call2", "tool_call.unanswered"),
        ("call2", "tool_result.unknown_id"),
    ]
    assert ranks["tool_call_unanswered"] < ranks["tool_result_unknown_id"]
    assert run(calls) == incidents


def test_corpus_smoke(capsys: pytest.CaptureFixture[str]) -> None:
    """Over every pydantic-ai model cassette: never raises, prints nothing, and finds
    no tool-loop error in traffic that real providers accepted."""
    paths = sorted(SMOKE_DIR.rglob("*.yaml"))
    assert len(paths) > 100
    rules: set[str] = set()
    for path in paths:
        calls = _collected(path).calls
        for found in find_incidents(calls, [], link_history(calls)):
            assert found.call_id in {c.id for c in calls}
            rules.add(found.rule)
    assert not rules & {
        "tool_call.unanswered",
        "tool_result.unknown_id",
        "history.tool_call_altered",
    }
    assert capsys.readouterr() == ("", "")
