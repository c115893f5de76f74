"""Gemini Live (``BidiGenerateContent`` over WebSocket): the model turns of one session.

The client's first message is ``setup`` (model, ``generationConfig``, ``systemInstruction``,
``tools``); the server answers ``setupComplete``
(https://ai.google.dev/api/live). Field names come in both JSON (``clientContent``) and proto
(``client_content``) form, as clients send both. A call is one model turn:

* it starts at the client's input that asks for it: ``clientContent`` with
  ``turnComplete``, ``toolResponse`` (function results, the input of the turn they resume), or
  the server's first ``serverContent`` after ``realtimeInput`` audio (voice activity);
* its input is what the client sent since the previous turn: ``clientContent.turns``
  (``Content`` objects), ``toolResponse.functionResponses``, ``realtimeInput`` audio (one
  blob of its bytes) with the server's ``inputTranscription``;
* its output is ``serverContent.modelTurn`` parts (text, inline audio joined into one blob),
  ``outputTranscription`` text, and ``toolCall.functionCalls``;
* it ends at ``turnComplete`` (complete), at a ``toolCall`` (the model waits for the
  results: complete, nothing more can come in that turn), or at ``interrupted`` (the user
  spoke over it: reported with ``finish_reasons: ["interrupted"]``, not complete); usage is
  the ``usageMetadata`` that comes with or after it. A ``goAway`` is a diagnostic; a
  ``sessionResumptionUpdate`` handle goes to the call's ids.

As for every session family, a message lost or undecodable since the previous turn makes
the call incomplete with the reason, and so do a lost client message earlier in the session
(it may have been a ``setup``) and a cut handshake (:mod:`agentshark.apis.session_evidence`).
Gemini Live's turns carry no finish reason of their own: ``finish_reasons`` stays empty unless
``interrupted`` said so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import orjson

from agentshark.apis.audio import audio_blob
from agentshark.apis.gemini.parts import camel, parts_of, usage_of
from agentshark.apis.gemini.request import tool_definitions
from agentshark.apis.model import (
    BlobPart,
    Call,
    Json,
    Message,
    Part,
    TextPart,
    Timing,
    ToolCallPart,
    ToolCallResponsePart,
    Usage,
)
from agentshark.apis.session_evidence import (
    CONFIG_LOST,
    SessionItem,
    handshake_cut,
    loss_text,
    with_losses,
)
from agentshark.errors import Diagnostic
from agentshark.framing.websocket import BINARY, TEXT
from agentshark.model import Exchange, WsLoss, WsRecord

__all__ = ["API", "LiveCalls", "is_live", "is_live_message", "is_live_path", "live_calls"]

API = "gemini.live"


def _event(record: WsRecord) -> dict[str, Json] | None:
    m = record.message
    if m.payload is None or not m.complete or m.truncated or m.opcode not in (TEXT, BINARY):
        return None
    try:
        value = orjson.loads(m.payload)  # Live sends JSON in text and in binary frames
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict):
        return None
    return {camel(k): v for k, v in value.items()}


_CLIENT = frozenset(("setup", "clientContent", "realtimeInput", "toolResponse"))
_SERVER = frozenset(
    (
        "setupComplete",
        "serverContent",
        "toolCall",
        "toolCallCancellation",
        "usageMetadata",
        "goAway",
        "sessionResumptionUpdate",
    )
)


def is_live(exchange: Exchange) -> bool:
    """The session's first client message is a Live ``setup``."""
    for record in exchange.messages or ():
        if record.message.direction == 0:
            event = _event(record)
            return event is not None and isinstance(event.get("setup"), dict)
    return False


def is_live_path(path: str) -> bool:
    """A handshake path of the Live API: the Gemini API's
    ``…GenerativeService.BidiGenerateContent`` (``…Constrained`` with an ephemeral token) or
    Vertex AI's ``…LlmBidiService/BidiGenerateContent``."""
    return path.rstrip("/").endswith(("BidiGenerateContent", "BidiGenerateContentConstrained"))


def is_live_message(record: WsRecord) -> bool:
    """A message only a Live session sends: a JSON object whose keys are all Live client
    message fields (client side) or server message fields (server side), in either form."""
    event = _event(record)
    if not event:
        return False
    known = _CLIENT if record.message.direction == 0 else _SERVER
    return all(k in known for k in event)


