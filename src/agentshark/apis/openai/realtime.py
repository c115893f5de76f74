"""OpenAI Realtime over WebSocket: the model calls of one session, from its messages.

A Realtime session is one WebSocket (``/v1/realtime?model=…``) on which the client sends
events and the server answers with events (https://platform.openai.com/docs/api-reference/
realtime-client-events, …/realtime-server-events; GA names, and the beta names where they
differ: ``response.text.delta`` for ``response.output_text.delta``,
``response.audio[_transcript].delta`` for ``response.output_audio[_transcript].delta``,
``conversation.item.created`` for ``conversation.item.added``). A call is one response, from
the client's ``response.create`` (or the server's ``response.created`` when the server
started it on its own, as with voice activity detection) to ``response.done``:

* its configuration is the session's in force: ``session.created``/``session.updated`` (the
  server's word) over ``session.update`` (the client's request), with the response's own
  overrides from ``response.create``: instructions, tools, voice, output modalities;
* its input is what the client added since the previous response: ``conversation.item.create``
  items (messages, ``function_call_output`` results, earlier function calls), and committed
  input audio (``input_audio_buffer.append`` … ``commit``, or the server's
  ``input_audio_buffer.committed``) with its transcription when the server sent one;
* its output is assembled from the deltas, then taken from ``response.output_item.done``
  where that says more: text, audio (a blob part: its base64, its size and duration at the
  session's output rate), the audio's transcript, function calls with their ``call_id``;
* usage, status and id come from ``response.done``. Only ``completed`` is complete;
  ``cancelled``, ``incomplete`` and ``failed`` are reported as sent (``finish_reasons``), with
  ``status_details``; ``error`` events during a response are its error.

A call is complete only when ``response.done`` said ``completed`` and no message of either
direction between the previous response and this one's end was lost or undecodable (a gap
can hold an input item or a delta), no client message lost since the server last stated the
whole session (it may have changed the configuration), and the handshake was not cut
(:mod:`agentshark.apis.session_evidence`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import orjson

from agentshark.apis.model import (
    BlobPart,
    Call,
    CallError,
    GenericPart,
    Json,
    Message,
    Part,
    TextPart,
    Timing,
)
from agentshark.apis.openai.realtime_parts import (
    audio_part,
    content_parts,
    done_transcript,
    function_call,
    input_item,
    provider,
    str_or_none,
    url_model,
    usage_of,
)
from agentshark.apis.session_evidence import (
    CONFIG_LOST,
    UNKNOWN_YET,
    SessionItem,
    handshake_cut,
    loss_text,
    with_losses,
)
from agentshark.errors import Diagnostic
from agentshark.framing.websocket import TEXT, WsMessage
from agentshark.model import Exchange, WsLoss, WsRecord

__all__ = ["API", "RealtimeCalls", "is_realtime", "is_realtime_event", "session_calls"]

API = "openai.realtime"
_SERVER_FIRST = ("session.created", "transcription_session.created")


def is_realtime_event(event: dict[str, Json]) -> bool:
    """An event only a Realtime server sends (the first one of a session seen from its
    middle)."""
    kind = event.get("type")
    return isinstance(kind, str) and (kind in _SERVER or kind.startswith("response."))


def is_realtime(exchange: Exchange) -> bool:
    """A WebSocket session whose first server event is a Realtime ``session.created``, or
    whose handshake went to ``…/realtime``."""
    if exchange.messages is None:
        return False
    req = exchange.request
    if req is not None and urlsplit(req.url).path.rstrip("/").endswith("/realtime"):
        return True
    for record in exchange.messages:
        m = record.message
        if m.direction == 1 and m.opcode == TEXT:
            event = _event(m)
            return event is not None and event.get("type") in _SERVER_FIRST
    return False


@dataclass(slots=True)
class _Output:
    """One output item of a response being assembled."""

    kind: str  # "message", "function_call", or another item type
    item: dict[str, Json]
    text: list[str] = field(default_factory=list)
    transcript: list[str] = field(default_factory=list)
    audio: list[str] = field(default_factory=list)  # base64 pieces as sent
    arguments: list[str] = field(default_factory=list)
    done: dict[str, Json] | None = None  # response.output_item.done's item


@dataclass(slots=True)
class _Session:
    exchange: Exchange
    next_id: Callable[[], str]
    config: dict[str, Json] = field(default_factory=dict)  # in force
    inputs: list[Message] = field(default_factory=list)  # since the last response
    audio: list[str] = field(default_factory=list)  # the input buffer (base64 pieces)
    audio_items: dict[str, BlobPart] = field(default_factory=dict)  # item id -> input audio
    call: Call | None = None
    outputs: dict[str, _Output] = field(default_factory=dict)  # item id -> output
    lost: list[str] = field(default_factory=list)  # why the evidence since the last call is cut
    config_lost: str = ""  # why the configuration in force is uncertain (session_evidence)
    config_lost_at: int = -1  # the record whose arrival shows the lost message was sent
    at: int = -1  # the record being read
    later: list[str] = field(default_factory=list)  # client losses during a call: the next's
    pending_errors: list[Diagnostic] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)


def session_calls(exchange: Exchange, next_id: Callable[[], str]) -> list[Call]:
    """The calls (one per response) of a Realtime session's exchange, in order."""
    reader = RealtimeCalls(exchange, next_id)
    calls = [call for item in with_losses(exchange.messages or []) for call in reader.feed(item)]
    return calls + reader.close()


