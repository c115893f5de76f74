"""One call in full: numbered messages and parts, the category view, cuts and redaction,
on calls the real pipeline makes from shared corpus cassettes and our own MCP capture."""

from __future__ import annotations

import copy
import dataclasses
import io
from functools import cache
from pathlib import Path

import pytest

from agentshark.apis.model import (
    BlobPart,
    Call,
    FilePart,
    GenericPart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
    UriPart,
    parse_arguments,
)
from agentshark.output.redact import REDACTED
from agentshark.output.show import CATEGORIES, flatten, render_call
from agentshark.pipeline import Options
from tests.helpers import CORPUS, ROOT, Collected

DBOS = (
    CORPUS
    / "pydantic__pydantic-ai/tests/cassettes/test_dbos/test_complex_agent_run_in_workflow.yaml"
)
THINKING = (
    CORPUS / "pydantic__pydantic-ai/tests/models/cassettes/test_anthropic/"
    "test_anthropic_tool_with_thinking.yaml"
)
MCP = ROOT / "tests/data/captures/mcp_streamable_sessions/capture.pcap"

needs_corpus = pytest.mark.skipif(not DBOS.exists(), reason=f"no corpus at {CORPUS}")


@cache
def _calls(path: Path) -> tuple[Call, ...]:
    return tuple(Collected([str(path)], Options(calls=True)).calls)


def _call(path: Path, pick: int | str) -> Call:
    """A private copy of one call: by index, or the first of an MCP operation."""
    calls = _calls(path)
    found = calls[pick] if isinstance(pick, int) else next(c for c in calls if c.operation == pick)
    return copy.deepcopy(found)


def _render(call: Call, **kwargs: object) -> list[str]:
    out = io.StringIO()
    render_call(call, out, **kwargs)  # type: ignore[arg-type]
    return out.getvalue().splitlines()


def _section(lines: list[str], title: str) -> list[str]:
    """The lines of one top-level section (or one category of "by category")."""
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    indent = len(title) - len(title.lstrip())
    end = next(
        (
            i
            for i in range(start + 1, len(lines))
            if lines[i] and len(lines[i]) - len(lines[i].lstrip()) <= indent
        ),
        len(lines),
    )
    return lines[start:end]


def _part_count(call: Call) -> int:
    messages = [*call.input_messages, *call.output_messages]
    return len(call.system_instructions) + sum(len(m.parts) for m in messages)


@needs_corpus
def test_dbos_second_call_numbers_the_tool_loop() -> None:
    call = _call(DBOS, 1)
    lines = _render(call)
    assert lines[0] == "call call2 · openai.chat · chat"
    inputs = _section(lines, "input messages (4)")
    assert inputs[1:3] == [
        "  message [0] · user",
        "    part [0] · text: Tell me: the capital of the country; the weather there; the product"
        " name",
    ]
    first_result = inputs.index("  message [2] · tool")
    assert inputs[first_result + 1 : first_result + 3] == [
        "    part [0] · tool_call_response: id call_3rqTYrA6H21AYUaRGP4F66oq",
        "        response = Mexico",
    ]
    assert "    part [1] · tool_call: get_product_name" in inputs
    outputs = _section(lines, "output messages (1)")
    assert outputs[1:4] == [
        "  message [0] · assistant · finish tool_calls",
        "    part [0] · tool_call: get_weather",
        "        id = call_Vz0Sie91Ap56nH0ThKGrZXT7",
    ]
    assert '        arguments = {"city": "Mexico City"}' in outputs

    results = _section(lines, "  tool results (2)")
    assert results[1::2] == [
        "    input message [2] part [0] · tool_call_response: id call_3rqTYrA6H21AYUaRGP4F66oq",
        "    input message [3] part [0] · tool_call_response: id call_Xw9XMKBJU48kAAd78WgIswDx",
    ]
    planned = _section(lines, "  planned tool calls (1)")
    assert planned[1] == "    output message [0] part [0] · tool_call: get_weather"
    earlier = _section(lines, "  earlier tool calls (input) (2)")
    assert [line for line in earlier if "message [" in line] == [
        "    input message [1] part [0] · tool_call: get_country",
        "    input message [1] part [1] · tool_call: get_product_name",
    ]
    assert "timing      not captured" in "\n".join(lines)