@dataclass(slots=True)
class _Live:
    exchange: Exchange
    next_id: Callable[[], str]
    setup: dict[str, Json] = field(default_factory=dict)
    inputs: list[Message] = field(default_factory=list)
    audio_in: list[str] = field(default_factory=list)
    heard: list[str] = field(default_factory=list)  # inputTranscription pieces
    call: Call | None = None
    parts: list[Part] = field(default_factory=list)
    audio_out: list[tuple[str, str | None]] = field(default_factory=list)  # (base64, mime)
    said: list[str] = field(default_factory=list)  # outputTranscription pieces
    lost: list[str] = field(default_factory=list)
    config_lost: str = ""  # why the setup in force is uncertain (session_evidence)
    later: list[str] = field(default_factory=list)  # client losses during a call: the next's
    pending: list[Diagnostic] = field(default_factory=list)
    ids: dict[str, str] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    given: int = 0  # calls final and given out: never changed again


def live_calls(exchange: Exchange, next_id: Callable[[], str]) -> list[Call]:
    """The calls (one per model turn) of a Gemini Live session's exchange, in order."""
    reader = LiveCalls(exchange, next_id)
    calls = [call for item in with_losses(exchange.messages or []) for call in reader.feed(item)]
    return calls + reader.close()


class LiveCalls:
    """A Live session read message by message (sans-I/O): each turn's call comes out of
    :meth:`feed` once final, the one still open out of :meth:`close`. A turn is final at its
    end (``turnComplete``, a ``toolCall``, ``interrupted``, or the input that starts the next
    turn) when its usage came with it (the API sends ``usageMetadata`` with
    ``turnComplete``); one ended without usage waits for a ``usageMetadata`` until the next
    turn starts. A call given out is never changed: a later ``usageMetadata`` is said
    (``live.late_usage``). A call made while no message had a time (a message log) has no
    times. A :class:`~agentshark.model.WsLoss` fed counts a loss where it happened; the
    message that later carries the same ``ws.gap`` is read as the whole message it is
    (:mod:`agentshark.apis.session_evidence`)."""

    __slots__ = ("_declared", "_s", "_timed")

    def __init__(
        self, exchange: Exchange, next_id: Callable[[], str], *, from_middle: bool = False
    ) -> None:
        """``from_middle``: the session's ``setup`` is not in the capture (the capture started
        after it): the model, tools and instructions in force are unknown, and the first
        call's evidence is not whole."""
        self._s = _Live(exchange, next_id)
        self._timed = False  # a message had a time
        self._declared = [False, False]  # a WsLoss came, per direction, since its last message
        if from_middle:
            self._s.lost.append("the session started before the capture (no setup)")
            self._s.config_lost = "the session's setup was sent before the capture"

    def feed(self, item: SessionItem) -> list[Call]:
        """The calls ``item`` (the next message read, either direction, or a loss) makes
        final."""
        s = self._s
        if isinstance(item, WsLoss):
            into = s.later if item.direction == 0 and s.call is not None else s.lost
            into.append(loss_text(item))
            if item.direction == 0:
                s.config_lost = CONFIG_LOST.format(where="in a capture gap")
            self._declared[item.direction] = True
            return []
        record, m = item, item.message
        self._timed = self._timed or bool(m.last_ts)
        codes = {d.code for d in record.diagnostics} if record.diagnostics else set()
        counted = "ws.gap" in codes and self._declared[m.direction]
        self._declared[m.direction] = False
        data = m.opcode in (TEXT, BINARY)
        event = _event(record) if data else None
        lost = (data and event is None) or "ws.undecodable" in codes
        lost = lost or ("ws.gap" in codes and not counted)  # (counted: this one is whole)
        if lost or "ws.suspect" in codes:
            _lost(s, record)
        if event is not None and not lost:
            if m.direction == 0:
                _client(s, event, m.first_ts)
            else:
                _server(s, event, m.first_ts, m.last_ts)
        return self._new()

    def close(self) -> list[Call]:
        """The session ended: the calls not given out yet."""
        s = self._s
        if s.call is not None:
            _end(s, None, None)
        return self._new(final=True)

    def _new(self, *, final: bool = False) -> list[Call]:
        s = self._s
        end = len(s.calls)
        if not final and end and s.call is None and s.calls[-1].usage is None:
            end -= 1  # its usageMetadata may follow
        if end <= s.given:
            return []
        new = s.calls[s.given : end]
        s.given = end
        if not self._timed:
            for call in new:
                call.timing = Timing()  # a message log keeps no times
        return new