class RealtimeCalls:
    """A Realtime session read message by message (sans-I/O): each call comes out of
    :meth:`feed` with the message that makes it final, the one still open out of
    :meth:`close`. A call is final, and never changed after, at its ``response.done`` (or
    the ``response.create`` that cuts it short), except that a call whose input holds
    committed audio still waiting for its transcription, in a session that asked for one
    (``input_audio_transcription``, GA ``audio.input.transcription``), waits for it until
    the next response starts; a transcription later than that is said on the next call
    (``realtime.late_transcription``), not added. A call made while no message had a time
    (a message log) has no times.

    A :class:`~agentshark.model.WsLoss` fed counts a loss where it happened; the message
    that later carries the same ``ws.gap`` is then read as the whole message it is
    (:mod:`agentshark.apis.session_evidence`)."""

    __slots__ = ("_declared", "_given", "_s", "_timed")

    def __init__(
        self, exchange: Exchange, next_id: Callable[[], str], *, from_middle: bool = False
    ) -> None:
        """``from_middle``: the session's start is not in the capture (no handshake, no
        ``session.created``): its configuration and earlier items are unknown, and the first
        call's evidence is not whole."""
        self._s = _Session(exchange, next_id)
        self._given = 0  # calls of _s.calls given out
        self._timed = False  # a message had a time
        self._declared = [False, False]  # a WsLoss came, per direction, since its last message
        if from_middle:
            self._s.lost.append("the session started before the capture (no session.created)")
            self._s.config_lost = "the session's configuration was set before the capture"

    def feed(self, item: SessionItem) -> list[Call]:
        """The calls ``item`` (the next message read, either direction, or a loss) makes
        final."""
        s = self._s
        if isinstance(item, WsLoss):
            _lost_bytes(s, item)
            self._declared[item.direction] = True
            return []
        record, m = item, item.message
        s.at += 1
        self._timed = self._timed or bool(m.first_ts or m.last_ts)
        codes = {d.code for d in record.diagnostics} if record.diagnostics else _NONE
        counted = "ws.gap" in codes and self._declared[m.direction]
        self._declared[m.direction] = False
        whole = m.complete and not m.truncated and "ws.undecodable" not in codes
        if counted and s.config_lost_at == UNKNOWN_YET:
            s.config_lost_at = s.at  # the lost bytes were sent before this message
        if "ws.undecodable" in codes or ("ws.gap" in codes and not (counted and whole)):
            event = None
        elif m.opcode != TEXT:
            event = _NOT_AN_EVENT  # binary and control messages are not Realtime events
        else:
            event = _event(m) if whole else None
        if event is None or "ws.suspect" in codes:
            _lost(s, record, s.at)
        if event is not None:
            kind = event.get("type")
            handler = _CLIENT.get(kind) if m.direction == 0 else _SERVER.get(kind)
            if handler is not None:
                handler(s, event, m)
        return self._new()

    def close(self) -> list[Call]:
        """The session ended: the calls not given out yet."""
        s = self._s
        if s.call is not None:  # the session ended before response.done
            _finish(s, None, None)
        return self._new(final=True)

    def _new(self, *, final: bool = False) -> list[Call]:
        s = self._s
        calls = s.calls
        end = len(calls)
        if not final and end and s.call is None and _awaits_transcript(s, calls[-1]):
            end -= 1
        if end <= self._given:
            return []
        new = calls[self._given : end]
        self._given = end
        for call in new:
            for part in _input_audio(call):
                s.audio_items = {k: p for k, p in s.audio_items.items() if p is not part}
            if not self._timed:
                call.timing = Timing()  # a message log keeps no times: none is 0.0
        return new


