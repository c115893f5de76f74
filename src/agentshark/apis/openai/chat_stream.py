"""A Chat Completions stream (``chat.completion.chunk`` SSE events) -> output messages.

One pass over the events: each choice's deltas go to a :class:`PartsAccumulator` of its own
(text and reasoning concatenated, tool calls keyed by their ``index``: name first, arguments
concatenated and parsed once, at the end), ``[DONE]`` ends the stream, the last ``usage``
wins (Groq's ``x_groq.usage`` when there is no other), an ``error`` in a chunk (OpenRouter)
or an ``event: error`` (Groq) becomes the call's error with its event number. Comments are
keep-alives and ignored; an event the body ended inside is never used.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import orjson

from agentshark.apis.accumulate import PartsAccumulator
from agentshark.apis.model import (
    BlobPart,
    Call,
    GenericPart,
    Json,
    Message,
    ReasoningPart,
    TextPart,
    tool_name,
)
from agentshark.apis.openai.chat_messages import (
    CHOICE_FIELDS,
    REASONING_FIELDS,
    texts,
    usage_raw,
)
from agentshark.apis.openai.common import error_from_json, usage_from
from agentshark.apis.view import ExchangeView
from agentshark.errors import Diagnostic
from agentshark.framing.events import SseEvent

RESPONSE_FIELDS = frozenset(("id", "model", "choices", "usage", "error"))
_CHUNK_NOISE = frozenset(("obfuscation", "p"))  # per-chunk random padding (OpenAI, Mistral)
_NOT_EXTRAS = RESPONSE_FIELDS | _CHUNK_NOISE
_TEXT = "text"


@dataclass(slots=True)
class _Choice:
    parts: PartsAccumulator
    finish_reason: str | None = None
    role: str | None = None
    refusal: list[str] = field(default_factory=list)
    annotations: list[Json] = field(default_factory=list)
    reasoning_details: list[Json] = field(default_factory=list)
    audio: dict[str, Json] = field(default_factory=dict)
    logprobs: dict[str, list[Json]] = field(default_factory=dict)
    extras: dict[str, Json] = field(default_factory=dict)
    opened: set[str] = field(default_factory=set)  # reasoning fields seen
    tool_keys: dict[Json, tuple[Json, ...]] = field(default_factory=dict)  # index -> open key
    tool_ids: dict[tuple[Json, ...], str] = field(default_factory=dict)  # key -> call id
    last_tool: tuple[Json, ...] | None = None

    def message(self) -> Message:
        parts = self.parts.parts()
        if self.reasoning_details:
            target = next((p for p in parts if isinstance(p, ReasoningPart)), None)
            if target is None:
                target = ReasoningPart(content="")
                parts.insert(0, target)
            target.provider_details["reasoning_details"] = self.reasoning_details
        if self.annotations:
            text = next((p for p in parts if isinstance(p, TextPart)), None)
            if text is not None:
                text.provider_details["annotations"] = self.annotations
            else:
                self.extras["annotations"] = self.annotations
        if self.refusal:
            parts.append(GenericPart(type="refusal", fields={"refusal": "".join(self.refusal)}))
        if self.audio:
            data = self.audio.pop("data", "")
            parts.append(
                BlobPart(
                    mime_type=None,
                    modality="audio",
                    content=data if isinstance(data, str) else "",
                    provider_details=self.audio,
                )
            )
        if self.logprobs:
            self.extras["logprobs"] = self.logprobs
        return Message(role=self.role or "assistant", parts=parts, finish_reason=self.finish_reason)


def parse_stream(view: ExchangeView, call: Call, *, complete: bool) -> dict[str, Json]:
    """Fold the chunks into output messages, in one pass; returns the chunks' other
    top-level fields (last value wins)."""
    where = f"{view.exchange.id} response body"
    choices: dict[int, _Choice] = {}
    top: dict[str, Json] = {}
    usage: Json = None
    done = cut = after_done = False
    n = -1
    for item in view.events:
        if type(item) is not SseEvent:
            if isinstance(item, Diagnostic):
                call.diagnostics.append(item)
            continue  # comments: keep-alives such as ": OPENROUTER PROCESSING"
        n += 1
        if not item.complete:
            cut = True  # the body ended inside this event: not dispatched, not used
            continue
        data = item.data.strip()
        if done:
            after_done = True
            continue
        if data == "[DONE]":
            done = True
            continue
        try:
            chunk = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            call.diagnostics.append(
                Diagnostic(
                    code="openai_chat.bad_chunk",
                    message=f"stream event {n} is not JSON: {exc}",
                    location=f"{where} byte {item.offset}",
                )
            )
            continue
        if not isinstance(chunk, dict):
            call.diagnostics.append(
                Diagnostic(
                    code="openai_chat.bad_chunk",
                    message=f"stream event {n} is JSON but not an object ({data[:40]!r}): skipped",
                    location=f"{where} byte {item.offset}",
                )
            )
            continue
        if chunk.get("error") is not None or item.event == "error":
            found = error_from_json(chunk, None, f"stream event {n}")
            if found is not None and call.error is None:
                call.error = found
                call.extras["error"] = chunk.get("error", chunk)
        if call.response_id is None and isinstance(chunk.get("id"), str) and chunk["id"]:
            call.response_id = chunk["id"]
        if call.response_model is None and isinstance(chunk.get("model"), str) and chunk["model"]:
            call.response_model = chunk["model"]
        chunk_usage = usage_raw(chunk) if "x_groq" in chunk else chunk.get("usage")
        if chunk_usage is not None:
            usage = chunk_usage
        chunk_choices = chunk.get("choices")
        if not isinstance(chunk_choices, list):
            chunk_choices = ()
        for position, choice in enumerate(chunk_choices):
            if not isinstance(choice, dict):
                continue
            index = choice.get("index")
            if not isinstance(index, int):
                index = position
            state = choices.get(index)
            if state is None:
                state = choices[index] = _Choice(
                    PartsAccumulator(location=f"{where} choice {index}")
                )
            if _delta(state, choice) and call.timing.first_token is None:
                call.timing.first_token = item.ts
        _keep_top(top, chunk)
    for index in sorted(choices):
        state = choices[index]
        call.output_messages.append(state.message())
        call.diagnostics.extend(state.parts.diagnostics)
        if state.extras:
            call.extras.setdefault("choices", {})[str(index)] = state.extras
    call.usage = usage_from(usage)
    if top:
        call.extras["response"] = top
    if after_done:
        call.diagnostics.append(
            Diagnostic(
                code="openai_chat.after_done",
                severity="info",
                message="events after [DONE] were ignored",
                location=where,
            )
        )
    finished = bool(choices) and all(c.finish_reason for c in choices.values())
    ended = call.error is not None or finished
    call.complete = complete and not cut and ended
    if done and not ended:
        unfinished = [str(i) for i, c in sorted(choices.items()) if not c.finish_reason]
        call.diagnostics.append(
            Diagnostic(
                code="openai_chat.no_finish_reason",
                message="[DONE] arrived but choice "
                f"{', '.join(unfinished) or '(none)'} never got a "
                "finish_reason: the call is not complete",
                location=where,
            )
        )
    if call.complete and not done and call.error is None:
        call.diagnostics.append(
            Diagnostic(
                code="openai_chat.no_done",
                severity="info",
                message="the stream ended without [DONE] after every choice finished",
                location=where,
            )
        )
    return top


def _keep_top(top: dict[str, Json], chunk: dict[str, Json]) -> None:
    """The chunk's other top-level fields into ``top`` (few: object, created,
    system_fingerprint...), the last non-null value winning.

    Fields keep the order in which the stream first sent them (deterministic output)."""
    top.update(
        (key, value) for key, value in chunk.items() if value is not None and key not in _NOT_EXTRAS
    )


def _delta(state: _Choice, choice: dict[str, Json]) -> bool:
    """Fold one choice delta into ``state``; True when it carried generated content."""
    token = False
    delta = choice.get("delta")
    parts = state.parts
    if isinstance(delta, dict):
        for key, value in delta.items():
            if value is None:
                continue
            if key == "content":
                if isinstance(value, str):
                    if value:
                        parts.text(_TEXT, value)
                        token = True
                elif isinstance(value, list):  # Mistral: a list of text/thinking chunks
                    token = _content_chunks(parts, value) or token
            elif key in REASONING_FIELDS:
                if isinstance(value, str) and value:
                    if key not in state.opened:
                        state.opened.add(key)
                        parts.details(key, "reasoning", field=key)
                    parts.reasoning(key, value)
                    token = True
            elif key == "tool_calls":
                if isinstance(value, list):
                    for position, tc in enumerate(value):
                        _tool_delta(state, position, tc)
                    token = token or bool(value)
            elif key == "function_call":
                if isinstance(value, dict):
                    _tool_delta(state, 0, {"function": value, "index": "function_call"})
                    parts.tool_call(("tool", "function_call"), legacy="function_call")
                    token = True
            elif key == "refusal":
                if isinstance(value, str) and value:
                    state.refusal.append(value)
                    token = True
            elif key == "role":
                state.role = value if isinstance(value, str) else state.role
            elif key == "annotations" and isinstance(value, list):
                state.annotations.extend(value)
            elif key == "reasoning_details" and isinstance(value, list):
                state.reasoning_details.extend(value)
            elif key == "audio" and isinstance(value, dict):
                token = _audio_delta(state.audio, value) or token
            else:
                state.extras[key] = value
    finish = choice.get("finish_reason")
    if isinstance(finish, str) and finish:
        state.finish_reason = finish
    for key, value in choice.items():
        if key in CHOICE_FIELDS or value is None:
            continue  # "message": Writer echoes the delta there
        if key == "logprobs" and isinstance(value, dict):
            for name, items in value.items():
                if isinstance(items, list):
                    state.logprobs.setdefault(name, []).extend(items)
        else:
            state.extras[key] = value
    return token


def _content_chunks(parts: PartsAccumulator, chunks: list[Json]) -> bool:
    token = False
    for chunk in chunks:
        if not isinstance(chunk, dict):
            continue
        if chunk.get("type") == "text" and isinstance(chunk.get("text"), str):
            parts.text(_TEXT, chunk["text"])
            token = True
        elif chunk.get("type") == "thinking" and isinstance(chunk.get("thinking"), list):
            parts.reasoning("thinking", texts(chunk["thinking"]))
            token = True
    return token


def _tool_delta(state: _Choice, position: int, tc: Json) -> None:
    """One ``delta.tool_calls[]`` entry: name first, arguments concatenated.

    Keyed by its ``index``; a new id at an index that already holds another call opens a
    new call (servers that number every call 0). Without an index: by its id, and a
    fragment without either extends the call opened last (else its place in the list).
    """
    if not isinstance(tc, dict):
        return
    index, call_id = tc.get("index"), tc.get("id")
    if not isinstance(index, int | str):
        index = None  # absent, or not a usable key
    call_id = call_id if isinstance(call_id, str) and call_id else None
    if index is not None:
        key = state.tool_keys.get(index) or ("tool", index)
        if call_id is not None and state.tool_ids.get(key, call_id) != call_id:
            key = ("tool", index, call_id)
        state.tool_keys[index] = key
    elif call_id is not None:
        key = ("tool", "id", call_id)
    else:
        key = state.last_tool or ("tool", position)
    state.last_tool = key
    if call_id is not None:
        state.tool_ids.setdefault(key, call_id)
    fn = tc.get("function")
    fn = fn if isinstance(fn, dict) else {}
    name = fn.get("name")
    details = {
        k: v
        for k, v in tc.items()
        if k not in ("index", "id", "type", "function") and v is not None
    }
    kind = tc.get("type")
    if isinstance(kind, str) and kind != "function":
        details["type"] = kind
    state.parts.tool_call(key, id=call_id, name=tool_name(name, details), **details)
    args = fn.get("arguments")
    if isinstance(args, str):
        state.parts.arguments(key, args)


def _audio_delta(audio: dict[str, Json], delta: dict[str, Json]) -> bool:
    token = False
    for key, value in delta.items():
        if key in ("data", "transcript") and isinstance(value, str):
            audio[key] = str(audio.get(key, "")) + value
            token = token or bool(value)
        elif value is not None:
            audio[key] = value
    return token