def _lost(s: _Live, record: WsRecord) -> None:
    m = record.message
    who = "client" if m.direction == 0 else "server"
    lost = s.later if m.direction == 0 and s.call is not None else s.lost
    lost.append(
        f"a {who} message at {m.offset} was lost, is not a JSON object or "
        "sits on a stream that lost frames"
    )
    if m.direction == 0 or any(d.code == "ws.suspect" for d in record.diagnostics):
        s.config_lost = CONFIG_LOST.format(where=f"at byte {m.offset}")


def _client(s: _Live, event: dict[str, Json], ts: float) -> None:
    setup = event.get("setup")
    if isinstance(setup, dict):
        s.setup = {camel(k): v for k, v in setup.items()}
    content = event.get("clientContent")
    if isinstance(content, dict):
        for turn in content.get("turns") or content.get("Turns") or []:
            if isinstance(turn, dict):
                role = turn.get("role")
                s.inputs.append(
                    Message(
                        role=role if isinstance(role, str) else None,
                        parts=parts_of(turn.get("parts")),
                    )
                )
        if content.get("turnComplete") or content.get("turn_complete"):
            _start(s, ts)
    response = event.get("toolResponse")
    if isinstance(response, dict):
        results = response.get("functionResponses") or response.get("function_responses") or []
        for r in results if isinstance(results, list) else []:
            if isinstance(r, dict):
                part = ToolCallResponsePart(
                    id=r.get("id") if isinstance(r.get("id"), str) else None,
                    response=r.get("response"),
                    provider_details={"name": r["name"]} if isinstance(r.get("name"), str) else {},
                )
                s.inputs.append(Message(role="tool", parts=[part]))
        _start(s, ts)
    realtime = event.get("realtimeInput")
    if isinstance(realtime, dict):
        audio = realtime.get("audio")
        if isinstance(audio, dict) and isinstance(audio.get("data"), str):
            s.audio_in.append(audio["data"])
        for chunk in realtime.get("mediaChunks") or realtime.get("media_chunks") or []:
            if isinstance(chunk, dict) and isinstance(chunk.get("data"), str):
                s.audio_in.append(chunk["data"])


def _server(s: _Live, event: dict[str, Json], first: float, last: float) -> None:
    complete = event.get("setupComplete")
    if isinstance(complete, dict) and isinstance(complete.get("sessionId"), str):
        s.ids["live_session_id"] = complete["sessionId"]
    content = event.get("serverContent")
    if isinstance(content, dict):
        _content(s, {camel(k): v for k, v in content.items()}, first, last)
    tool_call = event.get("toolCall")
    if isinstance(tool_call, dict):
        if s.call is None:
            _start(s, first)
        calls = tool_call.get("functionCalls") or tool_call.get("function_calls") or []
        for fc in calls if isinstance(calls, list) else []:
            if isinstance(fc, dict):
                s.parts.append(
                    ToolCallPart(
                        id=fc.get("id") if isinstance(fc.get("id"), str) else None,
                        name=fc.get("name") if isinstance(fc.get("name"), str) else None,
                        arguments=fc.get("args"),
                    )
                )
        _first_token(s, last)
        _end(s, None, last)
    usage = event.get("usageMetadata")
    if isinstance(usage, dict):
        target = s.call or (s.calls[-1] if len(s.calls) > s.given else None)
        if target is not None:
            target.usage = _usage(usage)
        elif s.calls:
            s.pending.append(
                Diagnostic(
                    code="live.late_usage",
                    message="a usageMetadata came after the last turn had its usage and "
                    "was final: it is not added to it",
                    location=f"{s.exchange.id} server websocket",
                    severity="info",
                )
            )
    resumption = event.get("sessionResumptionUpdate")
    if isinstance(resumption, dict) and isinstance(resumption.get("newHandle"), str):
        s.ids["live_resumption_handle"] = resumption["newHandle"]
    go_away = event.get("goAway")
    if go_away is not None:
        s.pending.append(
            Diagnostic(
                code="live.go_away",
                message=f"the server will close the session soon (goAway {go_away})",
                location=f"{s.exchange.id} server websocket",
                severity="info",
            )
        )


