"""Chaining stateless model calls by their replayed history (agentshark.trace.history).

Calls come from the real recognizer run on corpus cassettes; the expected chains were read
off the cassettes by hand (each request's history against the previous response).
"""

from __future__ import annotations

import copy
from pathlib import Path

from agentshark.apis.model import Call, Message, ReasoningPart, TextPart, Timing, ToolCallPart
from agentshark.pipeline import Options
from agentshark.trace.history import HistoryLink, is_model_call, link_history, message_key
from tests.helpers import CORPUS, Collected

PYDANTIC_AI = CORPUS / "pydantic__pydantic-ai" / "tests"
LLM = CORPUS / "simonw__llm" / "tests" / "cassettes"
# openai.chat, pydantic-ai tool loop: get_country + get_product_name, then get_weather, then
# final_result; each request replays the one before.
DBOS = PYDANTIC_AI / "cassettes" / "test_dbos" / "test_complex_agent_run_in_workflow.yaml"
# anthropic.messages tool loop, three calls
ANTHROPIC = (
    PYDANTIC_AI / "models/cassettes/test_anthropic/test_anthropic_mixed_strict_tool_run.yaml"
)
# anthropic.messages: call1 stops with pause_turn, call2 sends the paused turn back as is
PAUSE = PYDANTIC_AI / "models/cassettes/test_anthropic/test_pause_turn_web_search_vcr.yaml"
# openai.responses with previous_response_id: each request names the response before
PREVIOUS = (
    PYDANTIC_AI / "models/cassettes/test_openai_responses"
    "/test_openai_previous_response_id_seed_auto_chains_through_retries.yaml"
)
# openai.responses, stateless (store=false): reasoning items with encrypted_content replayed,
# tool-call arguments re-serialized by the client ({"population": 123124} with a space)
ENCRYPTED = LLM / "test_openai_responses/test_responses_round_trips_encrypted_reasoning.yaml"
SMOKE_DIR = PYDANTIC_AI / "models" / "cassettes"


def calls_of(path: Path) -> list[Call]:
    return Collected([str(path)], Options(calls=True)).calls


def chain(links: dict[str, HistoryLink]) -> dict[str, tuple[str, str]]:
    return {cid: (link.previous, link.origin) for cid, link in sorted(links.items())}


# -- corpus chains ----------------------------------------------------------------------------


def test_chat_tool_loop() -> None:
    calls = calls_of(DBOS)
    links = link_history(calls)
    assert chain(links) == {"call2": ("call1", "history"), "call3": ("call2", "history")}
    assert links["call2"] == HistoryLink(
        previous="call1",
        origin="history",
        evidence="input messages 0-1 equal call1's input (0) and output (1)",
        matched_messages=2,
        exact=True,
        reasoning_changed=False,
    )
    assert links["call3"].matched_messages == 5  # user, assistant, tool x2, assistant
    assert links["call3"].exact


def test_anthropic_tool_loop() -> None:
    links = link_history(calls_of(ANTHROPIC))
    assert chain(links) == {"call2": ("call1", "history"), "call3": ("call2", "history")}
    assert [links[c].matched_messages for c in ("call2", "call3")] == [2, 4]
    assert all(link.exact and not link.reasoning_changed for link in links.values())


def test_anthropic_pause_turn_resumed_without_new_message() -> None:
    calls = calls_of(PAUSE)
    assert calls[0].finish_reasons == ["pause_turn"]
    link = link_history(calls)["call2"]
    assert (link.previous, link.matched_messages) == ("call1", len(calls[1].input_messages))
    assert "pause_turn" in link.evidence


def test_responses_previous_response_id() -> None:
    calls = calls_of(PREVIOUS)
    links = link_history(calls)
    assert chain(links) == {
        "call2": ("call1", "previous_response_id"),
        "call3": ("call2", "previous_response_id"),
        "call4": ("call3", "previous_response_id"),
    }
    assert links["call2"].evidence == (
        f"request $.previous_response_id = {calls[0].response_id} (call1's response id)"
    )
    assert links["call2"].matched_messages == 0


def test_responses_stateless_replay_with_reformatted_arguments() -> None:
    links = link_history(calls_of(ENCRYPTED))
    assert chain(links) == {"call2": ("call1", "history"), "call3": ("call2", "history")}
    # the client re-serialized the tool-call arguments: same value, different string
    assert not links["call3"].exact
    assert not links["call3"].reasoning_changed  # encrypted reasoning sent back as is


def test_corpus_smoke() -> None:
    """Over a whole directory: never raises, never links a call to a later or a non-model
    call, and links most continuations."""
    paths = sorted(SMOKE_DIR.rglob("*.yaml"))
    assert len(paths) > 100
    linked = 0
    for path in paths:
        calls = calls_of(path)
        position = {c.id: i for i, c in enumerate(calls)}
        model = {c.id for c in calls if is_model_call(c)}
        links = link_history(calls)
        for cid, link in links.items():
            assert cid in model and link.previous in model, path
            assert position[link.previous] < position[cid], path
            assert 0 <= link.matched_messages <= len(calls[position[cid]].input_messages)
        linked += len(links)
    assert linked > 150


# -- built cases ------------------------------------------------------------------------------


def _dbos() -> list[Call]:
    return calls_of(DBOS)


def _renamed(calls: list[Call], prefix: str, word: str) -> list[Call]:
    """A copy of a conversation with other call ids and another first user message."""
    out = []
    for call in copy.deepcopy(calls):
        call.id = f"{prefix}{call.id}"
        first = call.input_messages[0].parts[0]
        assert isinstance(first, TextPart)
        first.content = f"{first.content} ({word})"
        out.append(call)
    return out