def _input_audio(call: Call) -> list[BlobPart]:
    return [
        p
        for m in call.input_messages
        for p in m.parts
        if isinstance(p, BlobPart) and p.provider_details.get("source") == "input_audio_buffer"
    ]


def _awaits_transcript(s: _Session, call: Call) -> bool:
    """Does ``call`` hold input audio whose asked-for transcription has not come yet?"""
    audio = s.config.get("audio")
    given = audio.get("input") if isinstance(audio, dict) else None
    asked = s.config.get("input_audio_transcription") or (
        given.get("transcription") if isinstance(given, dict) else None
    )
    waiting = [p for p in s.audio_items.values() if "transcript" not in p.provider_details]
    return bool(asked) and any(p is w for p in _input_audio(call) for w in waiting)


_NOT_AN_EVENT: dict[str, Json] = {}  # a binary or control message: no handler takes it
_NONE: frozenset[str] = frozenset()


def _event(m: WsMessage) -> dict[str, Json] | None:
    if m.payload is None:
        return None
    try:
        value = orjson.loads(m.payload)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _suspect(record: WsRecord) -> bool:
    """A message whose neighbours may have been lost (``ws.suspect``: HTTP/2 lost frames of
    its stream at an unknown place)."""
    return any(d.code == "ws.suspect" for d in record.diagnostics)


def _lost_bytes(s: _Session, loss: WsLoss) -> None:
    """Bytes lost here (a :class:`WsLoss`): a client's while a call is open belong to the
    next call; a client's may have changed the configuration."""
    lost = s.later if loss.direction == 0 and s.call is not None else s.lost
    lost.append(loss_text(loss))
    if loss.direction == 0:
        s.config_lost = CONFIG_LOST.format(where="in a capture gap")
        s.config_lost_at = UNKNOWN_YET


def _lost(s: _Session, record: WsRecord, seen_at: int) -> None:
    """A lost message, known to have been sent before record ``seen_at`` arrived."""
    m = record.message
    who = "client" if m.direction == 0 else "server"
    why = f"a {who} message at byte {m.offset} is "
    if _suspect(record):
        why += "on a stream that lost frames around it"
    elif not m.complete:
        why += "cut by a capture gap"
    elif any(d.code == "ws.gap" for d in record.diagnostics):
        why = f"{who} bytes before the message at byte {m.offset} were lost in a capture gap"
    elif m.payload is not None and not m.truncated:
        why += "not a JSON object"
    else:
        why += "not decodable"
    lost = s.later if m.direction == 0 and s.call is not None else s.lost
    lost.append(why)
    if m.direction == 0 or _suspect(record):
        s.config_lost = CONFIG_LOST.format(where=f"at byte {m.offset}")
        if s.config_lost_at != UNKNOWN_YET:
            s.config_lost_at = max(s.config_lost_at, seen_at)


# -- client events ------------------------------------------------------------------------------


def _session_update(s: _Session, event: dict[str, Json], m: WsMessage) -> None:
    session = event.get("session")
    if isinstance(session, dict):
        s.config = {**s.config, **session}


def _item_create(s: _Session, event: dict[str, Json], m: WsMessage) -> None:
    item = event.get("item")
    if isinstance(item, dict):
        message = input_item(item)
        if message is not None:
            s.inputs.append(message)


def _audio_append(s: _Session, event: dict[str, Json], m: WsMessage) -> None:
    audio = event.get("audio")
    if isinstance(audio, str):
        s.audio.append(audio)


def _audio_clear(s: _Session, event: dict[str, Json], m: WsMessage) -> None:
    s.audio.clear()


def _response_create(s: _Session, event: dict[str, Json], m: WsMessage) -> None:
    if s.call is not None:
        _finish(s, None, None)
    response = event.get("response")
    _start(s, m.first_ts, response if isinstance(response, dict) else {})


# -- server events ------------------------------------------------------------------------------


def _session_created(s: _Session, event: dict[str, Json], m: WsMessage) -> None:
    """The server states the whole session in force: a lost update matters no more, if
    this came after the lost message was surely sent."""
    session = event.get("session")
    if isinstance(session, dict):
        s.config = {**s.config, **session}
        if s.at > s.config_lost_at:  # (never while the message that shows it is to come)
            s.config_lost = ""
        if isinstance(session.get("id"), str):
            s.config["id"] = session["id"]