def _content(s: _Live, content: dict[str, Json], first: float, last: float) -> None:
    heard = content.get("inputTranscription")
    if isinstance(heard, dict) and isinstance(heard.get("text"), str):
        s.heard.append(heard["text"])
    if s.call is None and any(k in content for k in ("modelTurn", "outputTranscription")):
        _start(s, first)  # voice activity: the server took the turn on its own
    turn = content.get("modelTurn")
    if isinstance(turn, dict) and s.call is not None:
        for part in turn.get("parts") or []:
            inline = part.get("inlineData") if isinstance(part, dict) else None
            if isinstance(inline, dict) and isinstance(inline.get("data"), str):
                mime = inline.get("mimeType")
                s.audio_out.append((inline["data"], mime if isinstance(mime, str) else None))
            else:
                s.parts.extend(parts_of([part]))
        _first_token(s, last)
    said = content.get("outputTranscription")
    if isinstance(said, dict) and isinstance(said.get("text"), str) and s.call is not None:
        s.said.append(said["text"])
        _first_token(s, last)
    if content.get("interrupted") and s.call is not None:
        _end(s, "interrupted", last)
    elif content.get("turnComplete") and s.call is not None:
        _end(s, None, last)


def _start(s: _Live, ts: float) -> None:
    if s.call is not None:
        _end(s, None, None)
    s.lost.extend(s.later)
    s.later = []
    for why in (s.config_lost, handshake_cut(s.exchange)):
        if why and why not in s.lost:
            s.lost.append(why)
    call = Call(
        id=s.next_id(), exchange_id=s.exchange.id, api=API, provider="gcp.gemini", stream=True
    )
    call.operation = "chat"
    call.timing = Timing(started=ts)
    setup = s.setup
    model = setup.get("model")
    if isinstance(model, str):
        call.request_model = model.removeprefix("models/")
    system = setup.get("systemInstruction")
    if isinstance(system, dict):
        call.system_instructions = parts_of(system.get("parts"))
    tools = setup.get("tools")
    if isinstance(tools, list):
        call.tool_definitions = tool_definitions(tools)
    config = setup.get("generationConfig")
    if isinstance(config, dict):
        call.request_params = {camel(k): v for k, v in config.items()}
    if s.audio_in:
        blob = _audio(s.audio_in, "audio/pcm;rate=16000", source="realtimeInput")
        if s.heard:
            blob.provider_details["transcript"] = "".join(s.heard)
        s.inputs.append(Message(role="user", parts=[blob]))
    call.input_messages, s.inputs, s.audio_in, s.heard = s.inputs, [], [], []
    call.ids.update(s.ids)
    call.diagnostics.extend(s.pending)
    s.pending = []
    s.call, s.parts, s.audio_out, s.said = call, [], [], []


def _first_token(s: _Live, ts: float) -> None:
    if s.call is not None and s.call.timing.first_token is None:
        s.call.timing.first_token = ts


def _end(s: _Live, reason: str | None, ts: float | None) -> None:
    call = s.call
    assert call is not None
    parts = list(s.parts)
    if s.audio_out:
        parts.append(_audio([a for a, _ in s.audio_out], s.audio_out[0][1], source="modelTurn"))
    if s.said:
        parts.append(TextPart(content="".join(s.said), provider_details={"audio_transcript": True}))
    call.output_messages = [Message(role="assistant", parts=parts)] if parts else []
    call.timing.ended = ts
    if reason is not None:
        call.finish_reasons = [reason]
    call.complete = ts is not None and reason is None and not s.lost
    if ts is None:
        call.diagnostics.append(
            Diagnostic(
                code="live.turn_not_ended",
                message="the session has no turnComplete, toolCall or interrupted for this "
                "turn (new input came first, or the capture ends): it is incomplete",
                location=f"{s.exchange.id} websocket",
            )
        )
    if s.lost:
        call.diagnostics.append(
            Diagnostic(
                code="call.evidence_incomplete",
                message="the call's evidence is not whole: " + "; ".join(s.lost),
                location=f"{s.exchange.id} websocket",
            )
        )
        s.lost = []
    s.calls.append(call)
    s.call = None


def _audio(pieces: list[str], mime: str | None, *, source: str) -> BlobPart:
    """Audio sent as base64 pieces: one blob, its duration at the mime type's ``rate``."""
    return audio_blob(pieces, mime=mime, source=source, rate=_rate(mime))


def _rate(mime: str | None) -> int | None:
    for param in (mime or "").split(";")[1:]:
        key, _, value = param.strip().partition("=")
        if key == "rate" and value.isdigit():
            return int(value)
    return None


def _usage(raw: dict[str, Json]) -> Usage:
    """Live's ``usageMetadata`` names the output ``responseTokenCount``; read as
    ``candidatesTokenCount`` is in generateContent."""
    if "responseTokenCount" in raw and "candidatesTokenCount" not in raw:
        usage = usage_of({**raw, "candidatesTokenCount": raw["responseTokenCount"]})
        usage.raw = raw
        return usage
    return usage_of(raw)
