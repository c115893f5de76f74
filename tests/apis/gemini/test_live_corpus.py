"""Gemini Live calls from the corpus's pydantic-ai WebSocket message logs, each model turn
checked against google-genai's own parsing of the server's messages (LiveServerMessage)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from google.genai import _live_converters as live_converters
from google.genai import types

from agentshark.apis.model import Call, TextPart, ToolCallPart
from agentshark.pipeline import Options, run
from tests.helpers import CORPUS

LOGS = CORPUS / "pydantic__pydantic-ai/tests/realtime/cassettes"


def _live_logs() -> list[Path]:
    out = []
    for path in sorted(LOGS.glob("*/*.yaml")):
        items = yaml.safe_load(path.read_text()).get("interactions", [])
        first = next((x for x in items if x.get("direction") == "sent"), None)
        if first is not None and "setup" in first["data"]:
            out.append(path)
    return out


LIVE_LOGS = _live_logs()


def test_the_corpus_has_the_logs() -> None:
    assert len(LIVE_LOGS) >= 10


def _sdk_turns(path: Path) -> list[dict[str, Any]]:
    """The model turns as the SDK's messages tell them: tool calls, transcript, usage."""
    items = yaml.safe_load(path.read_text())["interactions"]
    turns: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for item in items:
        if item.get("direction") != "received":
            continue
        # the SDK's own receive path (google/genai/live.py AsyncSession._receive)
        converted = live_converters._LiveServerMessage_from_mldev(item["data"])
        msg = types.LiveServerMessage._from_response(response=converted, kwargs={})
        sc = msg.server_content
        started = msg.tool_call or (sc and (sc.model_turn or sc.output_transcription))
        if current is None and started:
            current = {"tools": [], "said": "", "usage": None, "end": None}
        if current is None:
            if msg.usage_metadata and turns:
                turns[-1]["usage"] = msg.usage_metadata
            continue
        if sc and sc.output_transcription and sc.output_transcription.text:
            current["said"] += sc.output_transcription.text
        if msg.usage_metadata:
            current["usage"] = msg.usage_metadata
        if msg.tool_call:
            current["tools"] = [(f.id, f.name, f.args) for f in msg.tool_call.function_calls or []]
            current["end"] = "tool_call"
        elif sc and (sc.turn_complete or sc.interrupted):
            current["end"] = "interrupted" if sc.interrupted else "turn_complete"
        if current["end"]:
            turns.append(current)
            current = None
    return turns


@pytest.mark.parametrize("path", LIVE_LOGS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_turn_as_the_sdk_reads_it(path: Path) -> None:
    calls = [it for it in run([str(path)], Options(calls=True)) if isinstance(it, Call)]
    turns = _sdk_turns(path)
    assert len(calls) == len(turns) > 0
    for call, turn in zip(calls, turns, strict=True):
        assert call.api == "gemini.live" and call.provider == "gcp.gemini"
        assert call.complete == (turn["end"] != "interrupted")
        tools = [
            (p.id, p.name, p.arguments)
            for m in call.output_messages
            for p in m.parts
            if isinstance(p, ToolCallPart)
        ]
        assert tools == turn["tools"]
        said = [
            p.content
            for m in call.output_messages
            for p in m.parts
            if isinstance(p, TextPart) and p.provider_details.get("audio_transcript")
        ]
        assert said == ([turn["said"]] if turn["said"] else [])
        usage = turn["usage"]
        if usage is None:
            assert call.usage is None
        else:
            assert call.usage is not None
            assert call.usage.input_tokens == usage.prompt_token_count
            assert call.usage.total_tokens == usage.total_token_count