def _committed(s: _Session, event: dict[str, Json], m: WsMessage) -> None:
    """The input buffer became a user item: the audio appended since the last commit."""
    part = audio_part(s.audio, s.config, source="input_audio_buffer")
    s.audio = []
    item_id = event.get("item_id")
    if isinstance(item_id, str):
        s.audio_items[item_id] = part
    s.inputs.append(Message(role="user", parts=[part]))


def _transcription(s: _Session, event: dict[str, Json], m: WsMessage) -> None:
    item_id, transcript = event.get("item_id"), event.get("transcript")
    part = s.audio_items.get(item_id) if isinstance(item_id, str) else None
    if part is not None and isinstance(transcript, str):
        part.provider_details["transcript"] = transcript
    elif isinstance(transcript, str) and isinstance(item_id, str):
        late = Diagnostic(
            code="realtime.late_transcription",
            message=f"the transcription of input audio item {item_id!r} came after the call "
            "holding it was final: it is not added to that call",
            location=f"{s.exchange.id} server websocket byte {m.offset}",
            severity="info",
        )
        (s.call.diagnostics if s.call is not None else s.pending_errors).append(late)


def _response_created(s: _Session, event: dict[str, Json], m: WsMessage) -> None:
    if s.call is None:  # started by the server (voice activity detection)
        _start(s, m.first_ts, {})
    call = s.call
    assert call is not None
    call.timing.first_byte = m.last_ts
    response = event.get("response")
    if isinstance(response, dict) and isinstance(response.get("id"), str):
        call.response_id = response["id"]


def _item_added(s: _Session, event: dict[str, Json], m: WsMessage) -> None:
    item = event.get("item")
    if s.call is None or not isinstance(item, dict):
        return
    key = item.get("id") if isinstance(item.get("id"), str) else f"output {len(s.outputs)}"
    s.outputs[str(key)] = _Output(kind=str(item.get("type")), item=item)


def _delta(attr: str) -> Callable[[_Session, dict[str, Json], WsMessage], None]:
    def handle(s: _Session, event: dict[str, Json], m: WsMessage) -> None:
        out = _output_of(s, event)
        delta = event.get("delta")
        if out is None or s.call is None or not isinstance(delta, str):
            return
        getattr(out, attr).append(delta)
        if s.call.timing.first_token is None:
            s.call.timing.first_token = m.last_ts

    return handle


def _item_done(s: _Session, event: dict[str, Json], m: WsMessage) -> None:
    item = event.get("item")
    if s.call is None or not isinstance(item, dict):
        return
    key = item.get("id")
    out = s.outputs.get(key) if isinstance(key, str) else None
    if out is None:
        out = s.outputs[str(key) if key else f"output {len(s.outputs)}"] = _Output(
            kind=str(item.get("type")), item=item
        )
    out.done = item


def _response_done(s: _Session, event: dict[str, Json], m: WsMessage) -> None:
    if s.call is None:
        _start(s, m.first_ts, {})
    response = event.get("response")
    _finish(s, response if isinstance(response, dict) else {}, m)


def _error(s: _Session, event: dict[str, Json], m: WsMessage) -> None:
    error = event.get("error")
    err = error if isinstance(error, dict) else {}
    if s.call is not None:
        s.call.error = CallError(
            status=None,
            type=str_or_none(err.get("type")),
            code=str_or_none(err.get("code")),
            message=str_or_none(err.get("message")),
            source=f"error event at byte {m.offset}",
        )
        return
    s.pending_errors.append(
        Diagnostic(
            code="realtime.error_event",
            message=f"the server sent an error outside a response ({str_or_none(err.get('type'))}: "
            f"{str_or_none(err.get('message'))}), answering the client's event "
            f"{err.get('event_id')!r}",
            location=f"{s.exchange.id} server websocket byte {m.offset}",
            severity="info",
        )
    )


_Handler = Callable[[_Session, dict[str, Json], WsMessage], None]
_CLIENT: dict[Json, _Handler] = {
    "session.update": _session_update,
    "conversation.item.create": _item_create,
    "input_audio_buffer.append": _audio_append,
    "input_audio_buffer.clear": _audio_clear,
    "response.create": _response_create,
}
_SERVER: dict[Json, _Handler] = {
    "session.created": _session_created,
    "session.updated": _session_created,
    "input_audio_buffer.committed": _committed,
    "conversation.item.input_audio_transcription.completed": _transcription,
    "response.created": _response_created,
    "response.output_item.added": _item_added,
    "response.output_item.done": _item_done,
    "response.output_text.delta": _delta("text"),
    "response.text.delta": _delta("text"),
    "response.output_audio.delta": _delta("audio"),
    "response.audio.delta": _delta("audio"),
    "response.output_audio_transcript.delta": _delta("transcript"),
    "response.audio_transcript.delta": _delta("transcript"),
    "response.function_call_arguments.delta": _delta("arguments"),
    "response.done": _response_done,
    "error": _error,
}