def test_interleaved_conversations_chain_separately() -> None:
    a, b = _renamed(_dbos(), "a", "one"), _renamed(_dbos(), "b", "two")
    mixed = [a[0], b[0], b[1], a[1], a[2], b[2]]
    assert chain(link_history(mixed)) == {
        "acall2": ("acall1", "history"),
        "acall3": ("acall2", "history"),
        "bcall2": ("bcall1", "history"),
        "bcall3": ("bcall2", "history"),
    }


def test_identical_conversations_link_to_the_latest() -> None:
    """Two runs of the same conversation: ties go to the latest earlier call."""
    a, b = _renamed(_dbos(), "a", "x"), _renamed(_dbos(), "b", "x")
    links = link_history([a[0], b[0], a[1], b[1]])
    assert links["acall2"].previous == "bcall1"
    assert links["bcall2"].previous == "bcall1"


def test_output_not_replayed_is_not_linked() -> None:
    calls = _dbos()
    replay = calls[1].input_messages[1]
    calls[1].input_messages[1] = Message(role="assistant", parts=[TextPart(content="other")])
    assert "call2" not in link_history(calls)
    calls[1].input_messages[1] = replay
    assert link_history(calls)["call2"].previous == "call1"


def _first_tool_call(message: Message) -> ToolCallPart:
    part = message.parts[0]
    assert isinstance(part, ToolCallPart)
    return part


def test_altered_arguments_are_not_linked() -> None:
    """Another value is another history: no link (decided; a later incident rule can
    compare replays with message_key)."""
    calls = _dbos()
    part = _first_tool_call(calls[1].input_messages[1])
    part.arguments, part.arguments_raw = {"country": "Peru"}, '{"country":"Peru"}'
    assert "call2" not in link_history(calls)


def test_reformatted_arguments_link_not_exact() -> None:
    calls = _dbos()
    part = _first_tool_call(calls[1].input_messages[1])
    assert part.arguments == {}
    part.arguments_raw = "{ }"
    link = link_history(calls)["call2"]
    assert link.previous == "call1"
    assert not link.exact


def test_dropped_reasoning_links_with_reasoning_changed() -> None:
    calls = _dbos()
    calls[0].output_messages[0].parts.insert(0, ReasoningPart(content="thinking"))
    link = link_history(calls)["call2"]
    assert (link.previous, link.exact, link.reasoning_changed) == ("call1", True, True)
    assert not link_history(calls)["call3"].reasoning_changed


def test_split_assistant_turn_links_not_exact() -> None:
    """The output as one message, its replay as two (text, then the tool calls)."""
    calls = _dbos()
    calls[0].output_messages[0].parts.insert(0, TextPart(content="Let me look. "))
    tool_calls = calls[1].input_messages[1]
    calls[1].input_messages[1:2] = [
        Message(role="assistant", parts=[TextPart(content="Let me look.")]),
        tool_calls,
    ]
    link = link_history(calls)["call2"]
    assert (link.previous, link.matched_messages, link.exact) == ("call1", 3, False)


def test_chat_choices_any_one_replayed() -> None:
    calls = _dbos()
    first = calls[0].output_messages[0]
    calls[0].output_messages = [Message(role="assistant", parts=[TextPart(content="no")]), first]
    link = link_history(calls)["call2"]
    assert link.previous == "call1"
    assert "choice 1" in link.evidence


def test_cut_stream_is_a_weaker_input_only_link() -> None:
    calls = _dbos()
    calls[0].output_messages = []
    calls[0].complete = False
    link = link_history(calls)["call2"]
    assert (link.previous, link.matched_messages, link.exact) == ("call1", 1, False)
    assert "weaker" in link.evidence


def test_other_system_instructions_or_family_prevent_a_link() -> None:
    calls = _dbos()
    calls[1].system_instructions = [TextPart(content="be brief")]
    assert "call2" not in link_history(calls)
    calls = _dbos()
    calls[1].api = "anthropic.messages"
    assert "call2" not in link_history(calls)
    calls = _dbos()
    calls[1].request_model = "gpt-4o-mini"  # agents switch models: still linked
    assert link_history(calls)["call2"].previous == "call1"


def test_a_call_cannot_continue_one_that_had_not_answered() -> None:
    calls = _dbos()
    for call, (start, end) in zip(calls, [(0.0, 5.0), (4.0, 6.0), (7.0, 8.0)], strict=True):
        call.timing = Timing(started=start, ended=end)
    links = link_history(calls)
    assert "call2" not in links  # sent at 4.0, call1 answered at 5.0
    assert links["call3"].previous == "call2"


def test_order_by_start_time_not_list_order() -> None:
    calls = _dbos()
    for call, start in zip(calls, [1.0, 2.0, 3.0], strict=True):
        call.timing = Timing(started=start, ended=start + 0.5)
    assert chain(link_history(list(reversed(calls)))) == chain(link_history(calls))


def test_message_key_output_equals_replay() -> None:
    calls = _dbos()
    out = calls[0].output_messages[0]
    replayed = calls[1].input_messages[1]
    assert message_key(out, output=True) == message_key(replayed, output=False)
    padded = TextPart(content="  hi \n")
    assert message_key(Message(role="user", parts=[padded]), output=False) == message_key(
        Message(role="user", parts=[TextPart(content="hi")]), output=False
    )


def test_non_model_calls_are_ignored() -> None:
    calls = _dbos()
    calls[0].api, calls[0].operation = "openai.embeddings", "embeddings"
    assert chain(link_history(calls)) == {"call3": ("call2", "history")}