@needs_corpus
def test_anthropic_thinking_and_tool_use_by_category() -> None:
    first = _call(THINKING, 0)
    flat = flatten(first)
    assert [f.position for f in flat["reasoning"]] == ["output message [0] part [0]"]
    assert [f.position for f in flat["answer"]] == ["output message [0] part [1]"]
    assert [f.position for f in flat["planned tool calls"]] == ["output message [0] part [2]"]
    assert flat["planned tool calls"][0].part_json["name"] == "get_user_country"
    lines = _render(first)
    assert any(line.startswith("    part [0] · reasoning: The user is asking") for line in lines)
    # the signature is opaque: sized, not printed
    assert any(line.strip().startswith('details = {"signature": "<') for line in lines)

    second = _call(THINKING, 1)
    flat = flatten(second)
    # replayed thinking stays reasoning; the result in a user message is a tool result
    assert [f.position for f in flat["reasoning"]] == ["input message [1] part [0]"]
    assert [f.position for f in flat["tool results"]] == ["input message [2] part [0]"]
    assert [f.position for f in flat["earlier tool calls (input)"]] == [
        "input message [1] part [2]"
    ]
    assert [f.role for f in flat["tool results"]] == ["user"]
    lines = _render(second)
    results = _section(lines, "  tool results (1)")
    assert results[1:4] == [
        "    input message [2] part [0] · tool_call_response: id toolu_01YGzqpRE16Vricda3Aqcejo",
        "        response = Mexico",
        '        details = {"is_error": false}',
    ]


def test_mcp_tools_call_with_timing() -> None:
    call = _call(MCP, "tools/call")
    lines = _render(call)
    text = "\n".join(lines)
    assert lines[0] == "call call4 · mcp · tools/call"
    assert "  message [0] · client\n    part [0] · tool_call: echo\n        id = 3" in text
    assert '        arguments = {"text": "hello"}' in lines
    assert "  message [0] · server · finish (none)" in lines
    assert "    output message [0] part [0] · tool_call_response: id 3" in lines
    assert "    output message [0] part [1] · text: echo: hello" in lines
    timing = next(line for line in lines if line.startswith("  timing"))
    assert " UTC · first byte +" in timing
    assert "ms" in timing
    assert "mcp_session_id = c2243a905f71487895ee89148c682c86 (from " in text


def test_mcp_request_and_replayed_answers_have_their_own_categories() -> None:
    flat = flatten(_call(MCP, "tools/call"))
    assert [f.position for f in flat["tool call (request)"]] == ["input message [0] part [0]"]
    assert flat["earlier tool calls (input)"] == []


@needs_corpus
def test_replayed_assistant_text_is_an_earlier_answer() -> None:
    call = _call(THINKING, 1)
    replayed = [
        (i, j)
        for i, m in enumerate(call.input_messages)
        if m.role == "assistant"
        for j, p in enumerate(m.parts)
        if isinstance(p, TextPart)
    ]
    assert replayed  # the first call's answer text, sent back with the tool result
    flat = flatten(call)
    assert [(f.message, f.part) for f in flat["earlier answers (input)"]] == replayed
    assert all(f.side == "output" for f in flat["answer"])


@needs_corpus
@pytest.mark.parametrize(
    ("path", "index"), [(DBOS, i) for i in range(3)] + [(THINKING, 0), (THINKING, 1)]
)
def test_category_view_holds_every_part_once(path: Path, index: int) -> None:
    _check_every_part_once(_call(path, index))


def test_category_view_holds_every_mcp_part_once() -> None:
    for call in _calls(MCP):
        _check_every_part_once(call)


def _check_every_part_once(call: Call) -> None:
    flat = flatten(call)
    assert tuple(flat) == CATEGORIES
    entries = [f for group in flat.values() for f in group]
    assert len(entries) == _part_count(call)
    assert len({f.position for f in entries}) == len(entries)
    for group in flat.values():  # original order inside each category
        keys = [
            (("system", "input", "output").index(f.side), f.message or 0, f.part) for f in group
        ]
        assert keys == sorted(keys)
    lines = _render(call)
    shown = _section(lines, "by category")
    labels = [line for line in shown if " message [" in line or "instructions part [" in line]
    assert len(labels) == len(entries)


@needs_corpus
def test_system_instructions_and_developer_messages_are_system() -> None:
    call = _call(DBOS, 1)
    call.system_instructions = [TextPart(content="You are a weather assistant.")]
    call.input_messages.insert(1, Message(role="developer", parts=[TextPart(content="Be brief.")]))
    flat = flatten(call)
    assert [f.position for f in flat["system"]] == [
        "system instructions part [0]",
        "input message [1] part [0]",
    ]
    assert flat["system"][0].side == "system"
    assert flat["system"][0].message is None
    lines = _render(call)
    assert lines[lines.index("system instructions (1 part)") + 1] == (
        "  part [0] · text: You are a weather assistant."
    )
    assert "    system instructions part [0] · text: You are a weather assistant." in lines
    # every later message moved down by one
    assert any(
        line.startswith("    input message [3] part [0] · tool_call_response") for line in lines
    )


@needs_corpus
def test_long_text_is_wrapped_and_cut_with_a_note() -> None:
    call = _call(THINKING, 1)
    answer = call.output_messages[0].parts[0]
    assert isinstance(answer, TextPart)
    answer.content = "word " * 1000  # 5000 chars
    lines = _render(call, max_text=300, width=60)
    assert "        … (4700 more chars)" in lines
    assert all(len(line) <= 60 for line in lines if "word" in line)
    assert sum(line.count("word") for line in _section(lines, "output messages")) == 60

    whole = _render(call, max_text=10_000)
    assert not any("more chars" in line for line in whole)


