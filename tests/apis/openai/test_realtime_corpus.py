"""OpenAI Realtime calls from the corpus's pydantic-ai WebSocket message logs (OpenAI, Azure,
xAI and a gateway speaking the Realtime protocol), each response checked against the
openai SDK's own parsing of its ``response.done`` event."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from openai._models import construct_type
from openai.types.realtime import RealtimeServerEvent

from agentshark.apis.model import Call, TextPart, ToolCallPart
from agentshark.pipeline import Options, run
from tests.helpers import CORPUS

LOGS = CORPUS / "pydantic__pydantic-ai/tests/realtime/cassettes"


def _realtime_logs() -> list[Path]:
    out = []
    for path in sorted(LOGS.glob("*/*.yaml")):
        doc = yaml.safe_load(path.read_text())
        items = doc.get("interactions", [])
        first = next((x for x in items if x.get("direction") == "received"), None)
        if first is not None and first["data"].get("type") == "session.created":
            out.append(path)
    return out


LOG_FILES = _realtime_logs()


def test_the_corpus_has_the_logs() -> None:
    assert len(LOG_FILES) >= 30


def _done_events(path: Path) -> list[Any]:
    doc = yaml.safe_load(path.read_text())
    events = [
        construct_type(type_=RealtimeServerEvent, value=x["data"])
        for x in doc["interactions"]
        if x.get("kind") == "message" and x.get("direction") == "received"
    ]
    return [e for e in events if getattr(e, "type", None) == "response.done"]


@pytest.mark.parametrize("path", LOG_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_response_as_the_sdk_reads_it(path: Path) -> None:
    calls = [it for it in run([str(path)], Options(calls=True)) if isinstance(it, Call)]
    done = _done_events(path)
    assert len(calls) == len(done) > 0
    for call, event in zip(calls, done, strict=True):
        resp = event.response
        assert call.api == "openai.realtime" and call.complete == (resp.status == "completed")
        assert call.response_id == resp.id and call.finish_reasons == [resp.status]
        if resp.usage is not None:
            assert call.usage is not None
            assert (call.usage.input_tokens, call.usage.output_tokens) == (
                resp.usage.input_tokens,
                resp.usage.output_tokens,
            )
        assert call.timing.started is None and call.timing.first_token is None  # no times
        want_tools = [
            (o.call_id, o.name, json.loads(o.arguments))
            for o in resp.output or []
            if o.type == "function_call"
        ]
        got_tools = [
            (p.id, p.name, p.arguments)
            for m in call.output_messages
            for p in m.parts
            if isinstance(p, ToolCallPart)
        ]
        assert got_tools == want_tools
        want_text = [
            c.text or c.transcript
            for o in resp.output or []
            if o.type == "message"
            for c in o.content or []
            if (c.text or c.transcript)
        ]
        got_text = [
            p.content for m in call.output_messages for p in m.parts if isinstance(p, TextPart)
        ]
        assert got_text == want_text
