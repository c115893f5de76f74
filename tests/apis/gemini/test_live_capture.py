"""Gemini Live from the wire: the google-genai SDK's own Live client over TLS 1.3
(``scripts/make_live_captures.py``), the Gemini API form (binary frames, the key in the
URL) and the Vertex AI form (text frames, a bearer header), each turn checked against what
the SDK parsed (``truth.json``); and a session seen from its middle (no handshake, no
``setup``), still told as Live from its messages."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from agentshark import cli
from agentshark.apis.model import BlobPart, Call, TextPart, ToolCallPart
from agentshark.apis.websocket import SessionCalls
from agentshark.model import Exchange
from agentshark.pipeline import Options, run
from tests.apis.openai.test_realtime import ids
from tests.helpers import ROOT

FOLDER = ROOT / "tests" / "data" / "captures"
CASES = ("ws_sdk_gemini_live_tls13", "ws_sdk_gemini_live_vertex")


def _items(name: str, *, keys: bool = True) -> list[Any]:
    folder = FOLDER / name
    keylogs = (str(folder / "keys.log"),) if keys else ()
    return list(run([str(folder / "capture.pcap")], Options(calls=True, keylogs=keylogs)))


def _truth(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FOLDER / name / "truth.json").read_text())
    return data


def _turns(truth: dict[str, Any]) -> list[dict[str, Any]]:
    """The model turns as the SDK parsed them: a turn starts with a tool call or model
    content and ends at its tool call, turnComplete or interrupted; usage joins the turn
    it follows."""
    turns: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for msg in truth["received"]:
        content = msg.get("server_content", {})
        starts = "tool_calls" in msg or "text" in content or "output_transcription" in content
        if current is None and starts:
            current = {"tools": [], "text": "", "said": "", "audio": 0, "usage": None, "end": None}
            turns.append(current)
        if "usage" in msg and turns:
            (current or turns[-1])["usage"] = msg["usage"]
        if current is None:
            continue
        current["tools"] += msg.get("tool_calls", [])
        current["text"] += "".join(content.get("text", []))
        current["said"] += content.get("output_transcription", "")
        current["audio"] += sum(i["bytes"] for i in content.get("inline", []))
        if "tool_calls" in msg:
            current["end"] = "tool_call"
        elif content.get("turn_complete"):
            current["end"] = "turn_complete"
        elif content.get("interrupted"):
            current["end"] = "interrupted"
        if current["end"]:
            current = None
    return turns


def _output(call: Call) -> dict[str, Any]:
    parts = [p for m in call.output_messages for p in m.parts]
    texts = [p for p in parts if isinstance(p, TextPart)]
    return {
        "tools": [
            {"id": p.id, "name": p.name, "args": p.arguments}
            for p in parts
            if isinstance(p, ToolCallPart)
        ],
        "text": "".join(p.content for p in texts if not p.provider_details.get("audio_transcript")),
        "said": "".join(p.content for p in texts if p.provider_details.get("audio_transcript")),
        "audio": sum(
            int(str(p.provider_details.get("bytes", 0))) for p in parts if isinstance(p, BlobPart)
        ),
    }


@pytest.mark.parametrize("name", CASES)
def test_every_turn_is_a_call_as_the_sdk_parsed_it(name: str) -> None:
    truth = _truth(name)
    items = _items(name)
    calls = [i for i in items if isinstance(i, Call)]
    turns = _turns(truth)
    assert len(turns) == 4 and len(calls) == len(turns)
    for call, turn in zip(calls, turns, strict=True):
        assert call.api == "gemini.live"
        got = _output(call)
        assert got == {k: turn[k] for k in ("tools", "text", "said", "audio")}
        if turn["usage"] is None:
            assert call.usage is None
        else:
            assert call.usage is not None
            assert call.usage.input_tokens == turn["usage"]["prompt_token_count"]
            assert call.usage.output_tokens == turn["usage"]["response_token_count"]
        assert call.complete == (turn["end"] != "interrupted")
        assert call.finish_reasons == (["interrupted"] if turn["end"] == "interrupted" else [])
    assert calls[0].request_model is not None and calls[0].request_model.endswith(truth["model"])
    # the tool's result sent back is the next turn's input
    results = [p for m in calls[1].input_messages for p in m.parts]
    assert any(getattr(p, "id", None) == "function-call-0001" for p in results)
    # the session's ids and notices: the resumption handle (sent after the third turn) and
    # the goAway
    assert "live_resumption_handle" not in calls[2].ids
    assert calls[3].ids.get("live_resumption_handle") == "resume-handle-0001"
    codes = [d.code for c in calls for d in c.diagnostics]
    assert "live.go_away" in codes


@pytest.mark.parametrize("name", CASES)
def test_the_credentials_stay_out_of_every_format(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = FOLDER / name
    secret = next(iter(_truth(name)["fake_credentials"].values()))
    for args in (
        ["analyze", "--format", "json"],
        ["exchanges", "--format", "json", "--events"],
        ["calls"],
    ):
        code = cli.main([*args, str(folder / "capture.pcap"), "--keylog", str(folder / "keys.log")])
        out = capsys.readouterr().out
        assert code == 0 and "gemini" in out and secret not in out, args


def test_without_the_key_log_the_session_is_encrypted_and_said_so() -> None:
    items = _items(CASES[0], keys=False)
    assert not [i for i in items if isinstance(i, Call)]
    codes = [d.code for i in items for d in getattr(i, "diagnostics", ()) if hasattr(d, "code")]
    assert "tls.no_keys" in codes


def _session(name: str) -> Exchange:
    (ex,) = [i for i in _items(name) if isinstance(i, Exchange)]
    return ex


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("skip", [1, 2, 4])
def test_a_session_seen_from_its_middle_is_still_live(name: str, skip: int) -> None:
    """The handshake and the first ``skip`` messages (the setup among them) cut off: the
    messages alone say Live; the calls lack the setup (model, tools): each is incomplete,
    with the reason; what they hold is what was sent."""
    whole = _session(name)
    assert whole.messages is not None
    cut = replace(whole, request=None, response=None, messages=whole.messages[skip:])
    reader = SessionCalls(cut, ids())
    calls = [c for r in cut.messages or () for c in reader.feed([r])] + reader.close()
    full = [c for c in _items(name) if isinstance(c, Call)]
    assert calls and all(c.api == "gemini.live" for c in calls)
    assert all(not c.complete for c in calls)
    assert all(c.request_model is None for c in calls)
    why = [d.message for d in calls[0].diagnostics if d.code == "call.evidence_incomplete"]
    assert why and "no setup" in why[0]
    # the same turns, read from where the cut leaves them
    assert [_output(c) for c in calls] == [_output(c) for c in full[len(full) - len(calls) :]]


def test_a_session_without_live_messages_is_not_told_live() -> None:
    whole = _session(CASES[0])
    assert whole.messages is not None
    # only the client's audio chunks' neighbours: a message that is not Live's is not enough
    others = [r for r in whole.messages if r.message.direction == 0][:1]
    odd = replace(
        others[0], message=replace(others[0].message, payload=b'{"type": "session.update"}')
    )
    cut = replace(whole, request=None, response=None, messages=[odd])
    reader = SessionCalls(cut, ids())
    assert reader.feed([odd]) == [] and reader.close() == []