@needs_corpus
def test_invalid_arguments_show_the_raw_string_and_the_error() -> None:
    call = _call(DBOS, 1)
    part = call.output_messages[0].parts[0]
    assert isinstance(part, ToolCallPart)
    raw = '{"city": "Mexico Ci'
    arguments, error = parse_arguments(raw)
    assert arguments is None and error is not None
    call.output_messages[0].parts[0] = dataclasses.replace(
        part, arguments=None, arguments_raw=raw, arguments_error=error
    )
    lines = _render(call)
    planned = _section(lines, "  planned tool calls (1)")
    assert planned[1:5] == [
        "    output message [0] part [0] · tool_call: get_weather",
        "        id = call_Vz0Sie91Ap56nH0ThKGrZXT7",
        '        arguments (raw, not JSON) = {"city": "Mexico Ci',
        f"        arguments_error = {error}",
    ]
    assert "arguments = " not in "\n".join(planned)


@needs_corpus
def test_credentials_in_tool_arguments_and_results_are_redacted() -> None:
    secret = "sk-proj-AbCdEfGhIjKlMnOpQrSt"
    password = "hunter2-correct-horse"
    call = _call(DBOS, 1)
    part = call.output_messages[0].parts[0]
    assert isinstance(part, ToolCallPart)
    part.arguments = {"city": "Mexico City", "api_key": secret, "password": password}
    result = call.input_messages[2].parts[0]
    assert isinstance(result, ToolCallResponsePart)
    result.response = f"used Authorization: Bearer {secret}"

    text = "\n".join(_render(call))
    assert secret not in text
    assert password not in text
    assert f'"api_key": "{REDACTED} sk-proj-… 16+:' in text
    assert f"Bearer {REDACTED} sk-proj-… 16+:" in text
    assert '"city": "Mexico City"' in text

    plain = "\n".join(_render(call, redact=False))
    assert secret in plain
    assert password in plain


@needs_corpus
def test_a_secret_across_the_cut_is_still_redacted() -> None:
    call = _call(DBOS, 1)
    call.input_messages[0].parts[0] = TextPart(content="x" * 95 + " sk-ant-api03-" + "Z" * 40)
    text = "\n".join(_render(call, max_text=100))
    assert "sk-ant" not in text
    assert "ZZZZ" not in text


def test_odd_parts_never_crash() -> None:
    call = _call(MCP, "tools/call")
    odd: list[object] = [
        TextPart(content=None),  # type: ignore[arg-type]
        TextPart(content="\x1b[31mred\x1b[0m\r\nnext line\x00"),
        ReasoningPart(content="", provider_details={"encrypted": "E" * 5000}),
        ToolCallPart(id=None, name=None, arguments={(1, 2): {1, 2}}),
        ToolCallPart(id="t", name="f", arguments_raw=None, arguments_error="no JSON"),
        ToolCallResponsePart(id=None, response=None),
        ToolCallResponsePart(id="r", response={"rows": [[i] * 10 for i in range(2000)]}),
        BlobPart(mime_type=None, modality=None, content=None),  # type: ignore[arg-type]
        BlobPart(mime_type="image/png", modality="image", content="A" * 4_000_000),
        UriPart(uri="https://x.example/a.png?key=AIzaSecretSecret", mime_type=None, modality=None),
        FilePart(file_id="file-1", mime_type="application/pdf", modality=None),
        GenericPart(type="refusal", fields={"refusal": b"bytes", "n": 10**40, "s": {3}}),
        GenericPart(type="\x1b]0;title\x07", fields={}),
    ]
    call.output_messages.append(Message(role="assistant", parts=odd))  # type: ignore[arg-type]
    call.input_messages.append(Message(role="user", parts=[]))

    text = "\n".join(_render(call, max_text=500))
    assert "\x1b" not in text and "\x00" not in text and "\x07" not in text
    assert "\\x1b[31mred\\x1b[0m" in text
    assert "    part [0] · text: (empty)" in text
    assert "    part [5] · tool_call_response: id -\n        response = null" in text
    assert "    part [2] · reasoning: (no visible text)" in text
    assert 'details = {"encrypted": "<5000 chars>"}' in text
    assert "arguments (raw, not JSON) = " in text
    assert "4000000 base64 chars (~3000000 bytes) (image/png, image)" in text
    assert "AAAA" not in text
    assert "AIzaSecretSecret" not in text
    assert "file: file-1 (application/pdf, no modality)" in text
    assert "    (no parts)" in text
    assert "more chars)" in text  # the 2000-row response is cut
    assert len(flatten(call)["other"]) >= 2
    _check_every_part_once(call)
