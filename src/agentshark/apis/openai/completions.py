"""The legacy OpenAI Completions API (``POST .../completions``) -> ``openai.completions`` calls.

From OpenAI's reference (https://platform.openai.com/docs/api-reference/completions) and the
servers that copy it (vLLM, Writer, Together...): ``prompt`` (a string, a list of strings, a
token array or a list of token arrays) in, ``choices[]`` of ``{index, text, finish_reason,
logprobs}`` out, as one JSON body or as SSE ``text_completion`` chunks ended by
``data: [DONE]``. Prompts become user messages; each choice's text an output message with its
finish reason (kept as sent; none sent stays None); usage, error.

Nothing a choice carries is dropped: its other fields (``logprobs``, vLLM's ``stop_reason``,
Writer's ``log_probs``...) are kept per choice index in ``extras["choices"]`` (a ``null``
says nothing and is not kept); in a stream the
``logprobs`` objects' lists (``tokens``, ``token_logprobs``, ``top_logprobs``,
``text_offset``) are concatenated chunk after chunk, as the text is, and any other field keeps
its last non-null value. The response's other top-level fields (``object``, ``created``,
``system_fingerprint``...) go to ``extras["response"]``.

Completeness follows the Chat family's rules: a whole body parsed, or a stream in which every
choice got a finish reason (or an error arrived), with no event cut.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import orjson

from agentshark.apis.model import Call, GenericPart, Json, Message, Part, TextPart
from agentshark.apis.openai.common import error_from_json, provider_name, usage_from
from agentshark.apis.openai.endpoints import anthropic, body_fields, server_by_schema, tokens
from agentshark.apis.openai.endpoints import finish as finish_body
from agentshark.apis.view import ExchangeView
from agentshark.errors import Diagnostic
from agentshark.framing.events import SseEvent

_CHOICE_FIELDS = frozenset(("index", "text", "finish_reason"))
_RESPONSE_FIELDS = frozenset(("id", "model", "choices", "usage", "error"))
_LOGPROB_LISTS = ("tokens", "token_logprobs", "top_logprobs", "text_offset")


class Completions:
    api = "openai.completions"

    def match(self, view: ExchangeView) -> float:
        path = view.path.lower()
        if view.method.upper() != "POST" or anthropic(view) or "/chat/" in path:
            return -1.0
        req = view.request_json
        request = isinstance(req, dict) and "prompt" in req and "messages" not in req
        body = view.response_json
        if isinstance(body, dict):
            choices = body.get("choices")
            response = body.get("object") == "text_completion" or (
                isinstance(choices, list)
                and any(isinstance(c, dict) and isinstance(c.get("text"), str) for c in choices)
            )
        else:
            response = body is None and b'"text_completion"' in view.response_body[:8192]
        on_path = path.endswith("/completions")
        if not (response or on_path):
            return 0.0
        return 0.4 * response + 0.3 * request + 0.25 * on_path

    def parse(self, view: ExchangeView, call: Call) -> None:
        call.operation = "text_completion"
        request = body_fields(view.request_json, ("prompt", "stream"), call)
        call.stream = request.get("stream") is True
        prompt = request.get("prompt")
        prompts = prompt if isinstance(prompt, list) and not tokens(prompt) else [prompt]
        for p in prompts:
            if p is not None:
                part: Part = (
                    TextPart(content=p)
                    if isinstance(p, str)
                    else GenericPart(type="tokens", fields={"value": p})
                )
                call.input_messages.append(Message(role="user", parts=[part]))
        if view.framing == "sse":
            call.stream = True
            _completion_stream(view, call)
        else:
            body = finish_body(view, call, view.response_json)
            response_id = body.get("id")
            call.response_id = response_id if isinstance(response_id, str) else None
            choices = body.get("choices")
            per_choice: dict[str, Json] = {}
            if isinstance(choices, list):
                texts = {_idx(c, i): c for i, c in enumerate(choices) if isinstance(c, dict)}
                for index in sorted(texts):
                    text, finish = texts[index].get("text"), texts[index].get("finish_reason")
                    call.output_messages.append(_text_message(text, finish))
                    rest = {
                        k: v
                        for k, v in texts[index].items()
                        if k not in _CHOICE_FIELDS and v is not None
                    }
                    if rest:
                        per_choice[str(index)] = rest
            _keep(call, body, per_choice)
        call.finish_reasons = [m.finish_reason for m in call.output_messages if m.finish_reason]
        if call.provider in (None, view.host):
            response = call.extras.get("response")
            found = server_by_schema(
                response if isinstance(response, dict) else {}, call.extras.get("choices")
            )
            call.provider = found or call.provider


def _idx(choice: dict[str, Json], position: int) -> int:
    index = choice.get("index")
    return index if isinstance(index, int) else position


def _text_message(text: Json, finish: Json) -> Message:
    parts: list[Part] = [TextPart(content=text)] if isinstance(text, str) and text else []
    return Message(
        role="assistant",
        parts=parts,
        finish_reason=finish if isinstance(finish, str) and finish else None,
    )


def _completion_stream(view: ExchangeView, call: Call) -> None:
    """The legacy Completions stream: SSE ``data`` chunks of ``text_completion`` objects,
    ended by ``data: [DONE]``."""
    texts: dict[int, list[str]] = {}
    finish: dict[int, str] = {}
    usage: Json = None
    end = _StreamEnd()
    extras: dict[str, dict[str, Json]] = {}
    response: dict[str, Json] = {}
    for chunk, item in _completion_chunks(view, call, end):
        if chunk.get("error") is not None and call.error is None:
            call.error = error_from_json(chunk, None, f"stream event {end.events - 1}")
        if call.response_id is None and isinstance(chunk.get("id"), str):
            call.response_id = chunk["id"]
        if call.response_model is None and isinstance(chunk.get("model"), str):
            call.response_model = chunk["model"]
        usage = chunk.get("usage") or usage
        response.update((k, v) for k, v in chunk.items() if k not in _RESPONSE_FIELDS)
        choices = chunk.get("choices")
        for i, choice in enumerate(choices if isinstance(choices, list) else ()):
            if not isinstance(choice, dict):
                continue
            index = _idx(choice, i)
            text = choice.get("text")
            if isinstance(text, str):
                texts.setdefault(index, []).append(text)
                if text and call.timing.first_token is None:
                    call.timing.first_token = item.ts
            if isinstance(choice.get("finish_reason"), str) and choice["finish_reason"]:
                finish[index] = choice["finish_reason"]
            _choice_extras(extras.setdefault(str(index), {}), choice)
    for index in sorted(texts.keys() | finish.keys()):
        call.output_messages.append(_text_message("".join(texts.get(index, ())), finish.get(index)))
    call.usage = usage_from(usage)
    call.provider = provider_name(view)
    _keep(call, response, {k: v for k, v in extras.items() if v})
    ended = call.error is not None or (bool(finish) and finish.keys() >= texts.keys())
    call.complete = view.exchange.complete and not end.cut and ended
    if view.exchange.complete and not end.done and not call.complete:
        call.diagnostics.append(
            Diagnostic(
                code="openai_completions.unfinished",
                message="the stream ended before every choice finished",
                location=f"{view.exchange.id} response",
            )
        )


@dataclass(slots=True)
class _StreamEnd:
    """How a Completions stream ended: ``[DONE]`` seen, the body cut inside an event."""

    done: bool = False
    cut: bool = False
    events: int = 0  # SSE events so far


def _completion_chunks(
    view: ExchangeView, call: Call, end: _StreamEnd
) -> Iterator[tuple[dict[str, Json], SseEvent]]:
    """The chunks before ``[DONE]``, with their events. Framing diagnostics go to the call,
    and so does every event skipped: one that is not a JSON object (as the Chat stream says),
    and the events after ``[DONE]``, counted in one diagnostic."""
    where = f"{view.exchange.id} response body"
    after_done = 0
    for item in view.events:
        if isinstance(item, Diagnostic):
            call.diagnostics.append(item)
            continue
        if not isinstance(item, SseEvent):
            continue  # comments
        n = end.events
        end.events += 1
        if not item.complete:
            end.cut = True  # the body ended inside this event: not dispatched, not used
            continue
        data = item.data.strip()
        if end.done:
            after_done += 1
            continue
        if data == "[DONE]":
            end.done = True
            continue
        try:
            chunk = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            problem = f"is not JSON ({exc})"
        else:
            if isinstance(chunk, dict):
                yield chunk, item
                continue
            problem = f"is JSON but not an object ({data[:40]!r})"
        call.diagnostics.append(
            Diagnostic(
                code="openai_completions.bad_chunk",
                message=f"stream event {n} {problem}: skipped",
                location=f"{where} byte {item.offset}",
            )
        )
    if after_done:
        call.diagnostics.append(
            Diagnostic(
                code="openai_completions.after_done",
                severity="info",
                message=f"{after_done} event(s) after [DONE] were ignored",
                location=where,
            )
        )


def _keep(call: Call, response: dict[str, Json], per_choice: dict[str, Json]) -> None:
    rest = {k: v for k, v in response.items() if k not in _RESPONSE_FIELDS}
    if rest:
        call.extras["response"] = rest
    if per_choice:
        call.extras["choices"] = per_choice


def _choice_extras(kept: dict[str, Json], choice: dict[str, Json]) -> None:
    """One stream chunk's choice fields beyond the text, folded into what was kept."""
    for key, value in choice.items():
        if key in _CHOICE_FIELDS or value is None:
            continue
        if key == "logprobs" and isinstance(value, dict):
            folded = kept.setdefault("logprobs", {})
            if isinstance(folded, dict):
                for name, item in value.items():
                    if name in _LOGPROB_LISTS and isinstance(item, list):
                        seen = folded.setdefault(name, [])
                        if isinstance(seen, list):
                            seen.extend(item)
                    else:
                        folded[name] = item
            continue
        kept[key] = value


COMPLETIONS = Completions()