# -- calls --------------------------------------------------------------------------------------


def _start(s: _Session, ts: float, overrides: dict[str, Json]) -> None:
    ex = s.exchange
    s.lost.extend(s.later)
    s.later = []
    for why in (s.config_lost, handshake_cut(ex)):
        if why and why not in s.lost:
            s.lost.append(why)
    call = Call(id=s.next_id(), exchange_id=ex.id, api=API, provider=provider(ex), stream=True)
    call.operation = "chat"  # a generation on the session's conversation
    call.timing = Timing(started=ts)
    config = {**s.config, **overrides}
    model = config.get("model")
    call.request_model = model if isinstance(model, str) else url_model(ex)
    instructions = config.get("instructions")
    if isinstance(instructions, str):
        call.system_instructions = [TextPart(content=instructions)]
    tools = config.get("tools")
    if isinstance(tools, list):
        call.tool_definitions = list(tools)
    for key in ("voice", "output_modalities", "modalities", "temperature", "tool_choice"):
        if key in config:
            call.request_params[key] = config[key]
    if isinstance(s.config.get("id"), str):
        call.ids["realtime_session_id"] = s.config["id"]
        call.id_sources["realtime_session_id"] = "session.created session.id"
    call.input_messages = s.inputs
    call.diagnostics.extend(s.pending_errors)
    s.inputs, s.pending_errors = [], []
    s.call, s.outputs = call, {}


def _finish(s: _Session, response: dict[str, Json] | None, m: WsMessage | None) -> None:
    call = s.call
    assert call is not None
    call.output_messages = [msg for out in s.outputs.values() for msg in _output_messages(out, s)]
    if response is None or m is None:
        call.diagnostics.append(
            Diagnostic(
                code="realtime.no_response_done",
                message="the session has no response.done for this response (a new "
                "response.create came first, or the capture ends): it is incomplete",
                location=f"{s.exchange.id} websocket",
            )
        )
    else:
        call.timing.ended = m.last_ts
        status = response.get("status")
        if isinstance(status, str):
            call.finish_reasons = [status]
        if isinstance(response.get("id"), str):
            call.response_id = response["id"]
        details = response.get("status_details")
        if details is not None:
            call.extras["status_details"] = details
        call.usage = usage_of(response.get("usage"))
        call.complete = status == "completed" and not s.lost and call.error is None
        if status == "failed" and call.error is None and isinstance(details, dict):
            err = details.get("error")
            err = err if isinstance(err, dict) else {}
            call.error = CallError(
                status=None,
                type=str_or_none(err.get("type")),
                code=str_or_none(err.get("code")),
                message=str_or_none(err.get("message")),
                source="response.done status_details",
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


def _output_of(s: _Session, event: dict[str, Json]) -> _Output | None:
    item_id = event.get("item_id")
    if isinstance(item_id, str) and item_id in s.outputs:
        return s.outputs[item_id]
    if s.call is None:
        return None
    key = str(item_id) if item_id is not None else f"output {len(s.outputs)}"
    out = s.outputs[key] = _Output(kind="message", item={})
    return out


def _output_messages(out: _Output, s: _Session) -> list[Message]:
    item = out.done or out.item
    if out.kind == "function_call" or item.get("type") == "function_call":
        raw = str_or_none(item.get("arguments")) if out.done else None
        text = raw if raw else "".join(out.arguments)
        return [Message(role="assistant", parts=[function_call(item, text)])]
    if out.kind != "message" and item.get("type") not in (None, "message"):
        return [
            Message(role="assistant", parts=[GenericPart(type=str(item.get("type")), fields=item)])
        ]
    parts: list[Part] = []
    if out.text:
        parts.append(TextPart(content="".join(out.text)))
    if out.audio:
        parts.append(audio_part(out.audio, s.config, source="output_audio"))
    transcript = "".join(out.transcript) or done_transcript(out.done)
    if transcript:
        parts.append(TextPart(content=transcript, provider_details={"audio_transcript": True}))
    if not parts and out.done:
        parts = content_parts(out.done.get("content"))
    role = item.get("role")
    return [Message(role=role if isinstance(role, str) else "assistant", parts=parts)]
